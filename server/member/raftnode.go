package member

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/server/internal/hclogslog"
	"github.com/zkraft/zkraft/server/raftstore"
	"github.com/zkraft/zkraft/tree"
)

// minSnapshotThreshold is the fewest log entries between snapshots of an
// in-memory member.
const minSnapshotThreshold = 32768

// startRaft starts this member's Raft node: a single voter for a
// standalone server (which waits until it leads), or a member of the
// configured cluster (which returns once Raft runs).
func (n *Node) startRaft(ctx context.Context) (*memStores, error) {
	conf := n.raftConfig()
	logs, stable, snaps, err := n.raftStores(conf.Logger)
	if err != nil {
		return nil, err
	}
	var mem *memStores
	if l, ok := logs.(*memLog); ok {
		mem = &memStores{log: l, snaps: snaps.(*memSnapshotStore)}
	}
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return nil, fmt.Errorf("inspect raft state in %s: %w", n.cfg.DataDir, err)
	}
	var overlap *overlapLog
	if n.cfg.DataDir != "" {
		if n.cfg.wrapLogStore != nil {
			logs = n.cfg.wrapLogStore(logs)
		}
		logs = timedLogStore{LogStore: logs, stats: &n.stats}
		if n.cfg.Clustered() {
			// A standalone leader has no one to send to while it writes,
			// and no one to answer.
			if overlap, err = newOverlapLog(logs); err != nil {
				return nil, fmt.Errorf("open raft log in %s: %w", n.cfg.DataDir, err)
			}
			n.closers = append(n.closers, overlap) // closed before the store
			logs = overlap
			n.durableLog = overlap
		} else {
			latch := &latchedLog{LogStore: logs, onFail: func() {
				close(n.logFailedCh)
				n.goOwned("log-failed", n.standaloneLogFailed)
			}}
			logs = latch
			n.durableLog = latch
		}
	}
	trans, bootstrap, err := n.raftTransport(!existing, overlap)
	if err != nil {
		return nil, err
	}
	if n.trans != nil {
		logs = notifyingStore{LogStore: logs, t: n.trans}
	}
	if n.cfg.DataDir != "" {
		// Outermost: the entries Raft hands it are the ones it then sends
		// and applies, so they are sealed before any of that.
		checked := raftstore.NewCheckedLog(logs, n.damagedRead)
		checked.Marks, checked.SealedFrom = n.vote, n.sealedFrom
		if n.cfg.Clustered() {
			checked.Fetch = n.fetchEntry
		}
		logs = checked
		n.raftLog = logs
	}
	snaps = timedSnapshots{SnapshotStore: snaps, stats: &n.stats}
	if !existing {
		if err := raft.BootstrapCluster(conf, logs, stable, snaps, trans, bootstrap); err != nil {
			return nil, fmt.Errorf("bootstrap raft: %w", err)
		}
	}
	// A standalone in-memory server's snapshots are never read: no member
	// is sent one, and it restarts empty. They only let Raft drop its
	// log, so they capture nothing (unreadSnapshot) and come often.
	nf := notifyingFSM{FSM: n.fsm, committed: n.committed, unread: mem != nil && !n.cfg.Clustered()}
	if n.cfg.DataDir != "" {
		nf.check, nf.failed = n.applyCheck, n.storeFailed
	}
	if n.digests != nil {
		nf.batch = n.applyDigested
	}
	if overlap != nil {
		nf.durable = func(index uint64) bool {
			// An entry a leader said is committed is on a majority's disks
			// (capCommit), whether or not on this member's yet: a follower
			// applies it while it writes. Not once a write failed: nothing
			// is applied past an entry skipped (see waitDurable).
			if index <= n.trans.leaderCommit.Load() && overlap.failed() == nil { // a clustered member has n.trans
				return true
			}
			return overlap.waitDurable(index, n.quit)
		}
		nf.flushed, nf.applied = overlap.flushTo, new(atomic.Uint64)
	}
	fsm := loggedFSM{nf, n}
	start := time.Now()
	r, err := raft.NewRaft(conf, fsm, logs, stable, loggedSnapshots{snaps}, trans) // restores the newest snapshot
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.stats.DBInit.Add(time.Since(start).Milliseconds())
	n.running.Store(r)
	if n.trans != nil {
		n.trans.setRaft(r)
	}
	if !n.cfg.Clustered() {
		// A single voter has no one to wait for: it stands for election now
		// instead of after a random one or two timeouts.
		if err := n.campaignNow(); err != nil {
			return nil, err
		}
		if err := n.waitLeader(ctx); err != nil {
			return nil, err
		}
		return mem, n.applyLog(ctx)
	}
	if !existing && n.firstVoter() {
		// A fresh cluster elects its first leader sooner if one member, the
		// voter with the lowest id, stands at once; the others keep their
		// random timeouts, so votes do not split. It stands once its vote
		// guard's first survey has settled whether it may (see
		// surveyFreshTerms): refused, it would wait out an election
		// timeout.
		if g := n.guard(); g != nil && g.votesUnknown {
			n.goOwned("first-campaign", func() {
				select {
				case <-g.surveyed:
				case <-n.quit:
					return
				}
				if err := n.campaignNow(); err != nil && !n.stopping() {
					n.log.Warn("stand for election", "err", err)
				}
			})
			return mem, nil
		}
		return mem, n.campaignNow()
	}
	return mem, nil
}

