package chaos_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/chaos"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/raftstore/damage"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// clusterTarget lets the nemesis hurt a servertest cluster.
type clusterTarget struct {
	*servertest.Cluster
	n int
}

func (c clusterTarget) Members() int { return c.n }

// Durable implements chaos.Lagger: the test's members keep their state in
// memory, so a kill destroys it.
func (c clusterTarget) Durable() bool { return false }

// Lags implements chaos.Lagger.
func (c clusterTarget) Lags() []int64 {
	zxids := make([]int64, c.n)
	for i := range zxids {
		zxids[i] = -1
		if srv := c.Server(i); srv != nil {
			zxids[i] = srv.FSM().LastZxid()
		}
	}
	return chaos.LagsOf(zxids)
}

// seed returns ZKRAFT_CHAOS_SEED, or one taken from the clock; the test
// logs it, so a failure can be run again with the same choices.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("ZKRAFT_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "ZKRAFT_CHAOS_SEED")
		return v
	}
	return uint64(time.Now().UnixNano())
}

// TestChaos_ShortCampaign runs the register workload against a
// three-member in-memory cluster for a few seconds while the nemesis kills
// and restarts members, partitions them and drops client connections, and
// checks the history with porcupine. ZKRAFT_CHAOS_SEED=<seed> repeats a
// run's choices (the timing of the faults against the operations differs);
// ZKRAFT_CHAOS_FAULTS=kind,kind... limits the faults to those kinds.
func TestChaos_ShortCampaign(t *testing.T) {
	if raceEnabled {
		// go-zookeeper v1.0.4 reads and writes a connection's last zxid from
		// two goroutines when a connection with watches reconnects
		// (go-zookeeper/zk#35, still open), and the campaign drops
		// connections on purpose: the race detector would report the
		// client, not zkraft. The campaign runs in the plain suite.
		t.Skip("go-zookeeper races with itself on reconnection (go-zookeeper/zk#35); runs without -race")
	}
	const members = 3
	c := servertest.NewCluster(t, members)
	addrs := make([]string, members)
	for i := range addrs {
		addrs[i] = c.Addr(i)
	}
	s := seed(t)
	var faults []string // all the cluster supports
	if f := os.Getenv("ZKRAFT_CHAOS_FAULTS"); f != "" {
		faults = strings.Split(f, ",")
	}
	res, err := chaos.Run(context.Background(), clusterTarget{c, members}, chaos.Config{
		Addrs: addrs, Seed: s, Duration: 8 * time.Second, Faults: faults, Log: t.Logf,
	})
	require.NoError(t, err, "seed %d", s)
	t.Log(res.Summary())
	if !res.OK() {
		path := filepath.Join(t.TempDir(), "history.html")
		if err := res.Visualize(path); err == nil {
			if keep := os.Getenv("ZKRAFT_CHAOS_HTML"); keep != "" {
				path = keep
				_ = res.Visualize(keep)
			}
		}
		t.Fatalf("a check failed (seed %d): %s; porcupine's view: %s (set ZKRAFT_CHAOS_HTML=<file> to keep it)",
			s, res.Summary(), path)
	}
	require.Greater(t, res.Ops, 100, "the workload made progress")
}

// durableTarget is a durable servertest cluster, whose members' files the
// nemesis may damage while they are down.
type durableTarget struct{ clusterTarget }

// Durable implements chaos.Lagger.
func (c durableTarget) Durable() bool { return true }

// Damage implements chaos.Damager.
func (c durableTarget) Damage(i int, r *rand.Rand) (string, error) {
	kind := damage.Kinds[r.IntN(len(damage.Kinds))]
	what, err := damage.Apply(c.DataDir(i), kind, r)
	return string(kind) + ": " + what, err
}

// Repaired implements chaos.Repairer.
func (c durableTarget) Repaired(i int) bool {
	srv := c.Server(i)
	return srv != nil && srv.Serving() && !srv.RaftStatus().Repairing
}

// TestChaos_DiskDamage runs the workloads against three durable members
// while the nemesis kills members and damages their files as a failing
// disk would, and restarts them: every check passes, and every damaged
// member serves again, repaired.
func TestChaos_DiskDamage(t *testing.T) {
	if raceEnabled {
		t.Skip("go-zookeeper races with itself on reconnection (go-zookeeper/zk#35); runs without -race")
	}
	const members = 3
	c := servertest.NewCluster(t, members, servertest.WithDurable(), servertest.WithConfig(func(cfg *server.Config) {
		cfg.SnapCount = 200 // snapshots, and a log past them, to damage
	}))
	addrs := make([]string, members)
	for i := range addrs {
		addrs[i] = c.Addr(i)
	}
	s := seed(t)
	res, err := chaos.Run(context.Background(), durableTarget{clusterTarget{c, members}}, chaos.Config{
		Addrs: addrs, Seed: s, Duration: 8 * time.Second, Log: t.Logf,
		Faults: []string{chaos.FaultCorrupt},
	})
	require.NoError(t, err, "seed %d", s)
	t.Log(res.Summary())
	require.True(t, res.OK(), "a check failed (seed %d): %s", s, res.Summary())
	require.Positive(t, res.Faults[chaos.FaultCorrupt], "the nemesis damaged members (seed %d)", s)
}

