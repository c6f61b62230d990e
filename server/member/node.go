// Package member is the membership side of a zkraft server: the Raft node
// that replicates the state machine, the network between the members
// (Raft traffic and forwarding, through a switchboard tests can cut), the
// forwarding of writes, session touches, revalidations and sync barriers to
// the leader, the vote guard of in-memory members, the in-memory snapshot
// store, and the member's view of leadership: whether a leader is known,
// whether the member serves clients, and how fast it notices a dead
// leader.
//
// The client side (package server) sees a Node through a few calls:
// Propose a command, Sync with the leader, CatchUp to a zxid, Revalidate a
// resuming session, report a Touch, and ask who leads and whether to
// serve. The Node calls back through Host for what only the client side
// knows: sessions' liveness and the client connections.
package member

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/internal/owned"
	"github.com/zkraft/zkraft/server/raftstore"
)

// ErrClosed is returned once the node is stopping.
var ErrClosed = errors.New("member: closed")

// Host is what a Node asks of the client side. Its methods are called from
// the Node's goroutines and must not block for long.
type Host interface {
	// ProposalFailed is told of a proposal Raft refused or lost (reqID as
	// given to Propose): it was not committed, or may not have been.
	ProposalFailed(reqID uint64, err error)
	// Elected is called when this member has become leader, before Leading
	// reports true: every session gets a fresh deadline, since liveness is
	// known only to the member that led.
	Elected()
	// ServingChanged tells the client side that the member starts or stops
	// serving: it stops when it has had no leader for syncLimit ticks, and
	// then every client connection must close once what is queued for it
	// is written (the sessions live on in the cluster).
	ServingChanged(on bool)
	// TouchSessions extends, on the leader, the sessions another member
	// reports alive.
	TouchSessions(ids []int64)
	// Revalidate reports, on the leader, whether a resuming session lives,
	// giving it a deadline counted from now with the new timeout.
	Revalidate(id int64, timeout time.Duration) bool
	// Prepare turns, on the leader, a command given to ProposePrepared into
	// the one to propose (see membership.go). It may block briefly.
	Prepare(cmd []byte) []byte
	// Awaited reports whether the client of a proposal (reqID as given to
	// ProposePrepared) still waits for it: one tried again is given up
	// once it does not, rather than taking effect after the client left.
	Awaited(reqID uint64) bool
}

// Config is what a Node needs of the server's configuration.
type Config struct {
	ServerID    int
	Servers     []Peer // empty: a standalone server
	TickTime    time.Duration
	SyncLimit   int // ticks a member may go without a leader before it stops serving
	RaftTimeout time.Duration
	LeaderLease time.Duration // see server.Config.LeaderLease
	DataDir     string
	DataLogDir  string
	LogStore    string // LogStoreWAL (""), or LogStoreBolt; see server.Config.LogStore
	// Presence, if set, describes this member for the others' view of the
	// cluster (View): bytes the node carries and does not read.
	Presence        func() []byte
	SnapCount       int
	SnapRetainCount int
	RaftListener    net.Listener
	ForwardListener net.Listener
	Links           *Links
	PeerVia         map[string]string // see server.Config.PeerVia
	Logger          *slog.Logger

	// commitTimeout, when set, replaces Raft's CommitTimeout (tests).
	commitTimeout time.Duration
	// wrapLogStore, when set, wraps a durable member's log store (tests).
	wrapLogStore func(raft.LogStore) raft.LogStore
	// digestBase, when set, replaces digestBase (tests).
	digestBase uint64
	// scrub, when set, changes a durable member's scrub settings (tests).
	scrub func(*scrubber)
	// olderPeerNet makes the member refuse AppendEntries connections and
	// send its own over Raft's network transport, as a zkraft from before
	// them did (tests of an upgrade member by member; see olderPeers).
	olderPeerNet bool
}

// Peer is one member of a cluster: zoo.cfg's server.N=host:port1:port2.
type Peer struct {
	ID          int    // N, 1..254
	RaftAddr    string // host:port1, where Raft traffic goes
	ForwardAddr string // host:port2, where members forward requests to the leader
	Observer    bool   // a Raft non-voter: serves clients, never votes
	Client      string // clientHost:clientPort from ";[host:]port", as ZooKeeper shows it; may be empty
}

