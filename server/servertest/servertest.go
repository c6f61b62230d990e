// Package servertest starts zkraft servers for Go tests, as net/http/httptest
// starts HTTP servers: on 127.0.0.1 with a port chosen by the OS, ready when
// the call returns, logging to the test (Raft's own lines only if the test
// fails, or with WithRaftLog), and stopped by t.Cleanup, which also checks
// the server's state invariants.
//
// Beyond starting servers (NewServer) and clusters (NewCluster, and
// StartTestCluster in go-zookeeper's shape), a test gets:
//
//   - virtual time: WithFakeClock and Advance (clock.go);
//   - faults on single requests: Faults and Rule (rules.go), and on members
//     and links: Kill, Restart, Wipe, Partition, Degrade, StepClock
//     (faults.go);
//   - the server's state as values, and waits without sleeping: Inspect
//     and Inspector (inspect.go);
//   - parallel tests on one shared server, each in a namespace of its own:
//     Shared and Namespace (shared.go);
//   - a checker of what its clients saw: the history sub-package.
//
// The server knows nothing of tests: it offers hooks that cost nothing when
// unused (server.Config.RequestHook, a clock.Advancer as its clock,
// Server.Changed, Server.Watches), and a namespace is a listener of
// servertest's own in front of it. DESIGN.md says how the pieces meet.
package servertest

import (
	"testing"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/clock"
)

// Option adjusts the configuration of a test server.
type Option func(*server.Config)

// WithConfig lets a test change any setting.
func WithConfig(f func(*server.Config)) Option { return Option(f) }

// WithTickTime sets TickTime, and with it the session timeout bounds (2 and
// 20 ticks) unless they were set.
func WithTickTime(d time.Duration) Option {
	return func(c *server.Config) { c.TickTime = d }
}

// WithDurable gives each server a data dir under t.TempDir(), so that it
// keeps its state across a restart.
func WithDurable() Option { return func(c *server.Config) { c.DataDir = durableMarker } }

// durableMarker stands for "a fresh t.TempDir()" until a server is built.
const durableMarker = "\x00servertest-durable"

// testConfig returns the configuration tests get by default, with opts
// applied: a 100ms tick (sessions of 200ms to 30s), every four-letter word
// allowed, TTL nodes enabled, containers checked every 100ms, no limit on
// connections, and logs written to the test's output.
func testConfig(t testing.TB, opts []Option, base ...Option) server.Config {
	cfg := server.Config{
		ClientPortAddress:      "127.0.0.1:0",
		TickTime:               100 * time.Millisecond,
		MaxSessionTimeout:      30 * time.Second,
		FourLetterWords:        []string{"*"},
		ExtendedTypesEnabled:   true,
		ContainerCheckInterval: 100 * time.Millisecond,
		MaxClientCnxns:         -1,
		Logger:                 testLogger(t),
	}
	for _, o := range append(base, opts...) {
		o(&cfg)
	}
	return cfg
}

// WithObservers makes the last k members of a cluster observers: Raft
// non-voters that serve clients and forward writes but never vote or lead.
func WithObservers(k int) Option {
	return func(c *server.Config) {
		peers := append([]server.Peer(nil), c.Servers...)
		for i := max(len(peers)-k, 0); i < len(peers); i++ {
			peers[i].Observer = true
		}
		c.Servers = peers
	}
}

// Server is a standalone test server: the *server.Server, and what the
// test controls besides. The methods most tests use are listed here; the
// rest of the embedded server's (Mode, FSM, Stats...) are in `go doc
// server.Server`.
type Server struct {
	*server.Server
	t      testing.TB
	fake   *clock.Fake // WithFakeClock's
	faults *Faults
}

// ConnectString returns the address clients connect to, host:port (for
// go-zookeeper: zk.Connect([]string{srv.ConnectString()}, timeout)).
func (s *Server) ConnectString() string { return s.Server.ConnectString() }

// ExpireSession expires session id now, as if its timeout had run out: its
// ephemerals are deleted (their watches fire) and its connection is closed;
// the client, reconnecting, is told its session expired. It reports
// whether the session existed.
func (s *Server) ExpireSession(id int64) bool { return s.Server.ExpireSession(id) }

// Faults returns the server's fault rules.
func (s *Server) Faults() *Faults { return s.faults }

// Pause stops the server answering, as SIGSTOP would stop its process:
// every request, pings included, waits until Resume; connections stay
// open. Its clients' requests, and pings, go unanswered meanwhile, so a
// pause longer than a client's read timeout (two thirds of its session's,
// in go-zookeeper) makes it drop the connection. Fault rules pause for a
// while with Rule.Pause.
func (s *Server) Pause() { s.faults.pause(s.ServerID(), 0) }

// Resume lets a paused server answer again, held requests first.
func (s *Server) Resume() { s.faults.resume(s.ServerID()) }

// Advance moves the server's fake clock (WithFakeClock) forward by d, and
// returns once the sessions, TTL nodes and containers the new time makes
// due are gone.
func (s *Server) Advance(d time.Duration) { s.t.Helper(); advance(s.t, s.fake, d) }

// NewServer starts a standalone server for t (in memory unless
// WithDurable), ready when it returns, with the defaults of testConfig.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	faults := newFaults(t, uint64(time.Now().UnixNano()))
	cfg := testConfig(t, opts, func(c *server.Config) { c.RequestHook = faults })
	if cfg.DataDir == durableMarker {
		cfg.DataDir = t.TempDir()
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("servertest: start: %v", err)
	}
	t.Cleanup(func() {
		faults.resumeAll()
		srv.Close()
		if err := srv.FSM().Check(); err != nil {
			t.Errorf("servertest: state invariants broken after the test: %v", err)
		}
	})
	return &Server{Server: srv, t: t, fake: fakeOf(cfg), faults: faults}
}
