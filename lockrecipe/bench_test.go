package lockrecipe_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
)

// BenchmarkHandoffs measures how fast a Mutex passes from holder to holder
// with 1, 10 and 100 contenders, each in its own session, looping on Lock
// and Unlock with nothing in between; against an embedded zkraft and, when
// ZKRAFT_REALZK names one, a real ZooKeeper, with the same code in the
// same run. It reports handoffs/s and the p50/p99 of the time Lock waits.
// With one contender a handoff is an uncontended Lock and Unlock.
//
//	ZKRAFT_REALZK=127.0.0.1:12181 go test -run '^$' -bench Handoffs -benchtime 3s ./lockrecipe
func BenchmarkHandoffs(b *testing.B) {
	targets := [][2]string{{"zkraft", servertest.NewServer(b).ConnectString()}}
	if ref := os.Getenv("ZKRAFT_REALZK"); ref != "" {
		targets = append(targets, [2]string{"realzk", ref})
	}
	for _, tg := range targets {
		for _, n := range []int{1, 10, 100} {
			// Connected once per sub-benchmark, for all its rounds (the
			// sub-benchmark's own cleanups run after each round).
			var conns []*zk.Conn
			parent := b
			b.Run(fmt.Sprintf("%s/contenders=%d", tg[0], n), func(b *testing.B) {
				for len(conns) < n {
					conns = append(conns, newSession(parent, tg[1]).Conn)
				}
				benchHandoffs(b, conns)
			})
			for _, c := range conns {
				c.Close()
			}
		}
	}
}

func benchHandoffs(b *testing.B, conns []*zk.Conn) {
	path := uniquePath(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var tickets atomic.Int64
	waits := make([][]time.Duration, len(conns))
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, conn := range conns {
		m := lockrecipe.NewMutex(conn, path)
		wg.Go(func() {
			for tickets.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := m.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				waits[i] = append(waits[i], time.Since(t0))
				if err := m.Unlock(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(waits...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
	b.ReportMetric(quantile(all, 0.50).Seconds()*1000, "p50-wait-ms")
	b.ReportMetric(quantile(all, 0.99).Seconds()*1000, "p99-wait-ms")
}

// quantile returns the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}