// Clustered reports whether the node is a member of a cluster.
func (c *Config) Clustered() bool { return len(c.Servers) > 0 }

// Self returns this member's entry in Servers.
func (c *Config) Self() (Peer, bool) { return c.Peer(c.ServerID) }

// Peer returns the member with the given id.
func (c *Config) Peer(id int) (Peer, bool) {
	for _, p := range c.Servers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

// Voters counts the voting members.
func (c *Config) Voters() int { return voters(c.Servers) }

// LogDir is where the Raft log is kept: DataLogDir, or else DataDir.
func (c *Config) LogDir() string {
	if c.DataLogDir != "" {
		return c.DataLogDir
	}
	return c.DataDir
}

// The stores a durable member may keep its Raft log and stable state in.
const (
	// LogStoreBolt is hashicorp/raft-boltdb/v2: one file, LogFile. The
	// default until 2026-11-27; data dirs it made keep it.
	LogStoreBolt = "boltdb"
	// LogStoreWAL is hashicorp/raft-wal: append-only segment files (see
	// walfs) and a small metadata database in WALDir, one fsync per
	// append. The default: measured alone on 2026-11-27, a standalone
	// server made 82k setData/s with it against 43k with raft-boltdb.
	LogStoreWAL = "wal"
)

// LogFile holds a raft-boltdb log and stable store, in Config.LogDir.
const LogFile = "raft.db"

// WALDir holds a raft-wal log and stable store, in Config.LogDir.
const WALDir = "raft-wal"

// LogStoreIn returns the kind of Raft log store dir holds, or "" if none.
func LogStoreIn(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, LogFile)); err == nil {
		return LogStoreBolt
	}
	if _, err := os.Stat(filepath.Join(dir, WALDir)); err == nil {
		return LogStoreWAL
	}
	return ""
}

// LogStoreKind returns the store this member keeps its log in: the one
// its log dir already holds, whatever the configuration asks (so that a
// changed setting never starts a member from an empty log), else the
// configured one, else LogStoreWAL.
func (c *Config) LogStoreKind() string {
	if kind := LogStoreIn(c.LogDir()); kind != "" {
		return kind
	}
	if c.LogStore == "" {
		return LogStoreWAL
	}
	return c.LogStore
}

// misplacedLog returns an error when a separate data log dir holds no
// log while the data dir holds one: dataLogDir was set after the member
// kept its log in dataDir. Starting would open an empty log beside the old
// one and lose what the log held, the term and the vote with it, so that
// the member could vote twice in one term.
func (c *Config) misplacedLog() error {
	if c.DataLogDir == "" || LogStoreIn(c.DataLogDir) != "" {
		return nil // also when the two are one dir: what one holds, so does the other
	}
	if kind := LogStoreIn(c.DataDir); kind != "" {
		return fmt.Errorf("the Raft log (%s) is in the data dir %s, but the data log dir %s holds none: "+
			"move the log there or leave dataLogDir unset", kind, c.DataDir, c.DataLogDir)
	}
	return nil
}

// LogPath returns the file or directory the Raft log is kept in.
func (c *Config) LogPath() string {
	if c.LogStoreKind() == LogStoreWAL {
		return filepath.Join(c.LogDir(), WALDir)
	}
	return filepath.Join(c.LogDir(), LogFile)
}

// writeTimeout bounds one write to another member.
const writeTimeout = 30 * time.Second