// standaloneLogFailed stops a standalone server whose log failed to write
// from serving (a cluster member's watchLeadership does that), and keeps
// its Raft from standing again: as the only voter it would win, fail to
// write its first entry and step down, again each election timeout.
func (n *Node) standaloneLogFailed() {
	n.logBroken()
	if n.raftNow() == nil {
		return // Start fails
	}
	if err := n.reloadConfig(func(rc *raft.ReloadableConfig) {
		rc.HeartbeatTimeout, rc.ElectionTimeout = neverStand, neverStand
	}); err != nil {
		n.log.Error("configure raft", "err", err)
	}
}

// neverStand is an election timeout long enough that Raft does not stand.
const neverStand = 1000 * time.Hour

// campaignNow makes this fresh member stand for election at once: Raft
// starts with doubled timeouts (raftConfig), and lowering them makes a
// follower that never heard from a leader check its timer immediately.
func (n *Node) campaignNow() error {
	if err := n.reloadConfig(func(rc *raft.ReloadableConfig) {
		rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.RaftTimeout, n.cfg.RaftTimeout
	}); err != nil {
		return fmt.Errorf("configure raft: %w", err)
	}
	return nil
}

// firstVoter reports whether this member is the voter with the lowest id.
func (n *Node) firstVoter() bool {
	for _, p := range n.cfg.Servers {
		if !p.Observer && p.ID < n.cfg.ServerID {
			return false
		}
	}
	self, _ := n.cfg.Self()
	return !self.Observer
}

func (n *Node) raftConfig() *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(strconv.Itoa(n.cfg.ServerID))
	conf.HeartbeatTimeout = n.cfg.RaftTimeout
	conf.ElectionTimeout = n.cfg.RaftTimeout
	conf.LeaderLeaseTimeout = n.leaseTimeout()
	// Members learn of commits from commit notices (see transport.go), so
	// Raft's own idle AppendEntries need not come often.
	conf.CommitTimeout = 50 * time.Millisecond
	if n.cfg.commitTimeout > 0 {
		conf.CommitTimeout = n.cfg.commitTimeout
	}
	if !n.cfg.Clustered() {
		conf.LeaderLeaseTimeout, conf.CommitTimeout = n.cfg.RaftTimeout, time.Millisecond
	}
	if !n.cfg.Clustered() || n.firstVoter() {
		// Start with twice the timeouts; campaignNow lowers them, which makes
		// a fresh follower check its timer at once.
		conf.HeartbeatTimeout, conf.ElectionTimeout = 2*n.cfg.RaftTimeout, 2*n.cfg.RaftTimeout
	}
	conf.MaxAppendEntries = 512
	conf.BatchApplyCh = true
	conf.ShutdownOnRemove = false
	conf.Logger = n.raftLogger()
	if n.cfg.DataDir == "" {
		// In memory, the Raft log only grows until a snapshot lets Raft drop
		// it; check often so that it stays short (see tuneSnapshots).
		conf.SnapshotInterval = 250 * time.Millisecond
		conf.SnapshotThreshold = minSnapshotThreshold
		if !n.cfg.Clustered() {
			conf.SnapshotThreshold = standaloneSnapshotThreshold
		}
		conf.TrailingLogs = standaloneTrailingLogs
	} else {
		// Checked often, so that a snapshot follows every SnapCount entries
		// closely, as ZooKeeper's does: a restart replays at most about
		// that many entries after the latest snapshot.
		conf.SnapshotInterval = 250 * time.Millisecond
		conf.SnapshotThreshold = uint64(n.cfg.SnapCount)
	}
	if n.cfg.Clustered() {
		conf.TrailingLogs = minTrailingLogs // see tuneTrailingLogs
	}
	return conf
}

