package member

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
)

// Commit notices.
//
// A Raft follower learns that an entry is committed only from the leader's
// next AppendEntries, which hashicorp/raft sends when there are new entries
// or after CommitTimeout. A ZooKeeper leader sends its COMMIT to the
// followers before it answers the client, so a client that hears of a write
// and at once reads through another member almost always sees it there. To
// do as well, the leader sends every member a commit notice as soon as its
// state machine is handed a committed batch: an AppendEntries with no
// entries whose PrevLogEntry and LeaderCommitIndex are both the batch's
// last index, and whose PrevLogTerm is that entry's term. Raft's own
// consistency check makes it safe: a member accepts it only if its log
// holds that very entry (same index, same term), which by Raft's log
// matching means it holds everything before it as the leader does, and
// then it may apply up to it. A notice is sent only for an entry of the
// leader's own term, so the term it carries is one this member led.
//
// A notice can reach a member before the entry does (the other member's
// acknowledgement committed it). The receiving transport then holds it
// until its log store has stored that index, rather than let Raft reject it
// (and log a warning), and gives up after a Raft timeout.
//
// A notice is told from Raft's own AppendEntries by its empty Leader field,
// which Raft always fills.

// isCommitNotice reports whether req is a commit notice.
func isCommitNotice(req *raft.AppendEntriesRequest) bool {
	return len(req.Leader) == 0 && len(req.Entries) == 0 && req.PrevLogEntry > 0 &&
		req.PrevLogEntry == req.LeaderCommitIndex
}

// peerTransport is a cluster member's Raft transport: the network
// transport between members, with what zkraft adds on the receiving side
// (the vote guard of an in-memory member, and held commit notices) and a
// way to send commit notices.
type peerTransport struct {
	*raft.NetworkTransport
	stream  *raftStream
	header  raft.RPCHeader
	guard   *voteGuard // nil for a durable member
	out     chan raft.RPC
	quit    <-chan struct{}
	log     *slog.Logger
	timeout time.Duration // how long a notice is held

	stored    chan struct{} // signalled when the log store stored entries
	local     chan raft.RPC // RPCs this member hands its own Raft (see timeoutNow)
	appendsIn chan raft.RPC // AppendEntries received by serveAppends
	appends   appendPool
	older     olderPeers
	spawn     func(name string, f func()) bool // runs pipelines' answer readers (and the like) in the node's group
	// olderNet, set in tests, makes this member send as a zkraft before
	// AppendEntries had connections of their own (see olderPeers).
	olderNet   bool
	heartbeat  atomic.Pointer[func(raft.RPC)] // Raft's heartbeat handler, as SetHeartbeatHandler wraps it
	lastStored atomic.Uint64
	raft       atomic.Pointer[raft.Raft]
	// noticed is the highest index a commit notice named, storedCommand
	// the highest index of a command stored here, and settled the highest
	// such index Node.Current gave up waiting for.
	noticed, storedCommand, settled atomic.Uint64
	// leaderCommit is the highest commit index a leader's AppendEntries
	// (heartbeats and commit notices included) named: the cluster's
	// commit index as this member last heard it, whatever its own log
	// holds (Raft caps a follower's commit index at its last entry).
	leaderCommit atomic.Uint64
	// capCommit, when set, caps the commit index this member tells others
	// while it leads: no entry past what its own disk holds (overlapLog).
	capCommit func(uint64) uint64
	// hold, on a durable member, is its log, set as the transport is made
	// (before it takes a connection): the answers to AppendEntries that
	// carry entries wait for its writes (see heldAnswer, holdAnswer).
	hold *overlapLog
}

func newPeerTransport(t *raft.NetworkTransport, stream *raftStream, header raft.RPCHeader, guard *voteGuard,
	quit <-chan struct{}, timeout time.Duration, log *slog.Logger) *peerTransport {
	pt := &peerTransport{NetworkTransport: t, stream: stream, header: header, guard: guard, out: make(chan raft.RPC),
		quit: quit, log: log, timeout: timeout, stored: make(chan struct{}, 1), local: make(chan raft.RPC, 1),
		appendsIn: make(chan raft.RPC), spawn: func(_ string, f func()) bool { go f(); return true }}
	if stream != nil {
		stream.serveAppends = pt.serveAppends
	}
	return pt
}

// Consumer implements raft.Transport.
func (t *peerTransport) Consumer() <-chan raft.RPC { return t.out }