// Node is this member's Raft node and its links to the other members.
type Node struct {
	cfg  Config
	log  *slog.Logger
	fsm  *raftfsm.FSM
	host Host

	running atomic.Pointer[raft.Raft] // this member's Raft once Start made it (raftNow)
	trans   *peerTransport            // a cluster member's Raft transport
	notices *commitNotices            // commit notices to the other members (cluster only)
	fwd     *forwarder                // this member's link to the leader (cluster only)
	closers []io.Closer               // closed after Raft shuts down, last first
	stream  io.Closer                 // a cluster member's Raft connections, closed before Raft shuts down
	serving atomic.Bool               // false while a cluster member knows no leader
	served  atomic.Bool               // the member has served since it started
	// offAt and leaderlessAt are when the member last stopped serving and
	// when it last lost its leader (UnixNano; leaderlessAt is 0 while a
	// leader is known): see Looking.
	offAt, leaderlessAt atomic.Int64
	started             time.Time // when Start began (set before Raft runs)
	// leading is true once this member leads and Host.Elected has run;
	// only then may the leader expire sessions.
	leading atomic.Bool

	servingMu sync.Mutex    // guards servingCh, leaderCh, changedCh
	servingCh chan struct{} // closed while serving
	leaderCh  chan struct{} // closed while a leader is known
	changedCh chan struct{} // closed when Raft names another leader, then replaced
	// futures carries every proposal's future to waitFutures, which tells
	// Host of a proposal Raft refuses or loses.
	futures    chan proposal
	probing    atomic.Bool                // a leader probe runs (see failover.go)
	goneLeader atomic.Pointer[goneLeader] // the last leader a probe found gone
	// durableLog is a durable member's log store (set by startRaft): an
	// overlapLog in a cluster, a latchedLog standalone. Once it failed to
	// write, the member stops serving clients (logBroken).
	durableLog interface{ failed() error }
	// vote is a durable member's term and vote record; lostFrom the first
	// entry it may have lost to a damaged disk (0 if none), and repairing
	// true until it has them back; applyBroken is set once an entry
	// reached the state machine damaged (see damage.go).
	vote        *raftstore.VoteRecord
	sealedFrom  uint64   // the first index stored with a checksum
	lostEnd     logEnd   // where the log ended before the damage, if known
	digests     *digests // a cluster member's digests of its tree (see digest.go)
	scrubber    *scrubber
	raftLog     raft.LogStore // the log store Raft is given (durable members)
	lostFrom    uint64
	repairing   atomic.Bool
	applyBroken atomic.Pointer[error]
	// offGen counts the times the member stopped serving; syncedGen is
	// one more than the count when it last caught up with a leader, while
	// syncing does (see caughtUp), and caughtUpCh wakes watchLeadership
	// when it has.
	offGen, syncedGen, syncFailedGen atomic.Uint64
	syncing                          atomic.Bool
	caughtUpCh                       chan struct{}
	// logFailedCh is closed when a standalone server's log failed to write
	// (see latchedLog).
	logFailedCh     chan struct{}
	logFailReported atomic.Bool
	// leaderFoundGone wakes watchLeadership when a probe finds it gone.
	leaderFoundGone chan struct{}
	// members are the current members (see membership.go); reconciling
	// and reconcileAgain coordinate bringing Raft's configuration in line.
	members                     atomic.Pointer[[]Peer]
	known                       atomic.Pointer[[]Peer] // every member ever named (see idOf)
	reconciling, reconcileAgain atomic.Bool
	reloadMu                    sync.Mutex   // serializes changes to Raft's reloadable settings
	applyMu                     sync.RWMutex // guards applyClosed; held to read around each raft.Apply
	applyClosed                 bool
	unanswered                  atomic.Int64 // raft.Apply futures not yet answered

	mu           sync.Mutex // guards the fields below
	closed       bool
	touched      map[int64]struct{}    // sessions seen here since the last report to the leader
	lastHeard    map[int]time.Time     // when each member last reported to this (leading) member
	applied      map[int]uint64        // the zxid each member last reported applied to this (leading) member
	presence     map[int][]byte        // each member's last description to this (leading) member (view.go)
	presenceSent time.Time             // when this member last described itself to a leader
	presenceTo   int                   // the leader it described itself to
	present      map[int]bool          // the members in touch with this (leading) member (heardFrom)
	absent       map[int]bool          // the members this (leading) member logged lost (checkPresent)
	lostReported time.Time             // when checkPresent last logged which members are still lost
	peerConns    map[net.Conn]struct{} // inbound member connections

	zmu      sync.Mutex // guards zwaiters
	zwaiters []zxidWaiter
	zcount   atomic.Int32 // len(zwaiters), read without the lock

	stats Stats // figures for mntr and /metrics

	quit     chan struct{} // closed when stopping begins
	stopOnce sync.Once
	group    owned.Group
}