// The checks must be seen to fail. Every member is reached through a proxy
// that plants a fault by rewriting the successful replies to one opcode:
// each getData answered with the first answer seen for its path (a member
// serving reads from a stale copy); each sequential create of the queue
// with the first name given (a repeated sequence number); the lock's
// children listed as the last in line alone (a member that hides the
// holder's node, so that two lockers hold at once); an owner's
// check of its ephemeral answered "no node" (a member that lost it). The
// campaign must find each.
func TestChaos_ChecksFindPlantedFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      wire.Op
		rewrite func(path string) rewriter
		found   func(*chaos.Result) bool
	}{
		{"stale reads", wire.OpGetData, replayFirst, func(r *chaos.Result) bool { return !r.Linearizable() }},
		{"repeated sequence numbers", wire.OpCreate, replayFirst, func(r *chaos.Result) bool { return len(r.QueueProblems) > 0 }},
		{"two lock holders", wire.OpGetChildren2, hideHolder, func(r *chaos.Result) bool { return len(r.LockProblems) > 0 }},
		{"lost ephemerals", wire.OpExists, loseEphemeral, func(r *chaos.Result) bool { return len(r.EphemeralProblems) > 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const members = 3
			c := servertest.NewCluster(t, members)
			addrs := make([]string, members)
			var shared sync.Mutex // one rewriter state for every proxy
			rw := map[string]rewriter{}
			rewrite := func(path string) rewriter {
				shared.Lock()
				defer shared.Unlock()
				if rw[path] == nil {
					rw[path] = tc.rewrite(path)
				}
				return rw[path]
			}
			for i := range addrs {
				addrs[i] = faultyProxy(t, c.Addr(i), tc.op, rewrite)
			}
			s := seed(t)
			res, err := chaos.Run(context.Background(), clusterTarget{c, members}, chaos.Config{
				Addrs: addrs, Seed: s, Duration: 2 * time.Second,
				Faults: []string{}, // none: the planted one is enough
			})
			require.NoError(t, err, "seed %d", s)
			t.Log(res.Summary())
			require.True(t, tc.found(res), "the checks missed the planted fault (seed %d)", s)
		})
	}
}

// A rewriter turns a successful reply's body into the one the client gets.
type rewriter func(body []byte) []byte

// replayFirst answers every time with the first body seen for the path.
func replayFirst(string) rewriter {
	var mu sync.Mutex
	var first []byte
	return func(body []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = slices.Clone(body)
		}
		return first
	}
}

// hideHolder lists a lock directory's children as the last in line alone
// when others are there: whoever just joined the line believes it holds.
func hideHolder(path string) rewriter {
	return func(body []byte) []byte {
		var r wire.GetChildren2Response
		if !strings.HasSuffix(path, "/lock") {
			return body
		}
		if _, err := r.Decode(body); err != nil || len(r.Children) < 2 {
			return body
		}
		seq := func(name string) string { return name[max(len(name)-10, 0):] }
		slices.SortFunc(r.Children, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
		r.Children = r.Children[len(r.Children)-1:]
		return r.Append(nil)
	}
}

// loseEphemeral answers an owner's check of its ephemeral as if it were
// gone (nil: the reply becomes NONODE).
func loseEphemeral(path string) rewriter {
	return func(body []byte) []byte {
		if strings.Contains(path, "/eph/owner-") {
			return nil
		}
		return body
	}
}

// faultyProxy listens on loopback and relays connections to addr, passing
// the body of every successful reply to op through rewrite(path); a nil
// result turns the reply into NONODE.
func faultyProxy(t *testing.T, addr string, op wire.Op, rewrite func(path string) rewriter) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			var pmu sync.Mutex
			pending := map[int32]string{} // xid -> path of a request to falsify
			frame := func(dst net.Conn, payload []byte) error {
				_, err := dst.Write(binary.BigEndian.AppendUint32(nil, uint32(len(payload))))
				if err == nil {
					_, err = dst.Write(payload)
				}
				return err
			}
			go func() { // client to server: note the requests to falsify
				defer server.Close()
				fr := wire.NewFrameReader(client, 1<<20)
				for n := 0; ; n++ {
					f, err := fr.Next()
					if err != nil {
						return
					}
					if n > 0 && len(f) >= 8 && wire.Op(binary.BigEndian.Uint32(f[4:])) == op {
						path := wire.NewDecoder(f[8:]).String()
						pmu.Lock()
						pending[int32(binary.BigEndian.Uint32(f))] = path
						pmu.Unlock()
					}
					if frame(server, f) != nil {
						return
					}
				}
			}()
			go func() { // server to client: the answers falsified
				defer client.Close()
				fr := wire.NewFrameReader(server, 1<<20)
				for n := 0; ; n++ {
					f, err := fr.Next()
					if err != nil {
						return
					}
					out := f
					if n > 0 && len(f) >= 16 {
						xid := int32(binary.BigEndian.Uint32(f))
						pmu.Lock()
						path, ok := pending[xid]
						delete(pending, xid)
						pmu.Unlock()
						if ok && binary.BigEndian.Uint32(f[12:]) == 0 {
							if body := rewrite(path)(slices.Clone(f[16:])); body != nil {
								out = append(slices.Clone(f[:16]), body...)
							} else {
								noNode := int32(wire.CodeNoNode)
								out = binary.BigEndian.AppendUint32(slices.Clone(f[:12]), uint32(noNode))
							}
						}
					}
					if frame(client, out) != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