// The newest entries of a durable member's log kept in memory.
const (
	cachedLogEntries = 1024
	cachedLogBytes   = 16 << 20
)

// raftStores returns the log, stable and snapshot stores: in memory, or
// under DataDir, opened and checked by raftstore (which repairs what it can
// of a cluster member's, knowing the others hold it, and refuses to lose
// what a standalone server acknowledged). What it found is logged and
// counted (noteStores).
func (n *Node) raftStores(logger hclog.Logger) (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	if n.cfg.DataDir == "" {
		store := newMemLog()
		return store, store, &memSnapshotStore{}, nil
	}
	if err := os.MkdirAll(n.cfg.DataDir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("create data dir: %w", err)
	}
	if err := n.cfg.misplacedLog(); err != nil {
		return nil, nil, nil, err
	}
	logDir := n.cfg.LogDir()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("create data log dir: %w", err)
	}
	kind := n.cfg.LogStoreKind()
	if n.cfg.LogStore != "" && kind != n.cfg.LogStore {
		n.log.Warn("keeping the Raft log store the data log dir already holds", "configured", n.cfg.LogStore, "found", kind)
	}
	stores, err := raftstore.Open(raftstore.Config{Kind: kind, LogPath: n.cfg.LogPath(), LogDir: logDir,
		DataDir: n.cfg.DataDir, RetainSnapshots: n.cfg.SnapRetainCount, Logger: logger, Repair: n.cfg.Clustered()})
	if err != nil {
		if errors.Is(err, raftstore.ErrUnrecoverable) {
			return nil, nil, nil, fmt.Errorf("%w; a standalone server has no other member to repair it from: "+
				"restore %s from a backup, or move its damaged files aside to start without the writes they held", err, n.cfg.DataDir)
		}
		return nil, nil, nil, err
	}
	n.closers = append(n.closers, stores)
	n.noteStores(stores)
	snaps := raftstore.NewCheckedSnapshots(stores.Snapshots, n.cfg.DataDir, n.noteFinding, n.snapshotDamaged)
	n.scrubber = &scrubber{log: stores.Log, snaps: snaps, rate: scrubRate, every: scrubInterval, first: scrubStart,
		passes: make(chan struct{}, 1)}
	if n.cfg.scrub != nil {
		n.cfg.scrub(n.scrubber)
	}
	logs := newLogCache(stores.Log, cachedLogEntries, cachedLogBytes)
	return logs, stores.Vote, snaps, nil
}

