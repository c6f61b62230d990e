package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/clock"
	"github.com/zkraft/zkraft/server/internal/owned"
	"github.com/zkraft/zkraft/server/internal/sockio"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/session"
)

// deferAcceptSeconds is how long the kernel holds a client connection that
// has sent nothing before handing it over all the same (sockio.DeferAccept).
const deferAcceptSeconds = 1

// ErrServerClosed is returned by Serve and Start after Shutdown or Close.
var ErrServerClosed = errors.New("server: closed")

// Server is a ZooKeeper-compatible server: a znode tree replicated by Raft,
// spoken to over ZooKeeper's client protocol. Create it with New, run it with
// Start (or Serve), and stop it with Shutdown or Close.
type Server struct {
	cfg     Config
	log     *slog.Logger
	fsm     *raftfsm.FSM
	watches *watchRegistry
	changed changes   // what Changed hands out
	observe observers // what Observe registered
	pending pendingTable
	// Proposals whose outcome a leader change left unknown (settleLater).
	settleMu  sync.Mutex
	unsettled []uint64
	settling  bool
	handoff   func([]*conn) // flushAsync, made once: a method value per change would be an allocation
	toFlush   []*conn       // connections to flush at the end of the batch being applied (FSM lock)
	stats     serverStats
	started   time.Time
	origin    uint64 // this member's id in commands it proposes

	node     *member.Node // Raft and the links to the other members
	reconfig reconfigState
	ro       roSessions // read-only sessions (see readonly.go)

	mu        sync.Mutex // guards the fields below
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	bySession map[int64]*conn   // the connection a session is bound to
	draining  map[int64][]*conn // closed connections of a session with writes still in flight (conn.park)
	perIP     map[string]int
	closed    bool
	tracker   *session.Tracker       // session liveness (leader only), on clock.Elapsed
	console   atomic.Pointer[string] // this member's console URL (SetConsoleURL)
	clock     clock.Clock
	ids       *session.IDs

	quit     chan struct{} // closed when shutdown begins
	stopOnce sync.Once
	group    owned.Group
}

// New validates cfg, fills its defaults and returns a server that is not
// yet running.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if cfg.Clock == nil {
		cfg.Clock = clock.NewReal()
	}
	s := &Server{
		clock:     cfg.Clock,
		cfg:       cfg,
		log:       cfg.Logger,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		bySession: make(map[int64]*conn),
		draining:  make(map[int64][]*conn),
		perIP:     make(map[string]int),
		tracker:   session.NewTracker(cfg.TickTime),
		quit:      make(chan struct{}),
	}
	s.watches = newWatchRegistry(&s.changed, &s.stats)
	s.pending.init()
	s.handoff = s.flushAsync
	s.fsm = raftfsm.New(s)
	if cfg.clustered() {
		s.fsm.SetConfig(member.FormatEnsemble(cfg.Servers, 0))
	}
	mc := cfg.memberConfig()
	mc.Presence = s.presence
	s.node = member.New(mc, s.fsm, s)
	origin := make([]byte, 8)
	if _, err := rand.Read(origin); err != nil {
		return nil, fmt.Errorf("server: request origin: %w", err)
	}
	// Commands carry this incarnation's own id, so that commands replayed
	// from a durable log after a restart never match a new request.
	s.origin = binary.BigEndian.Uint64(origin) | 1
	return s, nil
}

// Start binds the client port, starts Raft, and returns once the server
// accepts and serves connections. On failure everything already started is
// torn down.
func (s *Server) Start() error {
	ln := s.cfg.ClientListener
	if ln == nil {
		var err error
		if ln, err = ListenClients(s.cfg.ClientPortAddress, s.cfg.ClientTCPKeepAlive); err != nil {
			return fmt.Errorf("listen on %s: %w", s.cfg.ClientPortAddress, err)
		}
	}
	if err := s.start(ln); err != nil {
		ln.Close()
		s.Close()
		return err
	}
	return nil
}

