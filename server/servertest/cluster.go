package servertest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/clock"
)

// Cluster is a set of zkraft members running in the test's process, on
// loopback ports chosen by the OS, with their links to each other going
// through a switchboard the test controls. Members are numbered from 0;
// member i has server id i+1.
type Cluster struct {
	t         testing.TB
	links     *server.Links
	members   []*member
	fake      *clock.Fake // WithFakeClock's, shared by the members
	faults    *Faults     // shared by the members
	closeOnce sync.Once
}

type member struct {
	cfg               server.Config    // with Servers filled, without listeners
	client, raft, fwd string           // addresses, kept across restarts
	srv               *server.Server   // nil while killed
	clock             *clock.Steppable // the member's machine clock, kept across restarts
}

// NewCluster starts n in-memory members (durable ones with WithDurable),
// returns once one of them leads and every member serves, and stops them
// all in t.Cleanup, after checking that every replica's state is valid and
// that replicas at the same zxid have the same tree. Its defaults are the
// NewServer ones, which make a cluster member's Raft timeout (and its
// leader's lease) 250ms, half of syncLimit's five 100ms ticks: a cluster is
// ready at once, fails over from a killed member within milliseconds, and
// suspects a silent one only after a scheduling pause that a loaded test
// machine (-race, a CPU hog, tests in parallel) does not reach.
func NewCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, links: server.NewLinks(), faults: newFaults(t, uint64(time.Now().UnixNano()))}
	c.faults.onPause = func(member int, paused bool) {
		if paused {
			c.links.Pause(member)
		} else {
			c.links.Resume(member)
		}
	}
	var peers []server.Peer
	listeners := make([][3]net.Listener, n)
	for i := range n {
		for j := range 3 {
			ln, err := memberListen[j]("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatalf("servertest: listen: %v", err)
			}
			listeners[i][j] = ln
		}
		m := &member{client: listeners[i][0].Addr().String(), raft: listeners[i][1].Addr().String(),
			fwd: listeners[i][2].Addr().String()}
		peers = append(peers, server.Peer{ID: i + 1, RaftAddr: m.raft, ForwardAddr: m.fwd})
		c.members = append(c.members, m)
	}
	for i, m := range c.members {
		m.cfg = testConfig(t, opts, func(cfg *server.Config) {
			cfg.ServerID, cfg.Servers, cfg.Links, cfg.RequestHook = i+1, peers, c.links, c.faults
		})
		if m.cfg.DataDir == durableMarker {
			m.cfg.DataDir = t.TempDir()
		}
		if m.cfg.Clock == nil {
			m.cfg.Clock = clock.NewReal()
		}
		c.fake = fakeOf(m.cfg)
		m.clock = clock.NewSteppable(m.cfg.Clock)
		m.cfg.Clock = m.clock
	}
	t.Cleanup(c.Close)
	errs := make(chan error, n)
	for i, m := range c.members {
		go func() { errs <- c.start(m, listeners[i]) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("servertest: %v", err)
		}
	}
	c.waitReady()
	return c
}

// start starts member m on the given listeners.
func (c *Cluster) start(m *member, lns [3]net.Listener) error {
	cfg := m.cfg
	cfg.ClientListener, cfg.RaftListener, cfg.ForwardListener = lns[0], lns[1], lns[2]
	srv, err := server.New(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		return fmt.Errorf("start member %d: %w", cfg.ServerID, err)
	}
	m.srv = srv
	return nil
}

// Faults returns the cluster's fault rules, for requests to any member
// (Rule.Member picks one).
func (c *Cluster) Faults() *Faults { return c.faults }

// Advance moves the members' fake clock (WithFakeClock) forward by d, and
// returns once the leader has expired the sessions and reaped the TTL
// nodes and containers the new time makes due (each member applies them
// in its own time, as any write).
func (c *Cluster) Advance(d time.Duration) { c.t.Helper(); advance(c.t, c.fake, d) }

func (c *Cluster) waitReady() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.WaitForLeader(ctx); err != nil {
		c.t.Fatalf("servertest: %v", err)
	}
}

// WaitForLeader waits until a member leads and every running member knows
// a leader, and returns the leader's index.
func (c *Cluster) WaitForLeader(ctx context.Context) (int, error) {
	for {
		if leader := c.Leader(); leader >= 0 && c.allServing() {
			return leader, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("servertest: no leader that every member follows: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (c *Cluster) allServing() bool {
	for _, m := range c.members {
		if m.srv != nil && !m.srv.Serving() {
			return false
		}
	}
	return true
}

// Leader returns the index of the member that leads now, or -1.
func (c *Cluster) Leader() int {
	for i, m := range c.members {
		if m.srv != nil && m.srv.Leader() {
			return i
		}
	}
	return -1
}

// Servers returns the members' servers; a killed member's is nil.
func (c *Cluster) Servers() []*server.Server {
	out := make([]*server.Server, len(c.members))
	for i, m := range c.members {
		out[i] = m.srv
	}
	return out
}

// Server returns member i's server (nil while killed).
func (c *Cluster) Server(i int) *server.Server { return c.members[i].srv }

// ConnectString returns every member's client address, as clients take it.
func (c *Cluster) ConnectString() string {
	addrs := make([]string, len(c.members))
	for i, m := range c.members {
		addrs[i] = m.client
	}
	return strings.Join(addrs, ",")
}

// Addr returns member i's client address, running or not.
func (c *Cluster) Addr(i int) string { return c.members[i].client }

// DataDir returns member i's data dir (WithDurable), "" for a member kept
// in memory. A test may damage a killed member's files there (see package
// server/raftstore/damage) before it restarts it.
func (c *Cluster) DataDir(i int) string { return c.members[i].cfg.DataDir }