// SetHeartbeatHandler implements raft.Transport: heartbeats carry the
// leader's commit index too, which leaderCommit and the vote guard note.
// Heartbeats reach serveAppends, and Raft's network transport from a
// member of an older zkraft (or one that took this member for one, see
// olderPeers).
func (t *peerTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		t.heartbeat.Store(nil)
		t.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	hb := func(rpc raft.RPC) {
		t.noteLeaderCommit(rpc.Command)
		if t.guard != nil {
			t.guard.note(rpc.Command)
		}
		cb(rpc)
	}
	t.heartbeat.Store(&hb)
	t.NetworkTransport.SetHeartbeatHandler(hb)
}

// noteLeaderCommit raises leaderCommit to an AppendEntries' commit index.
func (t *peerTransport) noteLeaderCommit(cmd any) {
	if req, ok := cmd.(*raft.AppendEntriesRequest); ok {
		raiseTo(&t.leaderCommit, req.LeaderCommitIndex)
	}
}

func (t *peerTransport) setRaft(r *raft.Raft) {
	t.raft.Store(r)
	if t.guard != nil {
		t.guard.setRaft(r)
	}
}

// storedUpTo is told by the log store of the last index it stored, and of
// the last command among the entries.
func (t *peerTransport) storedUpTo(index, command uint64) {
	t.lastStored.Store(index)
	if command > 0 {
		t.storedCommand.Store(command)
	}
	select {
	case t.stored <- struct{}{}:
	default:
	}
}

// has reports whether this member's log holds index.
func (t *peerTransport) has(index uint64) bool {
	if t.lastStored.Load() >= index {
		return true
	}
	r := t.raft.Load()
	return r != nil && r.LastIndex() >= index
}

// run takes the RPCs the network transport receives, until quit closes:
// refused votes are answered by the guard, a commit notice is noted at
// once (see Node.Current), and one for an entry not yet stored here waits
// for it. The rest go to Raft in order. While Raft is busy with an RPC, the
// loop goes on receiving into a queue, so that a notice is noted as soon as
// it arrives, and hands the queue to Raft as it takes them.
func (t *peerTransport) run() { t.runFrom(t.NetworkTransport.Consumer()) }

func (t *peerTransport) runFrom(in <-chan raft.RPC) {
	var queue, waiting []raft.RPC // waiting: votes the guard holds
	var held *raft.RPC
	giveUp := time.NewTimer(time.Hour)
	giveUp.Stop()
	defer giveUp.Stop()
	defer func() {
		for _, rpc := range append(queue, waiting...) { // no sender waits for ever
			rpc.Respond(nil, ErrClosed)
		}
	}()
	for {
		var out chan raft.RPC
		var next raft.RPC
		if len(queue) > 0 {
			out, next = t.out, queue[0]
		}
		var surveyed chan struct{}
		if len(waiting) > 0 {
			surveyed = t.guard.surveyed
		}
		var rpc raft.RPC
		received, fromAppends := false, false
		select {
		case rpc = <-in:
			received = true
		case rpc = <-t.appendsIn:
			received, fromAppends = true, true
		case rpc := <-t.local:
			queue = append(queue, rpc)
		case <-surveyed:
			for _, rpc := range waiting {
				if t.guard.check(rpc) == grant {
					queue = append(queue, rpc)
				}
			}
			waiting = nil
		case out <- next:
			queue[0] = raft.RPC{}
			queue = queue[1:]
		case <-t.stored:
			if held != nil && t.has(held.Command.(*raft.AppendEntriesRequest).PrevLogEntry) {
				queue = append(queue, *held)
				held = nil
				giveUp.Stop()
			}
		case <-giveUp.C:
			if held != nil {
				t.decline(*held)
				held = nil
			}
		case <-t.quit:
			return
		}
		if !received {
			continue
		}
		if t.guard != nil {
			switch t.guard.check(rpc) {
			case refuse:
				continue
			case hold:
				waiting = append(waiting, rpc)
				continue
			}
		}
		t.noteLeaderCommit(rpc.Command)
		if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && t.hold != nil && len(req.Entries) > 0 && !fromAppends {
			if rpc, ok = t.holdAnswer(rpc, req); !ok {
				rpc.Respond(nil, ErrClosed)
				continue
			}
		}
		if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && isCommitNotice(req) {
			raiseTo(&t.noticed, req.PrevLogEntry)
			if !t.has(req.PrevLogEntry) {
				if held != nil {
					t.decline(*held)
				}
				held = &rpc
				giveUp.Reset(t.timeout)
				continue
			}
		}
		queue = append(queue, rpc)
	}
}