// ListenClients opens a listener for clients on addr as Start opens one
// when Config.ClientListener is nil: TCP keepalive on accepted connections
// only with tcpKeepAlive (Config.ClientTCPKeepAlive), and, since a client
// speaks first, a connection handed over once its connect request is there
// (sockio.DeferAccept). A caller that binds the port before the server
// starts (a test cluster choosing its ports) gets the same sockets.
func ListenClients(addr string, tcpKeepAlive bool) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1, Control: sockio.DeferAccept(deferAcceptSeconds)}
	if tcpKeepAlive {
		lc.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
	}
	return lc.Listen(context.Background(), "tcp", addr)
}

// Serve starts Raft if it is not running and accepts connections on ln
// until the server is shut down, then returns ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.start(ln); err != nil {
		ln.Close()
		return err
	}
	<-s.quit
	return ErrServerClosed
}

func (s *Server) start(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	first := s.started.IsZero()
	if first {
		s.started = time.Now()
		s.ids = session.NewIDs(int64(s.cfg.ServerID), s.started)
	}
	s.mu.Unlock()
	if first {
		if err := s.node.Start(); err != nil {
			if errors.Is(err, member.ErrClosed) {
				return ErrServerClosed
			}
			return err
		}
		s.goOwned("sessions", s.expireSessions)
		s.goOwned("containers", s.reapContainers)
		if a, ok := s.clock.(clock.Advancer); ok {
			stop := a.OnAdvance(s.advanced)
			s.goOwned("advances", func() { <-s.quit; stop() })
		}
	}
	s.goOwned("accept", func() { s.acceptLoop(ln, s.pause) })
	s.log.Info("serving", "addr", ln.Addr().String(), "server_id", s.cfg.ServerID)
	return nil
}

// goOwned runs f on a goroutine the server waits for at shutdown. It
// refuses (returns false) once shutdown has begun.
func (s *Server) goOwned(name string, f func()) bool { return s.group.Go(name, f) }

// Goroutines returns how many of the server's own goroutines run (those of
// its connections, sessions and housekeeping; not its Raft member's), for
// leak checks: a closed connection's end when its goroutines have.
func (s *Server) Goroutines() int { return s.group.Len() }

// WaitGoroutines waits until at most n of the server's own goroutines run
// (Goroutines), or until done is closed, and reports whether they did.
func (s *Server) WaitGoroutines(n int, done <-chan struct{}) bool { return s.group.WaitAtMost(n, done) }

// Addr returns the address of the first listener, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		return ln.Addr()
	}
	return nil
}

// ConnectString returns "host:port" for clients, or "" before Start.
func (s *Server) ConnectString() string {
	if a := s.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// Shutdown stops the server gracefully: it stops accepting, closes client
// connections without closing their sessions (a client may resume its
// session, with its ephemerals, once a server is back), stops Raft, and
// waits for every goroutine until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	done := make(chan struct{})
	go func() {
		s.group.Wait()
		s.node.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: %w", ctx.Err())
	}
}

// Close stops the server at once and waits for its goroutines, logging any
// that take more than a few seconds.
func (s *Server) Close() error {
	s.stop()
	done := make(chan struct{})
	go func() {
		s.group.Wait()
		s.node.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		still := s.node.Running(s.group.Running(nil))
		s.log.Error("close: goroutines still running after 5s", "goroutines", still)
		<-done
	}
	return nil
}

func (s *Server) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.group.Close()
		close(s.quit)
		for ln := range s.listeners {
			ln.Close()
		}
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.close("server shutting down")
		}
		s.node.Stop()
	})
}

// FSM returns the server's state machine, for inspection (tests, tools).
func (s *Server) FSM() *raftfsm.FSM { return s.fsm }

// closing reports whether shutdown has begun.
func (s *Server) closing() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// Leader reports whether this member leads (a standalone server always does).
func (s *Server) Leader() bool { return s.node.IsLeader() }

// Config returns the server's configuration, with its defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// ServerID returns this member's id.
func (s *Server) ServerID() int { return s.cfg.ServerID }

// Mode returns the member's state as ZooKeeper's srvr prints it: standalone,
// leader, follower, observer, or read-only (see Config.ReadOnlyMode).
func (s *Server) Mode() string { return s.mode() }

// Serving reports whether the member serves clients: a cluster member that
// knows no leader does not.
func (s *Server) Serving() bool { return s.node.Serving() }

// DropClientConnections closes every client connection, as a network
// failure would; the sessions live on, and their clients may resume them.
func (s *Server) DropClientConnections() {
	s.closeConns("connections dropped on request")
}