// New returns a node that replicates fsm, not yet started. cfg must be
// valid and have its defaults filled in (the server does both).
func New(cfg Config, fsm *raftfsm.FSM, host Host) *Node {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		cfg: cfg, log: cfg.Logger, fsm: fsm, host: host,
		futures:         make(chan proposal, 8192),
		servingCh:       make(chan struct{}),
		leaderCh:        make(chan struct{}),
		changedCh:       make(chan struct{}),
		leaderFoundGone: make(chan struct{}, 1),
		logFailedCh:     make(chan struct{}),
		caughtUpCh:      make(chan struct{}, 1),
		touched:         make(map[int64]struct{}),
		lastHeard:       make(map[int]time.Time),
		applied:         make(map[int]uint64),
		presence:        make(map[int][]byte),
		present:         make(map[int]bool),
		absent:          make(map[int]bool),
		peerConns:       make(map[net.Conn]struct{}),
		quit:            make(chan struct{}),
	}
	now := time.Now().UnixNano() // a member starts neither serving nor knowing a leader
	n.offAt.Store(now)
	n.leaderlessAt.Store(now)
	n.fwd = &forwarder{n: n}
	servers, known := slices.Clone(cfg.Servers), slices.Clone(cfg.Servers)
	n.members.Store(&servers)
	n.known.Store(&known)
	if cfg.Clustered() {
		n.notices = &commitNotices{}
		base := uint64(digestBase)
		if cfg.digestBase > 0 {
			base = cfg.digestBase
		}
		n.digests = newDigests(base)
	}
	return n
}

// others returns the other members.
func (n *Node) others() []Peer {
	var out []Peer
	for _, p := range n.servers() {
		if p.ID != n.cfg.ServerID {
			out = append(out, p)
		}
	}
	return out
}

// Start starts Raft and what a member runs besides it. A standalone
// server returns once it leads and serves; a cluster member once Raft
// runs (Serving reports when a leader is known).
func (n *Node) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n.started = time.Now()
	n.servingMu.Lock()
	n.stats.notServingSince = time.Now() // until it first serves
	n.servingMu.Unlock()
	mem, err := n.startRaft(ctx)
	if err != nil {
		return err
	}
	n.goOwned("futures", n.waitFutures)
	n.goOwned("snapshots", func() { n.tuneSnapshots(mem) })
	if n.scrubber != nil {
		n.goOwned("scrub", n.scrub)
		n.goOwned("watermark", n.raiseMark)
	}
	if !n.cfg.Clustered() {
		n.host.Elected()
		n.stats.leaderSince.Store(time.Now().UnixNano())
		n.markJoined()
		n.leading.Store(true)
		n.setServing(true, "")
		// A failure since Raft led (its first entry's write) found the
		// server not serving yet: standaloneLogFailed left it so.
		if n.logBroken() {
			return n.errLogFailed()
		}
		return nil
	}
	self, _ := n.cfg.Self()
	ln := n.cfg.ForwardListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", self.ForwardAddr); err != nil {
			return fmt.Errorf("listen for forwarding on %s: %w", self.ForwardAddr, err)
		}
	}
	pl := &peerListener{Listener: ln, self: n.cfg.ServerID, links: n.cfg.Links}
	n.closers = append(n.closers, pl)
	n.goOwned("forward-accept", func() { n.acceptForwards(pl) })
	if g := n.trans.guard; g != nil {
		n.goOwned("log-survey", func() { n.surveyLogs(g) })
		// A member that started with nothing stored settles its floor in
		// the log survey (surveyFreshTerms).
		if lost, floor := n.voteLost(); lost && floor == noFloor && !g.votesUnknown {
			n.goOwned("term-survey", func() { n.surveyTerms(g) })
		}
	}
	n.notices.start(n)
	n.goOwned("leadership", n.watchLeadership)
	n.goOwned("touches", n.reportTouches)
	return nil
}

// goOwned runs f on a goroutine Wait waits for. It refuses (returns false)
// once stopping has begun.
func (n *Node) goOwned(name string, f func()) bool { return n.group.Go(name, f) }