// holdAnswer returns rpc, an AppendEntries with entries from Raft's network
// transport, with its answer held as serveAppends holds those it reads
// (see heldAnswer): a goroutine waits for Raft's answer, then for the
// entries to be on disk, and only then hands it to the network transport.
// That transport reads a connection's next request only once the one
// before is answered, so one goroutine at most waits for each connection.
// It reports false if the node is stopping (no goroutine could be started):
// the request must then not reach Raft.
func (t *peerTransport) holdAnswer(rpc raft.RPC, req *raft.AppendEntriesRequest) (raft.RPC, bool) {
	answer := rpc.RespChan
	got := make(chan raft.RPCResponse, 1)
	upTo, epoch := req.Entries[len(req.Entries)-1].Index, t.hold.writeEpoch()
	held := func() {
		var a raft.RPCResponse
		select {
		case a = <-got:
		case <-t.quit:
			answer <- raft.RPCResponse{Error: ErrClosed}
			return
		}
		if resp, ok := a.Response.(*raft.AppendEntriesResponse); ok && a.Error == nil {
			// Raft's leader reads only the response of a pipelined
			// request, not its error: the response itself says failure.
			a.Response, a.Error = t.heldResponse(resp, upTo, epoch)
		}
		answer <- a
	}
	if !t.spawn("raft-held-answer", held) {
		return rpc, false
	}
	rpc.RespChan = got
	return rpc, true
}

// heldResponse returns resp, Raft's answer to an AppendEntries whose
// entries end at upTo, once it may be sent: if it says they were stored,
// once they are on disk. It returns a copy that says the request failed
// if they never will be as they were (the log's end was deleted since
// epoch, a write failed, the node is stopping), with the error if any.
func (t *peerTransport) heldResponse(resp *raft.AppendEntriesResponse, upTo, epoch uint64) (*raft.AppendEntriesResponse, error) {
	if !resp.Success {
		return resp, nil
	}
	if written, err := t.hold.waitWritten(upTo, epoch, t.quit); !written {
		failed := *resp
		failed.Success = false
		return &failed, err
	}
	return resp, nil
}

// RequestVote implements raft.Transport, retrying on a stale connection.
// A member that may have voted in the term already, or that is getting back
// entries a damaged disk lost, does not ask (see voteGuard.mayStand).
func (t *peerTransport) RequestVote(id raft.ServerID, target raft.ServerAddress,
	args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.guard != nil && !t.guard.mayStand(args.Term) {
		return errMayNotStand
	}
	return retryStale(func() error { return t.NetworkTransport.RequestVote(id, target, args, resp) })
}

// RequestPreVote implements raft.Transport, retrying on a stale connection.
func (t *peerTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress,
	args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.guard != nil && !t.guard.mayStand(args.Term) {
		return errMayNotStand
	}
	return retryStale(func() error { return t.NetworkTransport.RequestPreVote(id, target, args, resp) })
}

// retryStale calls rpc again while it fails on a connection the far side
// had closed. Raft's network transport pools connections and cannot tell a
// pooled one that a restarted member left behind: the next request on it
// fails. Raft asks each member for its vote once per election, so one
// failure there costs a whole election timeout. A vote request may be sent
// twice: a member grants the same candidate its vote again in a term.
func retryStale(rpc func() error) error {
	var err error
	for range maxPooledConns + 1 {
		if err = rpc(); !staleConn(err) {
			return err
		}
	}
	return err
}

// staleConn reports whether err means a connection was already closed by
// the far side when it was used (not that a new one was refused). The
// transport's decoder wraps errors without a way to unwrap them, so the
// message is read too.
func staleConn(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection reset by peer") || strings.Contains(msg, "broken pipe") ||
		strings.HasSuffix(msg, ": EOF")
}

// timeoutNow hands this member's Raft a TimeoutNow, as a leader handing
// over its office would: Raft stands for election at once, and the others
// grant their votes although they still know a leader (see failover.go).
func (t *peerTransport) timeoutNow() {
	rpc := raft.RPC{Command: &raft.TimeoutNowRequest{RPCHeader: t.header}, RespChan: make(chan raft.RPCResponse, 1)}
	select {
	case t.local <- rpc:
	default: // one is on its way already
	}
}