// raftTransport returns the transport and the configuration to bootstrap:
// in memory for a standalone server, TCP between the members of a cluster.
// A durable member's log (overlap) caps the commit index it tells others
// and holds its answers to AppendEntries (see heldAnswer), from the first
// connection on.
func (n *Node) raftTransport(empty bool, overlap *overlapLog) (raft.Transport, raft.Configuration, error) {
	id := raft.ServerID(strconv.Itoa(n.cfg.ServerID))
	if !n.cfg.Clustered() {
		addr, trans := raft.NewInmemTransport(raft.ServerAddress("zkraft-" + string(id)))
		return trans, raft.Configuration{Servers: []raft.Server{{ID: id, Address: addr}}}, nil
	}
	self, _ := n.cfg.Self()
	ln := n.cfg.RaftListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", self.RaftAddr); err != nil {
			return nil, raft.Configuration{}, fmt.Errorf("listen for raft on %s: %w", self.RaftAddr, err)
		}
	}
	stream := &raftStream{
		ln: &peerListener{Listener: ln, self: n.cfg.ServerID, links: n.cfg.Links}, advertise: tcpAddr(self.RaftAddr),
		self: n.cfg.ServerID, links: n.cfg.Links, via: n.cfg.PeerVia, idOf: n.idOf,
		// The leader's Raft connections to this member break when it dies.
		broken: n.leaderLinkBroken, spawn: n.goOwned, quit: n.quit, older: n.cfg.olderPeerNet,
	}
	var conf raft.Configuration
	for _, p := range n.cfg.Servers {
		suffrage := raft.Voter
		if p.Observer {
			suffrage = raft.Nonvoter
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: suffrage,
			ID: raft.ServerID(strconv.Itoa(p.ID)), Address: raft.ServerAddress(p.RaftAddr)})
	}
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: []byte(self.RaftAddr)}
	// A member that starts with nothing stored (in memory, or a durable
	// one whose data dir is new or was wiped) must not vote a stale
	// candidate in: see voteguard.go. One that kept its log votes as Raft
	// does.
	// So must one that may have lost entries it acknowledged to a damaged
	// disk, or its term and vote record (see damage.go).
	var guard *voteGuard
	if lost, floor := n.voteLost(); empty || n.lostFrom > 0 || lost {
		guard = newVoteGuard(header, n.log)
		guard.damaged, guard.lostEnd = n.lostFrom > 0, n.lostEnd
		guard.repairing.Store(n.lostFrom > 0)
		switch {
		case lost:
			guard.floor.Store(floor)
		case empty:
			// Nothing stored may also mean a vote forgotten: a wiped data
			// dir, or a member in memory restarted, may have voted before
			// in a term the others are still in (surveyFreshTerms).
			guard.floor.Store(noFloor)
			guard.votesUnknown = true
			if n.vote != nil {
				if err := n.vote.SetVoteFloor(noFloor); err != nil {
					return nil, raft.Configuration{}, fmt.Errorf("record that this member's votes are unknown: %w", err)
				}
			}
		}
	}
	// The transport is made before Raft's network transport starts
	// accepting: an AppendEntries connection that comes at once is served,
	// not refused as a member of an older zkraft would refuse it.
	pt := newPeerTransport(nil, stream, header, guard, n.quit, n.cfg.RaftTimeout, n.log)
	pt.olderNet, pt.spawn = n.cfg.olderPeerNet, n.goOwned
	if overlap != nil {
		pt.capCommit, pt.hold = overlap.capCommit, overlap
	}
	pt.NetworkTransport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: maxPooledConns, Timeout: peerIOTimeout, Logger: n.raftLogger(),
	})
	n.closers = append(n.closers, pt.NetworkTransport)
	n.stream = stream
	if !n.goOwned("raft-transport", pt.run) {
		return nil, raft.Configuration{}, ErrClosed
	}
	n.trans = pt
	return pt, conf, nil
}

// waitLeader waits until this member leads.
func (n *Node) waitLeader(ctx context.Context) error {
	obs := make(chan raft.Observation, 4)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raftNow().RegisterObserver(observer)
	defer n.raftNow().DeregisterObserver(observer)
	for n.raftNow().State() != raft.Leader {
		select {
		case <-obs:
		case <-n.logFailedCh:
			return n.errLogFailed()
		case <-ctx.Done():
			return fmt.Errorf("wait for raft leadership: %w", ctx.Err())
		}
	}
	return nil
}

// applyLog waits until a standalone server that just led has applied its
// whole log: what a durable server's log holds past its newest snapshot
// Raft applies only once the leader's first entry commits, and until then
// its clients would read the tree as it was at that snapshot, where
// ZooKeeper reads its whole log before it serves. A barrier is applied
// after everything before it.
func (n *Node) applyLog(ctx context.Context) error {
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := n.raftNow().Barrier(timeout).Error(); err != nil {
		if n.durableLog != nil && n.durableLog.failed() != nil {
			return n.errLogFailed()
		}
		return fmt.Errorf("apply the raft log: %w", err)
	}
	return nil
}

// errLogFailed is what Start returns when a standalone server's log failed
// to write as it started (its Raft's first entry, say).
func (n *Node) errLogFailed() error {
	return fmt.Errorf("the Raft log in %s failed to write: %w", n.cfg.DataDir, n.durableLog.failed())
}

// raftLogger bridges hashicorp/raft's hclog logging into the server's slog
// handler: each line keeps its level, message and fields, with
// component=raft. Raft logs at Info on every election, where the member
// logs the events that matter itself (leader elected, leader lost), so
// Raft's Info and below pass only when the handler is enabled for
// debugging. Warnings and errors keep their level, but for those that
// are expected where they come (expectedRaftLine), logged at Debug.
func (n *Node) raftLogger() hclog.Logger {
	ctx := context.Background()
	if !n.log.Enabled(ctx, slog.LevelError) {
		return hclog.NewNullLogger()
	}
	level := hclog.Warn
	if n.log.Enabled(ctx, slog.LevelDebug) {
		level = hclog.Debug
	}
	return hclogslog.New(n.log.Handler(), hclogslog.Options{Name: "raft", Level: level,
		Relevel: func(l hclog.Level, msg string) slog.Level {
			if l >= hclog.Warn && n.expectedRaftLine(msg) {
				return slog.LevelDebug
			}
			return hclogslog.Level(l)
		}})
}

