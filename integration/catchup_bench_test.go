package integration

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/tree"
)

// BenchmarkCatchUp fills a three-member cluster (zkload -fill's tree),
// then stops a follower, wipes what it stored, and starts it again empty:
// far behind a leader whose log no longer goes back to the start, it
// catches up by a snapshot the leader streams to it. Meanwhile one client
// of the leader sets a node's data, one request at a time. It reports how
// long the follower took to apply what the leader had (catch-up-s), and
// that client's latency before (base-) and during the catch-up (p50, p99,
// max): what the leader's clients notice of it. Run one size at a time:
//
//	go test -run '^$' -bench 'CatchUp/mem/1000x1000' -benchtime 1x ./integration
func BenchmarkCatchUp(b *testing.B) {
	for _, store := range []string{"mem", server.LogStoreBolt, server.LogStoreWAL} {
		for _, size := range [][2]int{{100, 1000}, {1000, 1000}} {
			b.Run(fmt.Sprintf("%s/%dx%d", store, size[0], size[1]), func(b *testing.B) {
				for range b.N {
					benchCatchUp(b, store, size[0], size[1])
				}
			})
		}
	}
}

func benchCatchUp(b *testing.B, store string, parents, children int) {
	opts := []servertest.Option{servertest.WithConfig(func(c *server.Config) {
		c.RaftTimeout = time.Second // a busy machine elects no new leader midway
		c.MaxClientCnxns = -1
		if store != "mem" {
			c.LogStore = store
		}
	})}
	if store != "mem" {
		opts = append(opts, servertest.WithDurable())
	}
	cluster := servertest.NewCluster(b, 3, opts...)
	leader := cluster.Leader()
	addr := cluster.Addr(leader)
	root, err := loadgen.NewRoot(addr)
	if err != nil {
		b.Fatal(err)
	}
	f := loadgen.Fill{Addr: addr, Root: root, Parents: parents, Children: children, NameLen: 16,
		DataLen: 32, Sessions: 8, InFlight: 64}
	if _, err := f.Run(); err != nil {
		b.Fatal(err)
	}

	probe, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer probe.Close()
	target := root + "/probe"
	if _, err := probe.Create(target, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var latencies []time.Duration
	stop := make(chan struct{})
	var probing sync.WaitGroup
	probing.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := probe.Set(target, []byte("x"), -1); err != nil {
				b.Errorf("setData on the leader: %v", err)
				return
			}
			mu.Lock()
			latencies = append(latencies, time.Since(start))
			mu.Unlock()
		}
	})
	take := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		out := latencies
		latencies = nil
		return out
	}
	// As long a baseline as the catch-up is likely to take, at least a second.
	base := time.Duration(parents*children/100_000+1) * time.Second
	time.Sleep(base) // the baseline's length, not synchronisation
	before := take()

	follower := (leader + 1) % 3
	cluster.Kill(follower)
	cluster.Wipe(follower)
	want := cluster.Server(leader).FSM().LastZxid()
	start := time.Now()
	cluster.Restart(follower)
	deadline := time.After(5 * time.Minute)
	for {
		applied := cluster.Server(follower).Changed() // before reading, so that no apply is missed
		if cluster.Server(follower).FSM().LastZxid() >= want {
			break
		}
		select {
		case <-applied:
		case <-deadline:
			b.Fatalf("the restarted follower applied up to %#x in 5 minutes, the leader %#x",
				cluster.Server(follower).FSM().LastZxid(), want)
		}
	}
	catchUp := time.Since(start)
	during := take()
	close(stop)
	probing.Wait()
	var kids int
	cluster.Server(follower).FSM().Read(func(t *tree.Tree) { kids = t.Len() })
	if kids < f.Nodes() {
		b.Fatalf("the follower holds %d znodes, want at least %d", kids, f.Nodes())
	}

	b.ReportMetric(catchUp.Seconds(), "catch-up-s")
	report := func(prefix string, ds []time.Duration) {
		if len(ds) == 0 {
			b.Fatalf("no setData completed %s", prefix)
		}
		slices.Sort(ds)
		ms := func(d time.Duration) float64 { return d.Seconds() * 1000 }
		b.ReportMetric(ms(ds[len(ds)/2]), prefix+"p50-ms")
		b.ReportMetric(ms(ds[len(ds)*99/100]), prefix+"p99-ms")
		b.ReportMetric(ms(ds[len(ds)-1]), prefix+"max-ms")
	}
	report("base-", before)
	report("", during)
}
