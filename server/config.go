package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/zkraft/zkraft/server/clock"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/wire"
)

// Config is a server's configuration. Each field is named after the zoo.cfg
// key it comes from where there is one; a zero value means ZooKeeper's
// default, filled in by New (or DefaultConfig).
type Config struct {
	// TickTime is ZooKeeper's basic time unit (zoo.cfg tickTime): session
	// timeouts are bounded by multiples of it and sessions expire on its
	// boundaries. Default 2s, as in ZooKeeper's sample zoo.cfg.
	TickTime time.Duration
	// SyncLimit is how many ticks a cluster member goes without a leader
	// (or a leader without a quorum) before it drops its clients and refuses
	// new ones until a leader is back, as a ZooKeeper member that has been
	// out of touch for syncLimit ticks goes LOOKING (zoo.cfg syncLimit).
	// Shorter elections keep the clients. Default 5, as in ZooKeeper's
	// sample zoo.cfg.
	SyncLimit int
	// InitLimit is zoo.cfg initLimit, in ticks: how long a ZooKeeper
	// follower may take to connect and sync. Raft needs no such bound (a
	// follower catches up through AppendEntries and snapshots for as long
	// as it takes); zkraft only reports it, in conf. Default 10, as in
	// ZooKeeper's sample zoo.cfg.
	InitLimit int
	// ReadOnlyMode lets a member that does not serve (no leader for
	// syncLimit ticks) take clients that allow read-only, with sessions of
	// its own: reads are served, sync and writes answered NOTREADONLY
	// (readonlymode.enabled, which ZooKeeper 3.8 reads as a system property
	// and zkraft also from zoo.cfg; ZooKeeper needs localSessionsEnabled
	// too, which read-only sessions here always are).
	ReadOnlyMode bool
	// MinSessionTimeout and MaxSessionTimeout bound the negotiated session
	// timeout. Defaults: 2 and 20 times TickTime.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// ClientPortAddress is the host:port clients connect to (zoo.cfg
	// clientPortAddress and clientPort). Default 127.0.0.1:2181; use
	// 127.0.0.1:0 for a port chosen by the OS.
	ClientPortAddress string
	// MaxClientCnxns limits concurrent connections from one client IP.
	// 0 means ZooKeeper's default of 60; negative means no limit (zoo.cfg
	// maxClientCnxns=0).
	MaxClientCnxns int
	// ClientTCPKeepAlive turns TCP keepalive on for client connections,
	// with the system's timings (zoo.cfg clientTcpKeepAlive, ZooKeeper's
	// zookeeper.clientTcpKeepAlive). Off by default, as in ZooKeeper: a
	// session's pings and its timeout find a client that has gone. (Go's
	// own default turns it on with four system calls per accept.) Applies
	// to the listener the server opens, not to Config.ClientListener.
	ClientTCPKeepAlive bool
	// FourLetterWords lists the four-letter words the server answers
	// (4lw.commands.whitelist); "*" allows all. Default: srvr only. A word
	// not listed is answered with ZooKeeper's "not in the whitelist" text.
	FourLetterWords []string
	// SessionlessCnxnTimeout bounds how long a connection may take to send
	// its connect request (zookeeper.nio.sessionlessCnxnTimeout). Counted
	// from the accept: unlike ZooKeeper, which counts from the last byte
	// read, a client trickling a byte at a time is closed all the same.
	// Default 10s.
	SessionlessCnxnTimeout time.Duration
	// JuteMaxBuffer is the largest frame accepted from a client, in bytes
	// (jute.maxbuffer). Default 0xfffff.
	JuteMaxBuffer int
	// MaxQueuedBytes bounds the replies and notifications that may wait for
	// a client that does not read them; past it the client is disconnected,
	// so one stuck client cannot make the server's memory grow without end.
	// Default 128 MiB, room for the largest replies (a getChildren of a node
	// with very many children).
	MaxQueuedBytes int
	// ExtendedTypesEnabled allows TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypesEnabled bool
	// ReconfigEnabled allows the reconfig request (zoo.cfg's
	// reconfigEnabled): members may then be added and removed while the
	// cluster runs. Only a super user may reconfig, as in ZooKeeper, whose
	// /zookeeper/config no one else may write.
	ReconfigEnabled bool
	// ContainerCheckInterval is how often empty containers and expired TTL
	// nodes are looked for (znode.container.checkIntervalMs). Default 60s.
	ContainerCheckInterval time.Duration
	// ContainerMaxPerMinute bounds container and TTL deletions per minute
	// (znode.container.maxPerMinute). Default 10000.
	ContainerMaxPerMinute int
	// SuperDigest is "super:<base64 sha1>" as made by ZooKeeper's
	// DigestAuthenticationProvider (zookeeper.DigestAuthenticationProvider.superDigest):
	// a connection that adds digest auth matching it is a superuser, which
	// passes every ACL check. Empty means no superuser.
	SuperDigest string
	// ServerID is this member's id (myid); 1..254. Default 1.
	ServerID int
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Servers lists the members of a cluster (zoo.cfg server.N). Empty
	// means a standalone server. ServerID names this member among them.
	Servers []Peer
	// DataDir holds snapshots, and the Raft log unless DataLogDir is set
	// (zoo.cfg dataDir, where ZooKeeper keeps snapshots and myid). Empty
	// means in memory: a restarted member starts empty and is caught up by
	// the leader.
	DataDir string
	// DataLogDir, when set, holds the Raft log and stable store instead of
	// DataDir (zoo.cfg dataLogDir, where ZooKeeper keeps its transaction log).
	DataLogDir string
	// LogStore is where a durable member keeps its Raft log: LogStoreWAL
	// (hashicorp's raft-wal, segment files; the default) or LogStoreBolt
	// (raft-boltdb, one file; the default before 2026-11-27, about half
	// the write throughput here, see the README). A data log dir that
	// already holds a log keeps its kind, whatever this says (zoo.cfg
	// zkraft.logStore; no ZooKeeper key).
	LogStore string
	// SnapCount is how many log entries a durable member writes between
	// snapshots (zookeeper.snapCount). Default 100000.
	SnapCount int
	// SnapRetainCount is how many snapshots a durable member keeps
	// (autopurge.snapRetainCount). Default 3, the minimum.
	SnapRetainCount int
	// RaftTimeout is the Raft heartbeat and election timeout: how long a
	// cluster member hears nothing from its leader before it suspects it
	// (Raft stands after one to two of them). Default: 5ms for a standalone
	// server, whose single-member Raft never competes in an election, and
	// half of syncLimit ticks for a cluster member (5s with ZooKeeper's
	// sample zoo.cfg), so that a member or leader that is merely slow, on a
	// busy machine, is not suspected, as a ZooKeeper follower waits
	// syncLimit ticks. A member that dies is noticed sooner, from its
	// broken connections: see server/member's failover notes.
	RaftTimeout time.Duration
	// LeaderLease is how long a cluster's leader keeps office without
	// hearing from a majority before it steps down. Default: RaftTimeout,
	// which is also the most it may be.
	LeaderLease time.Duration
	// ClientListener, RaftListener and ForwardListener, when set, are bound
	// listeners used instead of listening on ClientPortAddress and on this
	// member's addresses in Servers: for callers that pick ports with
	// 127.0.0.1:0 and must know them all before configuring the members.
	ClientListener, RaftListener, ForwardListener net.Listener
	// Links, when set, carries every connection between members, so that a
	// test can cut them (Links.Partition) to provoke partitions.
	Links *Links
	// PeerVia dials a member's Raft or forwarding address, as Servers
	// names it, at another address: a proxy in front of that member (a
	// fault-injecting harness such as zkchaos places one on each link) or a
	// port forward. Nothing else changes: the member listens, and the
	// configuration names it, as before.
	PeerVia map[string]string
	// Clock is where the server reads the time (default the machine's):
	// wall time for ctime, mtime and TTLs, elapsed time for session
	// deadlines. Fault tests step a member's wall clock with a
	// clock.Steppable.
	Clock clock.Clock
	// RequestHook, when set, sees each client request (pings included)
	// before the server handles it, and may delay, hold, fail or lose it:
	// servertest's fault rules and paused members. It also sees each
	// connect request (as OpCreateSession, with the session it resumes),
	// of whose Fault only Delay and Hold apply. It must be safe for
	// concurrent use.
	RequestHook RequestHook
}

