package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/session"
)

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
	pending pendingTable
	stats   serverStats
	started time.Time
	origin  uint64 // this member's id in commands it proposes

	raft    *raft.Raft
	fwd     *forwarder  // this member's link to the leader (cluster only)
	closers []io.Closer // closed after Raft shuts down, last first
	serving atomic.Bool // false while a cluster member knows no leader
	// leading is true once this member leads and has given every session a
	// fresh deadline (onLeader); only then may it expire sessions.
	leading atomic.Bool

	servingMu sync.Mutex    // guards servingCh, leaderCh
	servingCh chan struct{} // closed while serving
	leaderCh  chan struct{} // closed while a leader is known
	// futures carries every proposal's future to waitFutures, which closes
	// the proposing connection if Raft refuses or loses it.
	futures     chan proposal
	applyMu     sync.RWMutex // guards applyClosed; held to read around each raft.Apply
	applyClosed bool
	unanswered  atomic.Int64 // raft.Apply futures not yet answered

	mu        sync.Mutex // guards the fields below
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	bySession map[int64]*conn // the connection a session is bound to
	perIP     map[string]int
	closed    bool
	running   map[string]int   // owned goroutines by name
	tracker   *session.Tracker // session liveness (leader only)
	ids       *session.IDs
	touched   map[int64]struct{}    // sessions seen here since the last report to the leader
	lastHeard map[int]time.Time     // when each member last reported to this (leading) member
	applied   map[int]uint64        // the zxid each member last reported applied to this (leading) member
	voteGuard *voteGuard            // an in-memory cluster member's (see voteGuard)
	peerConns map[net.Conn]struct{} // inbound member connections

	zmu      sync.Mutex // guards zwaiters
	zwaiters []zxidWaiter
	zcount   atomic.Int32 // len(zwaiters), read without the lock

	quit     chan struct{} // closed when shutdown begins
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New validates cfg, fills its defaults and returns a server that is not
// yet running.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		watches:   newWatchRegistry(),
		futures:   make(chan proposal, 8192),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		bySession: make(map[int64]*conn),
		perIP:     make(map[string]int),
		running:   make(map[string]int),
		touched:   make(map[int64]struct{}),
		lastHeard: make(map[int]time.Time),
		applied:   make(map[int]uint64),
		peerConns: make(map[net.Conn]struct{}),
		servingCh: make(chan struct{}),
		leaderCh:  make(chan struct{}),
		tracker:   session.NewTracker(cfg.TickTime),
		quit:      make(chan struct{}),
	}
	s.pending.init()
	s.fsm = raftfsm.New(s)
	s.fwd = &forwarder{s: s}
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
		if ln, err = net.Listen("tcp", s.cfg.ClientPortAddress); err != nil {
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
	first := s.raft == nil && s.started.IsZero()
	if first {
		s.started = time.Now()
		s.ids = session.NewIDs(int64(s.cfg.ServerID), s.started)
	}
	s.mu.Unlock()
	if first {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.startRaft(ctx); err != nil {
			return err
		}
		s.goOwned("futures", s.waitFutures)
		s.goOwned("sessions", s.expireSessions)
		s.goOwned("containers", s.reapContainers)
		s.goOwned("snapshots", s.tuneSnapshots)
		if err := s.startCluster(); err != nil {
			return err
		}
	}
	s.goOwned("accept", func() { s.acceptLoop(ln) })
	s.log.Info("serving", "addr", ln.Addr().String(), "server_id", s.cfg.ServerID)
	return nil
}

// goOwned runs f on a goroutine the server waits for at shutdown. It
// refuses (returns false) once shutdown has begun.
func (s *Server) goOwned(name string, f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	s.running[name]++
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			s.running[name]--
			s.mu.Unlock()
		}()
		f()
	}()
	return true
}

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
		s.wg.Wait()
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
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.mu.Lock()
		still := make(map[string]int)
		for name, n := range s.running {
			if n > 0 {
				still[name] = n
			}
		}
		s.mu.Unlock()
		s.log.Error("close: goroutines still running after 5s", "goroutines", still)
		<-done
	}
	return nil
}

func (s *Server) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
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
		s.closePeers()
		if s.raft != nil {
			s.stopProposing()
			if err := s.raft.Shutdown().Error(); err != nil {
				s.log.Error("raft shutdown", "err", err)
			}
		}
		for i := len(s.closers) - 1; i >= 0; i-- {
			if err := s.closers[i].Close(); err != nil {
				s.log.Error("close", "err", err)
			}
		}
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

// startCluster starts what a cluster member runs besides Raft: the forward
// listener, the leadership watcher and the touch reports. A standalone
// server leads already and simply serves.
func (s *Server) startCluster() error {
	if !s.cfg.clustered() {
		s.onLeader()
		s.leading.Store(true)
		s.setServing(true)
		return nil
	}
	self, _ := s.cfg.self()
	ln := s.cfg.ForwardListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", self.ForwardAddr); err != nil {
			return fmt.Errorf("listen for forwarding on %s: %w", self.ForwardAddr, err)
		}
	}
	pl := &peerListener{Listener: ln, self: s.cfg.ServerID, links: s.cfg.Links}
	s.closers = append(s.closers, pl)
	s.goOwned("forward-accept", func() { s.acceptForwards(pl) })
	s.goOwned("leadership", s.watchLeadership)
	s.goOwned("touches", s.reportTouches)
	return nil
}

// closePeers closes member connections: inbound forwards and the link to
// the leader.
func (s *Server) closePeers() {
	s.fwd.closeAll()
	s.mu.Lock()
	peers := make([]net.Conn, 0, len(s.peerConns))
	for nc := range s.peerConns {
		peers = append(peers, nc)
	}
	s.mu.Unlock()
	for _, nc := range peers {
		nc.Close()
	}
}

// Leader reports whether this member leads (a standalone server always does).
func (s *Server) Leader() bool { return s.isLeader() }

// ServerID returns this member's id.
func (s *Server) ServerID() int { return s.cfg.ServerID }

// Mode returns the member's state as ZooKeeper's srvr prints it: standalone,
// leader, follower or observer.
func (s *Server) Mode() string { return s.mode() }

// Serving reports whether the member serves clients: a cluster member that
// knows no leader does not.
func (s *Server) Serving() bool { return s.serving.Load() }

// DropClientConnections closes every client connection, as a network
// failure would; the sessions live on, and their clients may resume them.
func (s *Server) DropClientConnections() {
	s.closeConns("connections dropped on request")
}