// Stop closes the links to other members, waits until Raft has answered
// every proposal, and shuts Raft and the stores down. Wait waits for the
// node's goroutines.
func (n *Node) Stop() {
	n.stopOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		close(n.quit)
		n.mu.Unlock()
		n.group.Close()
		n.closePeers()
		if n.stream != nil {
			// Raft's RPCs in flight end now, rather than at the transport's
			// timeout: a peer that stopped answering (a paused or dead
			// member) must not hold up the shutdown.
			n.stream.Close()
		}
		if r := n.raftNow(); r != nil {
			n.stopProposing()
			if err := r.Shutdown().Error(); err != nil {
				n.log.Error("raft shutdown", "err", err)
			}
		}
		for i := len(n.closers) - 1; i >= 0; i-- {
			if err := n.closers[i].Close(); err != nil {
				n.log.Error("close", "err", err)
			}
		}
	})
}

// Wait waits for the node's goroutines to end after Stop.
func (n *Node) Wait() { n.group.Wait() }

// Running adds the node's goroutines still running, by name, to into.
func (n *Node) Running(into map[string]int) map[string]int { return n.group.Running(into) }

// closePeers closes member connections: inbound forwards and the link to
// the leader.
func (n *Node) closePeers() {
	n.fwd.closeAll()
	n.mu.Lock()
	peers := make([]net.Conn, 0, len(n.peerConns))
	for nc := range n.peerConns {
		peers = append(peers, nc)
	}
	n.mu.Unlock()
	for _, nc := range peers {
		nc.Close()
	}
}

// IsLeader reports whether this member's Raft leads (a standalone server's
// always does once started).
func (n *Node) IsLeader() bool {
	r := n.raftNow()
	return r != nil && r.State() == raft.Leader
}

// raftNow returns this member's Raft, nil before Start made it. It is read
// atomically because Raft's own goroutines (the apply, the transport) may
// ask before Start returns.
func (n *Node) raftNow() *raft.Raft { return n.running.Load() }

// Leading reports whether this member leads and has given every session a
// fresh deadline (Host.Elected): only then may it expire sessions.
func (n *Node) Leading() bool { return n.leading.Load() && n.IsLeader() }

// Serving reports whether the member serves clients: a cluster member that
// has known no leader for a while does not.
func (n *Node) Serving() bool { return n.serving.Load() }

// Looking returns how long the member has gone neither serving nor knowing
// a leader, as a ZooKeeper server is LOOKING: 0 while it serves, or while
// it knows a leader and catches up with it before it serves again.
func (n *Node) Looking() time.Duration {
	if n.serving.Load() {
		return 0
	}
	leaderless := n.leaderlessAt.Load()
	if leaderless == 0 {
		return 0
	}
	return max(time.Since(time.Unix(0, max(leaderless, n.offAt.Load()))), time.Nanosecond)
}

// Admit reports whether a new client may connect: yes while the member
// serves. A member that has not served yet (it is starting, and its
// cluster electing) waits up to d for it; one that stopped serving because
// it lost its leader refuses at once, as a LOOKING ZooKeeper server does,
// so that the client tries another.
func (n *Node) Admit(d time.Duration) bool {
	if n.serving.Load() {
		return true
	}
	if n.served.Load() {
		return false
	}
	return n.waitClosed(&n.servingCh, d, nil)
}

// Mode returns the member's state as ZooKeeper's srvr prints it:
// standalone, leader, follower or observer.
func (n *Node) Mode() string {
	switch {
	case !n.cfg.Clustered():
		return "standalone"
	case n.IsLeader():
		return "leader"
	}
	if self, _ := n.self(); self.Observer {
		return "observer"
	}
	return "follower"
}

// SyncedLearners counts the followers and observers that reported to this
// leader within the last two ticks.
func (n *Node) SyncedLearners() (followers, observers int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, at := range n.lastHeard {
		p, ok := n.peer(id)
		if !ok || id == n.cfg.ServerID || time.Since(at) > 2*n.cfg.TickTime {
			continue
		}
		if p.Observer {
			observers++
		} else {
			followers++
		}
	}
	return followers, observers
}

// Raft returns the member's Raft node, nil before Start (tests, tools).
func (n *Node) Raft() *raft.Raft { return n.raftNow() }

// Config returns the node's configuration.
func (n *Node) Config() *Config { return &n.cfg }
