package integration

import (
	"fmt"
	"os"
	"path"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server"
)

// BenchmarkDurableRestart fills a durable standalone server (zkload -fill's
// tree: 16-character names, 32 bytes of data), closes it and starts it
// again on the same data dir, with each log store. It reports the restart
// from server.New to a client's read of the last node created (restart-s),
// the peak heap in use while restarting (sampled every 5 ms) and the
// process's peak resident memory during it (VmHWM, reset first), and the
// live heap once restarted. Filling a million takes about a minute; run one
// size at a time with -benchtime 1x:
//
//	go test -run '^$' -bench 'DurableRestart/wal/1000x1000' -benchtime 1x ./integration
func BenchmarkDurableRestart(b *testing.B) {
	for _, store := range []string{server.LogStoreBolt, server.LogStoreWAL} {
		for _, size := range [][2]int{{100, 1000}, {1000, 1000}} {
			b.Run(fmt.Sprintf("%s/%dx%d", store, size[0], size[1]), func(b *testing.B) {
				for range b.N {
					benchRestart(b, store, size[0], size[1])
				}
			})
		}
	}
}

func benchRestart(b *testing.B, store string, parents, children int) {
	cfg := server.Config{ClientPortAddress: "127.0.0.1:0", MaxClientCnxns: -1, DataDir: b.TempDir(), LogStore: store}
	srv := startServer(b, cfg)
	root, err := loadgen.NewRoot(srv.ConnectString())
	if err != nil {
		b.Fatal(err)
	}
	f := loadgen.Fill{Addr: srv.ConnectString(), Root: root, Parents: parents, Children: children, NameLen: 16,
		DataLen: 32, Sessions: 8, InFlight: 64}
	fillTime, err := f.Run()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(f.Nodes())/fillTime.Seconds(), "fill-creates/s")
	last := f.LastPath()
	srv.Close()
	srv = nil
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)

	var peak uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	start := time.Now()
	srv = startServer(b, cfg)
	defer srv.Close()
	c, _, err := zk.Connect([]string{srv.ConnectString()}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Get(last); err != nil {
		b.Fatalf("read %s after the restart: %v", last, err)
	}
	restart := time.Since(start)
	if kids, _, err := c.Children(path.Dir(last)); err != nil || len(kids) != children {
		b.Fatalf("%s has %d children after the restart (%v), want %d", path.Dir(last), len(kids), err, children)
	}
	close(stop)
	sampler.Wait()
	b.ReportMetric(restart.Seconds(), "restart-s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MiB")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-heap-MiB")
}

// startServer starts a server the caller closes (a durable one is closed
// and started again on its data dir, which t.Cleanup would come too late for).
func startServer(tb testing.TB, cfg server.Config) *server.Server {
	tb.Helper()
	srv, err := server.New(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

// resetPeakRSS resets this process's VmHWM to its current resident set.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak resident set: %v", err)
	}
}

// peakRSS reads VmHWM, in bytes.
func peakRSS(b *testing.B) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