// expectedRaftLine reports whether a warning or error Raft logs is
// expected where it comes, and would only alarm: the first election, while
// the member starts (until syncLimit ticks after Start, as long as a
// member may go without a leader before it stops serving): a standalone
// server elects itself at every start, and the members of a cluster that
// start together miss each other's first vote requests; or Raft's
// listener closing under it as the member stops; or a leader's heartbeat
// or append failing to reach a member, again and again while it is down,
// which the member logs once as "member lost" (checkPresent). Past the
// start, an election means the leader was lost, which the member logs
// itself ("leader lost") and Raft at Warn.
func (n *Node) expectedRaftLine(msg string) bool {
	switch msg {
	case "heartbeat timeout reached, starting election", "Election timeout reached, restarting election",
		"failed to make requestVote RPC", "rejecting vote request since our last term is greater",
		"rejecting pre-vote request since our last term is greater":
		return time.Since(n.started) < n.quorumLossTimeout()
	case "failed to accept connection":
		return n.stopping()
	case "failed to heartbeat to", "failed to appendEntries to", "failed to pipeline appendEntries",
		"failed to start pipeline replication to", "failed to contact", "failed to send snapshot to":
		// Each heartbeat or append that fails to reach a member: the
		// member logs the member lost and back once each (checkPresent).
		return true
	}
	return false
}

// memStores are an in-memory member's log and snapshot store, which
// tuneSnapshots keeps within a budget in bytes.
type memStores struct {
	log   *memLog
	snaps *memSnapshotStore
}

// minLogBytes is the least an in-memory member's log may hold between
// snapshots, and behind the latest, in bytes (logBudget).
const minLogBytes = 32 << 20

// A standalone in-memory server's snapshots capture nothing (see
// unreadSnapshot), so it takes one every few thousand entries or MiB of
// log, and keeps little of the log behind it (no one reads it): its log
// stays a few MiB however large the tree, where a member that must be
// able to send its snapshot keeps a log in proportion to the tree.
const (
	standaloneTrailingLogs      = 1024
	standaloneSnapshotThreshold = 8192
	standaloneLogBytes          = 4 << 20
)

// tuneSnapshots keeps Raft's snapshot settings fitted to the state, four
// times a second, and at once when an in-memory log passes its budget:
// tuneThreshold, tuneTrailingLogs and, in memory, logBudget.
func (n *Node) tuneSnapshots(mem *memStores) {
	if mem == nil && !n.cfg.Clustered() {
		return
	}
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	var grown <-chan struct{}
	if mem != nil {
		grown = mem.log.grown
	}
	threshold, counted, trailing := uint64(minSnapshotThreshold), uint64(standaloneTrailingLogs), uint64(standaloneTrailingLogs)
	if n.cfg.Clustered() {
		counted, trailing = minTrailingLogs, minTrailingLogs
	}
	for {
		select {
		case <-n.quit:
			return
		case <-ticker.C:
		case <-grown:
		}
		var lags []uint64
		if n.cfg.Clustered() {
			lags = n.lags()
			counted = fitTrailingLogs(counted, lags)
		}
		want := counted
		if mem != nil {
			budget := int64(standaloneLogBytes)
			if n.cfg.Clustered() {
				threshold = n.tuneThreshold(threshold)
				budget = n.logBudget()
			}
			n.snapshotOver(mem, budget)
			// In bytes too, but never less than a member in touch still
			// needs: one sent a snapshot while it serves drops its clients.
			want = min(want, max(1, mem.log.newestWithin(budget), neededByLags(lags)))
		}
		trailing = n.setTrailingLogs(trailing, want)
	}
}

// logBudget is the most an in-memory member's log holds between
// snapshots, and the most it keeps behind the latest, in bytes: about the
// size of a snapshot (at least minLogBytes). Spacing snapshots by as many
// bytes of log as a snapshot holds costs each byte written about one byte
// copied, however large the tree; and a member further behind than that is
// better sent a snapshot than the log. Either way the log stays in
// proportion to the tree, whatever size each write has.
func (n *Node) logBudget() int64 {
	var size int64
	n.fsm.Read(func(t *tree.Tree) { size = t.ApproximateDataSize() + int64(t.Len())*logEntryOverhead })
	return max(size, minLogBytes)
}

