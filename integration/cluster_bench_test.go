package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// quiet keeps benchmark clusters from logging every election to the test output.
var quiet = servertest.WithConfig(func(c *server.Config) { c.Logger = slog.New(slog.DiscardHandler) })

// BenchmarkClusterReady measures an in-process 3-member cluster (servertest,
// 100ms Raft timeouts, in memory) from nothing to a go-zookeeper client's
// first successful create through the connect string. It reports the
// median as median-ms/ready.
func BenchmarkClusterReady(b *testing.B) {
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		c := servertest.NewCluster(b, 3, quiet)
		conn, _, err := zk.Connect(strings.Split(c.ConnectString(), ","), 5*time.Second, zk.WithLogInfo(false))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Create("/first", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		b.StopTimer()
		conn.Close()
		c.Close()
		b.StartTimer()
	}
	reportMedian(b, times, "median-ms/ready")
}

// BenchmarkClusterFailover measures, under a write load from 6 clients
// spread over the members, the time from killing the leader to the first
// write that succeeds after it; the killed member then restarts for the
// next round. In memory and durable.
func BenchmarkClusterFailover(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name, opts := "memory", []servertest.Option{quiet}
		if durable {
			name, opts = "durable", append(opts, servertest.WithDurable())
		}
		b.Run(name, func(b *testing.B) {
			c := servertest.NewCluster(b, 3, opts...)
			load := startWriteLoad(b, c.ConnectString(), 6)
			defer load.stop()
			var times []time.Duration
			for b.Loop() {
				times = append(times, killLeaderAndTime(b, c, load))
			}
			reportMedian(b, times, "median-ms/failover")
			b.ReportMetric(float64(slices.Max(times).Microseconds())/1000, "max-ms/failover")
		})
	}
}

func killLeaderAndTime(b *testing.B, c *servertest.Cluster, load *writeLoad) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.WaitForLeader(ctx)
	if err != nil {
		b.Fatal(err)
	}
	load.waitProgress(b) // the load runs before the kill
	killed := time.Now()
	c.Kill(leader)
	next := load.nextSuccessAfter(b, killed)
	b.StopTimer()
	c.Restart(leader)
	if _, err := c.WaitForLeader(ctx); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return next.Sub(killed)
}

// writeLoad is clients creating nodes as fast as they can, retrying after
// connection losses, and noting when each write succeeded.
type writeLoad struct {
	mu        sync.Mutex // guards successes
	successes []write
	count     atomic.Int64
	done      chan struct{}
	wg        sync.WaitGroup
}

func startWriteLoad(b *testing.B, connect string, clients int) *writeLoad {
	b.Helper()
	l := &writeLoad{done: make(chan struct{})}
	servers := strings.Split(connect, ",")
	for i := range clients {
		// Half the clients know every member, half only one follower-or-not.
		list := servers
		if i%2 == 1 {
			list = []string{servers[i%len(servers)]}
		}
		conn, _, err := zk.Connect(list, 2*time.Second, zk.WithLogInfo(false))
		if err != nil {
			b.Fatal(err)
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer conn.Close()
			for n := 0; ; n++ {
				select {
				case <-l.done:
					return
				default:
				}
				started := time.Now()
				_, err := conn.Create(fmt.Sprintf("/load-%d-%d", i, n), nil, 0, zk.WorldACL(zk.PermAll))
				if err == nil || errors.Is(err, zk.ErrNodeExists) {
					l.mu.Lock()
					l.successes = append(l.successes, write{started, time.Now()})
					l.mu.Unlock()
					l.count.Add(1)
				}
			}
		}()
	}
	return l
}

func (l *writeLoad) stop() {
	close(l.done)
	l.wg.Wait()
}

// waitProgress waits until the load has made some progress.
func (l *writeLoad) waitProgress(b *testing.B) {
	b.Helper()
	start := l.count.Load()
	deadline := time.Now().Add(30 * time.Second)
	for l.count.Load() < start+50 {
		if time.Now().After(deadline) {
			b.Fatal("the write load makes no progress")
		}
		time.Sleep(time.Millisecond)
	}
}

// write is one successful write: when it was sent and when it succeeded.
type write struct{ started, done time.Time }

// nextSuccessAfter waits for the first write sent after t to succeed and
// returns when it did. (A write the old leader committed just before dying
// may be acknowledged after t; it does not count.)
func (l *writeLoad) nextSuccessAfter(b *testing.B, t time.Time) time.Time {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		var at time.Time
		for _, w := range l.successes {
			if !w.started.Before(t) && (at.IsZero() || w.done.Before(at)) {
				at = w.done
			}
		}
		l.successes = l.successes[:0]
		l.mu.Unlock()
		if !at.IsZero() {
			return at
		}
		if time.Now().After(deadline) {
			b.Fatal("no write succeeded within 30s of killing the leader")
		}
		time.Sleep(time.Millisecond)
	}
}

func reportMedian(b *testing.B, times []time.Duration, unit string) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, unit)
}
