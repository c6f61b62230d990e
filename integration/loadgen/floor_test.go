package loadgen

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkraft/zkraft/wire"
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

// BenchmarkConnectFloor is the most connects a second a session storm can
// see on this machine: the storm's 64 dialers (dialMany, as Storm dials
// its sessions) against a server that answers the handshake and nothing
// else, with no session behind it. Its connects/s is what the storm
// scenario would show for a server that cost nothing; here the server
// runs in the dialers' process, where Storm has the server in another.
//
//	go test -run '^$' -bench ConnectFloor -benchtime 5x ./integration/loadgen
func BenchmarkConnectFloor(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			addr := handshakeServer(b)
			var took time.Duration
			for b.Loop() {
				start := time.Now()
				sessions, err := dialMany(addr, n, 30*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
				closeAll(sessions)
			}
			b.ReportMetric(float64(n*b.N)/took.Seconds(), "connects/s")
		})
	}
}

// handshakeServer serves ZooKeeper's handshake on a loopback port until
// the benchmark ends: each connection gets a session id of its own, and
// every request after it an empty reply (closeSession one, then the
// connection closes).
func handshakeServer(b *testing.B) string {
	lc := net.ListenConfig{KeepAlive: -1} // as little as a server can do
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	var ids atomic.Int64
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveHandshake(c, ids.Add(1)) })
		}
	})
	return ln.Addr().String()
}

func serveHandshake(c net.Conn, id int64) {
	defer c.Close()
	fr := wire.NewFrameReader(c, 1<<20)
	if _, err := fr.Next(); err != nil {
		return
	}
	b, start := wire.StartFrame(nil)
	resp := wire.ConnectResponse{TimeOut: 30000, SessionID: id, Passwd: make([]byte, 16)}
	if _, err := c.Write(wire.EndFrame(resp.Append(b), start)); err != nil {
		return
	}
	for {
		frame, err := fr.Next()
		if err != nil {
			return
		}
		var h wire.RequestHeader
		if _, err := h.Decode(frame); err != nil {
			return
		}
		b, start := wire.StartFrame(nil)
		if _, err := c.Write(wire.EndFrame(wire.ReplyHeader{Xid: h.Xid}.Append(b), start)); err != nil ||
			h.OpCode == wire.OpCloseSession {
			return
		}
	}
}