// snapshotOver takes a snapshot when the log written since the latest one
// holds more than budget bytes, and sets the log to tell the tuner when it
// next will.
func (n *Node) snapshotOver(mem *memStores, budget int64) {
	since := mem.log.bytesAfter(mem.snaps.latestIndex())
	if since > budget {
		err := n.raftNow().Snapshot().Error()
		switch {
		case err == nil:
			n.log.Debug("snapshot: the log passed its budget", "bytes", since, "budget", budget)
		case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
		default:
			n.log.Warn("snapshot of an in-memory log over its budget", "bytes", since, "budget", budget, "err", err)
		}
		since = mem.log.bytesAfter(mem.snaps.latestIndex())
	}
	mem.log.alarm.Store(mem.log.held() - since + budget)
}

// tuneThreshold keeps an in-memory member's snapshot threshold at the
// tree's size (at least minSnapshotThreshold). A snapshot copies every
// node, so spacing snapshots by as many writes as there are nodes costs each
// write about one node copy, however large the tree, while the log Raft
// keeps in memory between snapshots stays in proportion to the tree.
func (n *Node) tuneThreshold(current uint64) uint64 {
	var nodes int
	n.fsm.Read(func(t *tree.Tree) { nodes = t.Len() })
	want := max(uint64(nodes), minSnapshotThreshold)
	if want >= current*3/4 && want <= current*5/4 {
		return current
	}
	if err := n.reloadConfig(func(rc *raft.ReloadableConfig) { rc.SnapshotThreshold = want }); err != nil {
		n.log.Warn("tune snapshot threshold", "err", err)
		return current
	}
	return want
}

// Bounds of the log a cluster member keeps behind its latest snapshot.
const (
	minTrailingLogs = 16384
	maxTrailingLogs = 1 << 20
)

// lags returns, on the leader, how far behind it each member in touch is,
// in entries. tuneSnapshots keeps the log that the slowest of them still
// needs (twice its lag, for the lag to grow until the next report), up to
// maxTrailingLogs entries (fitTrailingLogs). A member that falls behind
// what the log holds is sent a snapshot instead, and a member that restores
// one while serving must drop its clients (reconcileSessions): under a load
// that one member cannot keep up with, a fixed trailing log would make that
// happen again and again. ZooKeeper's leader likewise queues what a slow
// follower has yet to receive.
func (n *Node) lags() []uint64 {
	if !n.IsLeader() {
		return nil
	}
	var lags []uint64
	last := uint64(n.fsm.LastZxid())
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, zxid := range n.applied {
		// A member gone quiet will need a snapshot anyway.
		if time.Since(n.lastHeard[id]) <= 2*n.cfg.TickTime && zxid < last {
			lags = append(lags, last-zxid)
		}
	}
	return lags
}

// setTrailingLogs sets Raft's trailing log to want entries, if current
// is not that already, and returns what is set.
func (n *Node) setTrailingLogs(current, want uint64) uint64 {
	if want == current {
		return current
	}
	if err := n.reloadConfig(func(rc *raft.ReloadableConfig) { rc.TrailingLogs = want }); err != nil {
		n.log.Warn("tune trailing logs", "err", err)
		return current
	}
	n.log.Debug("trailing log", "entries", want)
	return want
}

// neededByLags returns the entries that members lagging by lags still
// need: twice the largest lag, at most maxTrailingLogs.
func neededByLags(lags []uint64) uint64 {
	var need uint64
	for _, lag := range lags {
		need = max(need, min(2*lag, maxTrailingLogs))
	}
	return need
}

// fitTrailingLogs returns the trailing log for members lagging by lags
// entries: twice the largest lag plus minTrailingLogs, at most
// maxTrailingLogs. It goes down only by halves from current, so that a lag
// that comes and goes does not make the log shrink and grow with every
// report.
func fitTrailingLogs(current uint64, lags []uint64) uint64 {
	want := min(neededByLags(lags)+minTrailingLogs, maxTrailingLogs)
	if want < current {
		want = max(want, current/2)
	}
	return want
}

// maxPooledConns is how many idle connections Raft's network transport
// keeps to each member.
const maxPooledConns = 4

func itoa(i int) string { return strconv.Itoa(i) }

// reloadConfig changes Raft's reloadable settings; the snapshot tuner, the
// fast election and campaignNow each change some of them, so each change
// reads and writes them whole under reloadMu.
func (n *Node) reloadConfig(change func(*raft.ReloadableConfig)) error {
	n.reloadMu.Lock()
	defer n.reloadMu.Unlock()
	rc := n.raftNow().ReloadableConfig()
	change(&rc)
	return n.raftNow().ReloadConfig(rc)
}