// raiseTo raises v to x, if x is higher.
func raiseTo(v *atomic.Uint64, x uint64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// decline answers a commit notice this member cannot use; the leader's
// next AppendEntries brings the commit index anyway.
func (t *peerTransport) decline(rpc raft.RPC) {
	var term uint64
	if r := t.raft.Load(); r != nil {
		term = r.CurrentTerm()
	}
	rpc.Respond(&raft.AppendEntriesResponse{RPCHeader: t.header, Term: term}, nil)
}

// notifyingStore is a log store that tells the transport what it stored.
type notifyingStore struct {
	raft.LogStore
	t *peerTransport
}

func (s notifyingStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// IsMonotonic passes the store's through (see logCache.IsMonotonic).
func (s notifyingStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

func (s notifyingStore) StoreLogs(logs []*raft.Log) error {
	if err := s.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	if len(logs) > 0 {
		var command uint64
		for _, l := range logs {
			if l.Type == raft.LogCommand {
				command = l.Index
			}
		}
		s.t.storedUpTo(logs[len(logs)-1].Index, command)
	}
	return nil
}

// notifyingFSM is the state machine as Raft sees it: each committed batch
// is announced (committed) before it is applied.
type notifyingFSM struct {
	*raftfsm.FSM
	committed func(index, term uint64)
	unread    bool // snapshots capture nothing: see unreadSnapshot
	// durable, when set, waits until this member's own log has the entry
	// at index on disk, and reports false if it never will (overlapLog):
	// its disk failed (the member then stops serving clients: logBroken)
	// and the member is stopping; the entry is then not applied. failed, set with it, reports that failure: snapshots are
	// refused from then on, since Raft counts skipped batches as applied.
	durable func(index uint64) bool
	failed  func() error
	// flushed, set with durable, waits until the log has everything up to
	// index on disk (overlapLog.flushTo), and applied is the last index
	// applied. A member applies what a leader said is committed before its
	// own disk has it: a snapshot of that state waits for the disk, so
	// that the log on disk always reaches the newest snapshot.
	flushed func(index uint64) error
	applied *atomic.Uint64
	// check, on a durable member, checks the entries' checksums before they
	// are applied, and reports false if one is damaged (applyCheck): none
	// is applied then, nor later.
	check func([]*raft.Log) bool
	// batch, when set, applies a batch in place of the FSM's ApplyBatch
	// (a cluster member's digests: applyDigested).
	batch func(*raftfsm.FSM, []*raft.Log) []any
}

// Snapshot captures the state, unless no one will ever read it.
func (f notifyingFSM) Snapshot() (raft.FSMSnapshot, error) {
	if f.failed != nil {
		if err := f.failed(); err != nil {
			return nil, fmt.Errorf("no snapshot after the log failed to write: %w", err)
		}
	}
	if f.flushed != nil {
		if err := f.flushed(f.applied.Load()); err != nil {
			return nil, fmt.Errorf("no snapshot: the log failed to write what it holds: %w", err)
		}
	}
	if f.unread {
		return unreadSnapshot{}, nil
	}
	return f.FSM.Snapshot()
}

// unreadSnapshot is a standalone in-memory server's snapshot: Raft needs
// one to drop the log before it, and nothing ever opens it (no member to
// send it to, no restart that keeps state), so it holds nothing. Before
// it, such a server kept a copy of every node record for its latest
// snapshot (192 B a znode, tree.BenchmarkMemoryPerZnode) and a log as
// large as a snapshot between them.
type unreadSnapshot struct{}

// errUnreadSnapshot is what opening an unreadSnapshot gives.
var errUnreadSnapshot = errors.New("a standalone in-memory server's snapshots hold no state")

func (unreadSnapshot) Persist(sink raft.SnapshotSink) error {
	if k, ok := sink.(raftfsm.Keeper); ok {
		k.Keep(unreadSnapshot{})
		return sink.Close()
	}
	_ = sink.Cancel()
	return errUnreadSnapshot
}

func (unreadSnapshot) Release() {}

func (f notifyingFSM) Apply(l *raft.Log) any {
	if f.durable != nil && !f.durable(l.Index) {
		return nil
	}
	if f.check != nil && !f.check([]*raft.Log{l}) {
		return nil
	}
	f.committed(l.Index, l.Term)
	if f.applied != nil {
		f.applied.Store(l.Index)
	}
	return f.FSM.Apply(l)
}

func (f notifyingFSM) ApplyBatch(logs []*raft.Log) []any {
	if len(logs) > 0 {
		last := logs[len(logs)-1]
		if f.durable != nil && !f.durable(last.Index) {
			return make([]any, len(logs))
		}
		if f.check != nil && !f.check(logs) {
			return make([]any, len(logs))
		}
		f.committed(last.Index, last.Term)
		if f.applied != nil {
			f.applied.Store(last.Index)
		}
	}
	if f.batch != nil {
		return f.batch(f.FSM, logs)
	}
	return f.FSM.ApplyBatch(logs)
}

// commitNotices sends commit notices from the leader. A notice is written
// on the state machine's goroutine, before the batch is applied and so
// before any client hears of it, over a pipelined connection to each member
// (no wait for the answer), as a ZooKeeper leader queues its COMMIT before
// it answers. Only a batch that ends the log gets a notice: under load the
// replication of the entries after it carries its commit. Each member has
// at most one notice unanswered: a commit made meanwhile waits, and only
// the latest goes out when the answer comes. Connections are made off that
// goroutine, by one keeper per member; a member that leaves a notice
// unanswered for two Raft timeouts gets a new connection. The links follow
// the members as reconfigs change them (see followMembers).
type commitNotices struct {
	mu      sync.Mutex // serializes changes to links
	started bool
	links   atomic.Pointer[[]*noticeLink]
}

type noticeLink struct {
	id     raft.ServerID
	addr   raft.ServerAddress
	stale  time.Duration // how long a notice may stay unanswered
	redial chan struct{}
	gone   chan struct{} // closed when the member leaves: the keeper ends

	mu      sync.Mutex // guards the fields below; held while writing a notice
	pipe    *noticePipe
	pending *raft.AppendEntriesRequest // the latest notice not yet sent
	busy    bool                       // a notice is unanswered
	sentAt  time.Time
}

type noticePipe struct {
	raft.AppendPipeline
	done chan struct{}
	once sync.Once
}

func (p *noticePipe) close() {
	p.once.Do(func() {
		close(p.done)
		p.Close()
	})
}

// start makes the links to the members, once the node runs.
func (c *commitNotices) start(n *Node) {
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	c.followMembers(n)
}

// followMembers gives every other member a link, with a keeper of its own
// (those that left too: they follow on without a vote, see
// membershipChanges), and ends the links of members that moved. It does
// not block: it runs inside the apply of a reconfig (SetServers).
func (c *commitNotices) followMembers(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return
	}
	var old, next []*noticeLink
	if cur := c.links.Load(); cur != nil {
		old = *cur
	}
	for _, p := range n.followers() {
		id, addr := raft.ServerID(itoa(p.ID)), raft.ServerAddress(p.RaftAddr)
		if i := slices.IndexFunc(old, func(l *noticeLink) bool { return l.id == id && l.addr == addr }); i >= 0 {
			next = append(next, old[i])
			continue
		}
		l := &noticeLink{id: id, addr: addr, stale: 2 * n.cfg.RaftTimeout,
			redial: make(chan struct{}, 1), gone: make(chan struct{})}
		if n.goOwned("commit-notice-link", func() { n.keepNoticeLink(l) }) {
			next = append(next, l)
		}
	}
	for _, l := range old {
		if !slices.Contains(next, l) {
			close(l.gone)
		}
	}
	c.links.Store(&next)
}

// current returns the links.
func (c *commitNotices) current() []*noticeLink {
	if cur := c.links.Load(); cur != nil {
		return *cur
	}
	return nil
}

// committed is called with each batch the state machine is handed, before
// it is applied: on the leader, it sends the members a commit notice.
func (n *Node) committed(index, term uint64) {
	n.checkRepaired(index)
	c := n.notices
	if c == nil {
		return
	}
	// Only an entry of the term this member leads: the notice claims that
	// term's leadership.
	r := n.raftNow()
	if r == nil || r.State() != raft.Leader || r.CurrentTerm() != term {
		return
	}
	// Under load the log has grown past this batch already: the
	// AppendEntries that replicate what follows carry this commit too, and
	// the notice for the batch that ends the burst covers the rest. A
	// notice per batch would cost the members' Raft loops a fifth of the
	// write throughput.
	if r.LastIndex() > index {
		return
	}
	for _, l := range c.current() {
		l.send(&raft.AppendEntriesRequest{RPCHeader: n.trans.header, Term: term,
			PrevLogEntry: index, PrevLogTerm: term, LeaderCommitIndex: index})
	}
}

// barrier proposes a Raft barrier on this leader. Once it is applied, a
// commit notice goes out for it: the state machine never sees a barrier,
// so none went out at its batch, and one that was the log's last entry
// kept back the notice of the batch before it too (committed skips a batch
// the log has grown past). Without one, the followers learnt that those
// entries were committed only from whatever next carried the leader's
// commit index: in tests 60-80 ms later, and in one (a member that was
// catching up, beside an older member) not until the next write, seconds
// later, while a sync on a follower waited for them.
//
// Like a proposal, a barrier counts as unanswered until Raft answers it,
// so that stopping waits for that while Raft still runs (see
// stopProposing): one still queued when Raft shuts down is never answered.
func (n *Node) barrier(timeout time.Duration) raft.Future {
	b := &noticedBarrier{done: make(chan struct{}), quit: n.quit}
	n.applyMu.RLock()
	if n.applyClosed {
		n.applyMu.RUnlock()
		b.err = ErrClosed
		close(b.done)
		return b
	}
	n.unanswered.Add(1)
	r := n.raftNow()
	term := r.CurrentTerm()
	f := r.Barrier(timeout)
	n.applyMu.RUnlock()
	go func() {
		defer n.unanswered.Add(-1)
		b.err = f.Error()
		if b.err == nil {
			index := r.AppliedIndex() // Raft may answer before it moves it
			if i, ok := f.(raft.IndexFuture); ok {
				index = max(index, i.Index())
			}
			n.committed(index, term)
		}
		close(b.done)
	}()
	return b
}

// noticedBarrier is a barrier's future (see barrier).
type noticedBarrier struct {
	done chan struct{} // closed once err is set
	err  error
	quit <-chan struct{}
}

// Error waits for the barrier to be applied, or for the node to stop.
func (b *noticedBarrier) Error() error {
	select {
	case <-b.done:
		return b.err
	case <-b.quit:
		return ErrClosed
	}
}

func (l *noticeLink) send(req *raft.AppendEntriesRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = req
	l.flushLocked()
}

// flushLocked sends the pending notice if the link is free.
func (l *noticeLink) flushLocked() {
	switch {
	case l.pending == nil:
		return
	case l.pipe == nil:
		l.wantConnection()
		return
	case l.busy:
		if time.Since(l.sentAt) > l.stale { // the member stopped answering
			l.dropLocked()
			l.wantConnection()
		}
		return
	}
	req := l.pending
	if _, err := l.pipe.AppendEntries(req, new(raft.AppendEntriesResponse)); err != nil {
		l.dropLocked()
		l.wantConnection()
		return
	}
	l.pending, l.busy, l.sentAt = nil, true, time.Now()
}

func (l *noticeLink) dropLocked() {
	if l.pipe != nil {
		l.pipe.close()
		l.pipe = nil
	}
	l.busy = false
}

// answered is told that p's unanswered notice was answered.
func (l *noticeLink) answered(p *noticePipe) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipe == p {
		l.busy = false
		l.flushLocked()
	}
}

func (l *noticeLink) wantConnection() {
	select {
	case l.redial <- struct{}{}:
	default:
	}
}

// keepNoticeLink makes the connection a link's notices go over, when one
// is wanted, until the node stops or the member leaves; a member that
// cannot be reached is tried again a Raft timeout later, at the earliest.
func (n *Node) keepNoticeLink(l *noticeLink) {
	defer func() {
		l.mu.Lock()
		l.dropLocked()
		l.mu.Unlock()
	}()
	for {
		select {
		case <-l.redial:
		case <-n.quit:
			return
		case <-l.gone:
			return
		}
		l.mu.Lock()
		connected := l.pipe != nil
		l.mu.Unlock()
		if connected {
			continue
		}
		pipe, err := n.trans.noticePipeline(l.id, l.addr)
		if err != nil {
			select {
			case <-time.After(n.retryEvery()):
			case <-n.quit:
				return
			case <-l.gone:
				return
			}
			continue
		}
		p := &noticePipe{AppendPipeline: pipe, done: make(chan struct{})}
		if !n.goOwned("commit-notice-answers", func() { n.drainNotices(l, p) }) {
			p.close()
			return
		}
		l.mu.Lock()
		l.dropLocked()
		l.pipe = p
		l.flushLocked()
		l.mu.Unlock()
	}
}

// drainNotices reads a pipe's answers: each frees the link for the next
// notice.
func (n *Node) drainNotices(l *noticeLink, p *noticePipe) {
	for {
		select {
		case <-p.Consumer():
			l.answered(p)
		case <-p.done:
			return
		case <-n.quit:
			p.close()
			return
		}
	}
}