// RequestHook decides what fault, if any, a client request meets.
type RequestHook interface {
	Request(RequestInfo) Fault
}

// RequestInfo is what a RequestHook knows of a request.
type RequestInfo struct {
	Member  int     // the server id of the member the client is on
	Session int64   // the client's session
	Op      wire.Op // the opcode
	Path    string  // the path the request names first ("" for a multi, auth or setWatches)
}

// Fault is what befalls a request; the zero Fault is none.
type Fault struct {
	// Delay holds the request back before it is handled (and, since a
	// session's requests are answered in order, those after it).
	Delay time.Duration
	// Hold, when not nil, holds the request back until it is closed (as a
	// stopped process would), after Delay; the rest of the Fault then
	// applies.
	Hold <-chan struct{}
	// Fail answers the request with this error code, unhandled.
	Fail wire.Code
	// CloseBefore closes the connection instead of handling the request.
	CloseBefore bool
	// LoseReply handles the request (a write is applied) but closes the
	// connection instead of sending its reply: the client sees its
	// connection lost, and cannot tell whether the request took effect.
	LoseReply bool
}

// Peer is one member of a cluster: zoo.cfg's server.N=host:port1:port2.
type Peer = member.Peer

// Links is a switchboard for the connections between the members of a
// cluster in one process: a test cuts and restores them to provoke
// partitions (see member.Links).
type Links = member.Links

