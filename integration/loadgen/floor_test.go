package loadgen

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// BenchmarkFanOutFloor is the least a fan-out can cost on this machine:
// no server, just a 48-byte frame written to each of n loopback sockets by
// two goroutines, with a goroutine per socket reading it, as FanOut's
// watchers do. Its last-ms is what the fan-out scenario's last
// notification would be if a server did nothing but the writes (here in
// one process, where FanOut has the server and the client in two).
//
//	go test -run '^$' -bench FanOutFloor -benchtime 10x ./integration/loadgen
func BenchmarkFanOutFloor(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			clients, servers := make([]net.Conn, n), make([]net.Conn, n)
			for i := range n {
				if clients[i], err = net.Dial("tcp", ln.Addr().String()); err != nil {
					b.Fatal(err)
				}
				if servers[i], err = ln.Accept(); err != nil {
					b.Fatal(err)
				}
			}
			defer closeConns(clients)
			defer closeConns(servers)
			frame := make([]byte, 48)
			var last time.Duration
			for b.Loop() {
				var ready, read, wrote sync.WaitGroup
				errs := make(chan error, n)
				ready.Add(n)
				for _, c := range clients {
					read.Go(func() {
						buf := make([]byte, 64)
						ready.Done()
						if _, err := c.Read(buf); err != nil {
							errs <- err
						}
					})
				}
				ready.Wait()
				start := time.Now()
				for half := range 2 {
					wrote.Go(func() {
						for _, c := range servers[half*n/2 : (half+1)*n/2] {
							if _, err := c.Write(frame); err != nil {
								errs <- err
							}
						}
					})
				}
				wrote.Wait()
				read.Wait()
				last += time.Since(start)
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(last.Microseconds())/1000/float64(b.N), "last-ms")
		})
	}
}

func closeConns(cs []net.Conn) {
	for _, c := range cs {
		c.Close()
	}
}
