package integration

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server"
)

// BenchmarkStartToFirstCreate measures what an embedding test waits for: an
// in-process server from New to a go-zookeeper client's first successful
// create. It reports the median as ms/start (ns/op is the mean, which
// includes the occasional slow start).
func BenchmarkStartToFirstCreate(b *testing.B) {
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		c, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogInfo(false))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Create("/first", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		b.StopTimer()
		c.Close()
		srv.Close()
		b.StartTimer()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms/start")
}

// BenchmarkLoad runs the load of cmd/zkload (8 sessions, 8 requests in flight
// each, 1 KiB data for setData and getData) against an in-process zkraft
// and, when ZKRAFT_REALZK names one, a reference ZooKeeper, reporting ops/s
// and latency percentiles. Each sub-benchmark runs for a fixed time, so run
// it with -benchtime=1x.
func BenchmarkLoad(b *testing.B) {
	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0", MaxClientCnxns: -1})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	targets := [][2]string{{"zkraft", srv.ConnectString()}}
	if ref := os.Getenv("ZKRAFT_REALZK"); ref != "" {
		targets = append(targets, [2]string{"realzk", ref})
	}
	for _, op := range []loadgen.Op{loadgen.OpCreate, loadgen.OpSetData, loadgen.OpGetData} {
		for _, tg := range targets {
			b.Run(string(op)+"/"+tg[0], func(b *testing.B) {
				cfg := loadgen.Config{Addr: tg[1], Op: op, Sessions: 8, InFlight: 8,
					Duration: 3 * time.Second, Warmup: time.Second, Size: 1024}
				for b.Loop() {
					res := mustMeasure(b, cfg)
					b.ReportMetric(res.OpsPerSec(), "ops/s")
					b.ReportMetric(float64(res.Percentile(0.5).Microseconds()), "p50-µs")
					b.ReportMetric(float64(res.Percentile(0.99).Microseconds()), "p99-µs")
				}
			})
		}
	}
}

func mustMeasure(b *testing.B, cfg loadgen.Config) *loadgen.Result {
	b.Helper()
	root, err := loadgen.NewRoot(cfg.Addr)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Root = root
	res, err := loadgen.Run(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := loadgen.RemoveRoot(cfg.Addr, root); err != nil {
		b.Fatal(err)
	}
	return res
}