// Degradation is how a degraded link between members misbehaves: delayed
// and lost messages (see member.Degradation).
type Degradation = member.Degradation

// The Raft log stores a durable server may use (Config.LogStore).
const (
	LogStoreBolt = member.LogStoreBolt
	LogStoreWAL  = member.LogStoreWAL
)

// NewLinks returns a switchboard with every link up.
func NewLinks() *Links { return member.NewLinks() }

// clustered reports whether the server is a member of a cluster.
func (c *Config) clustered() bool { return len(c.Servers) > 0 }

// memberConfig is what the membership side needs of the configuration.
func (c *Config) memberConfig() member.Config {
	return member.Config{
		ServerID: c.ServerID, Servers: c.Servers, TickTime: c.TickTime, SyncLimit: c.SyncLimit, RaftTimeout: c.RaftTimeout,
		LeaderLease: c.LeaderLease, DataDir: c.DataDir, DataLogDir: c.DataLogDir, LogStore: c.LogStore, SnapCount: c.SnapCount, SnapRetainCount: c.SnapRetainCount,
		RaftListener: c.RaftListener, ForwardListener: c.ForwardListener, Links: c.Links, PeerVia: c.PeerVia, Logger: c.Logger,
	}
}

// Defaults.
const (
	DefaultTickTime               = 2 * time.Second
	DefaultSyncLimit              = 5
	DefaultInitLimit              = 10
	DefaultClientPortAddress      = "127.0.0.1:2181"
	DefaultMaxClientCnxns         = 60
	DefaultContainerCheckInterval = time.Minute
	DefaultContainerMaxPerMinute  = 10000
	DefaultMaxQueuedBytes         = 128 << 20
	DefaultSessionlessCnxnTimeout = 10 * time.Second
)

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	var c Config
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	if c.TickTime == 0 {
		c.TickTime = DefaultTickTime
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.SyncLimit == 0 {
		c.SyncLimit = DefaultSyncLimit
	}
	if c.InitLimit == 0 {
		c.InitLimit = DefaultInitLimit
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.ClientPortAddress == "" {
		c.ClientPortAddress = DefaultClientPortAddress
	}
	if c.MaxClientCnxns == 0 {
		c.MaxClientCnxns = DefaultMaxClientCnxns
	}
	if c.FourLetterWords == nil {
		c.FourLetterWords = []string{"srvr"}
	}
	if c.SessionlessCnxnTimeout == 0 {
		c.SessionlessCnxnTimeout = DefaultSessionlessCnxnTimeout
	}
	if c.JuteMaxBuffer == 0 {
		c.JuteMaxBuffer = wire.MaxBuffer
	}
	if c.MaxQueuedBytes == 0 {
		c.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if c.ContainerCheckInterval == 0 {
		c.ContainerCheckInterval = DefaultContainerCheckInterval
	}
	if c.ContainerMaxPerMinute == 0 {
		c.ContainerMaxPerMinute = DefaultContainerMaxPerMinute
	}
	if c.ServerID == 0 {
		c.ServerID = 1
	}
	if c.RaftTimeout == 0 {
		c.RaftTimeout = 5 * time.Millisecond
		if c.clustered() {
			c.RaftTimeout = max(time.Duration(c.SyncLimit)*c.TickTime/2, 5*time.Millisecond)
		}
	}
	if c.SnapCount == 0 {
		c.SnapCount = 100000
	}
	if c.SnapRetainCount < 3 {
		c.SnapRetainCount = 3
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every setting that cannot work, after defaults are applied.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("server: "+format, args...)) }
	if c.TickTime < time.Millisecond {
		bad("tickTime %v is below 1ms", c.TickTime)
	}
	if c.SyncLimit < 1 {
		bad("syncLimit %d is below 1", c.SyncLimit)
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		bad("minSessionTimeout %v is above maxSessionTimeout %v", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if _, _, err := net.SplitHostPort(c.ClientPortAddress); err != nil {
		bad("clientPortAddress %q: %w", c.ClientPortAddress, err)
	}
	if c.LogStore != "" && c.LogStore != LogStoreBolt && c.LogStore != LogStoreWAL {
		bad("log store %q: want %q or %q", c.LogStore, LogStoreBolt, LogStoreWAL)
	}
	if c.SessionlessCnxnTimeout < time.Millisecond {
		bad("sessionlessCnxnTimeout %v is below 1ms", c.SessionlessCnxnTimeout)
	}
	if c.JuteMaxBuffer < 1024 {
		bad("jute.maxbuffer %d is below 1024", c.JuteMaxBuffer)
	}
	if c.ServerID < 1 || c.ServerID > 254 {
		bad("server id %d is outside 1..254", c.ServerID)
	}
	if c.SuperDigest != "" && !strings.Contains(c.SuperDigest, ":") {
		bad("superDigest %q is not user:base64(sha1(user:password))", c.SuperDigest)
	}
	errs = append(errs, c.validateServers()...)
	if c.LeaderLease < 0 || c.RaftTimeout > 0 && c.LeaderLease > c.RaftTimeout {
		bad("leader lease %v is not between 0 and the raft timeout %v", c.LeaderLease, c.RaftTimeout)
	}
	if c.RaftTimeout < 5*time.Millisecond {
		bad("raft timeout %v is below 5ms", c.RaftTimeout)
	}
	return errors.Join(errs...)
}

// fourLetterAllowed reports whether the whitelist allows word.
func (c *Config) fourLetterAllowed(word string) bool {
	return slices.Contains(c.FourLetterWords, "*") || slices.Contains(c.FourLetterWords, word) ||
		word == "srvr" // ZooKeeper always allows srvr
}

// ParseFourLetterWords splits a 4lw.commands.whitelist value ("srvr, ruok" or "*").
func ParseFourLetterWords(v string) []string {
	var out []string
	for w := range strings.SplitSeq(v, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

func (c *Config) validateServers() []error {
	if !c.clustered() {
		return nil
	}
	var errs []error
	seen := make(map[int]bool)
	for _, p := range c.Servers {
		if p.ID < 1 || p.ID > 254 || seen[p.ID] {
			errs = append(errs, fmt.Errorf("server: server.%d: ids must be distinct, 1..254", p.ID))
		}
		seen[p.ID] = true
		for _, a := range []string{p.RaftAddr, p.ForwardAddr} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				errs = append(errs, fmt.Errorf("server: server.%d address %q: %w", p.ID, a, err))
			}
		}
	}
	if !seen[c.ServerID] {
		errs = append(errs, fmt.Errorf("server: this member's id %d is not among the servers", c.ServerID))
	}
	if mc := c.memberConfig(); mc.Voters() == 0 {
		errs = append(errs, errors.New("server: a cluster needs at least one voting member"))
	}
	return errs
}
