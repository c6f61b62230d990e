package member

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
)

// heldStore is a log store whose appends wait while it is held, and that
// records the appends it made.
type heldStore struct {
	raft.LogStore
	mu      sync.Mutex
	held    chan struct{} // nil: not held; closed by release
	waiting atomic.Int32  // appends waiting
	appends [][]uint64    // the indexes of each append made
	fail    error         // appends fail with this, when set
	tries   int           // appends asked for, those failed too
}

func newHeldStore() *heldStore { return &heldStore{LogStore: raft.NewInmemStore()} }

func (s *heldStore) hold() {
	s.mu.Lock()
	s.held = make(chan struct{})
	s.mu.Unlock()
}

func (s *heldStore) release() {
	s.mu.Lock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
	s.mu.Unlock()
}

// awaitWriter waits until an append waits for the store to be released.
func (s *heldStore) awaitWriter(t *testing.T) {
	t.Helper()
	eventually(t, "the writer to wait for the store", func() bool { return s.waiting.Load() == 1 })
}

// requireWaiting fails the test if the append done reports on has returned.
func requireWaiting(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned before the disk had the entries: %v", what, err)
	default:
	}
}

func (s *heldStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *heldStore) StoreLogs(logs []*raft.Log) error {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil {
		s.waiting.Add(1)
		<-held
		s.waiting.Add(-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.fail != nil {
		return s.fail
	}
	var idx []uint64
	for _, l := range logs {
		idx = append(idx, l.Index)
	}
	s.appends = append(s.appends, idx)
	return s.LogStore.StoreLogs(logs)
}

func (s *heldStore) made() [][]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]uint64(nil), s.appends...)
}

func entries(from, to uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	return ls
}

// newTestLog returns an overlapLog over a heldStore.
func newTestLog(t *testing.T) (*heldStore, *overlapLog) {
	t.Helper()
	store := newHeldStore()
	l, err := newOverlapLog(store)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	t.Cleanup(store.release) // first: a test that fails holding the store still ends
	return store, l
}

// A leader's append returns before its disk has the entries, which are
// read from memory meanwhile; what waits for the disk (the state machine,
// the commit index told to followers) waits until they are there.
func TestOverlapLog_TheLeaderDoesNotWaitForItsDisk(t *testing.T) {
	store, l := newTestLog(t)
	require.NoError(t, l.StoreLogs(entries(1, 3)))
	eventually(t, "the first append to reach the store", func() bool { return len(store.made()) == 1 })

	store.hold()
	require.NoError(t, l.StoreLogs(entries(4, 6)), "returns while the store is held")
	store.awaitWriter(t)
	last, err := l.LastIndex()
	require.NoError(t, err)
	assert.EqualValues(t, 6, last)
	first, err := l.FirstIndex()
	require.NoError(t, err)
	assert.EqualValues(t, 1, first)
	var got raft.Log
	require.NoError(t, l.GetLog(5, &got))
	assert.Equal(t, []byte{5}, got.Data, "a pending entry is read from memory")
	require.NoError(t, l.GetLog(2, &got))
	assert.Equal(t, []byte{2}, got.Data)
	assert.EqualValues(t, 3, l.capCommit(6), "no commit index past the disk's")
	assert.EqualValues(t, 2, l.capCommit(2))
	assert.True(t, l.waitDurable(3, nil))

	durable := make(chan bool)
	go func() { durable <- l.waitDurable(6, nil) }()
	store.release()
	assert.True(t, <-durable)
	assert.EqualValues(t, 6, l.capCommit(6))
	assert.Equal(t, [][]uint64{{1, 2, 3}, {4, 5, 6}}, store.made())
}

// Entries that come while a write is under way go to the disk together in
// the next append.
func TestOverlapLog_WritesWhatWaitsInOneAppend(t *testing.T) {
	store, l := newTestLog(t)
	store.hold()
	require.NoError(t, l.StoreLogs(entries(1, 1)))
	store.awaitWriter(t)
	for i := uint64(2); i <= 5; i++ {
		require.NoError(t, l.StoreLogs(entries(i, i)))
	}
	store.release()
	require.True(t, l.waitDurable(5, nil))
	assert.Equal(t, [][]uint64{{1}, {2, 3, 4, 5}}, store.made())
}

// What a transport holds a follower's answer for: waitWritten tells when
// the entries are on disk, reports false once the log's end was deleted
// since its epoch was taken (not when the oldest entries were), and
// returns the error a write failed with.
func TestOverlapLog_WaitWritten(t *testing.T) {
	store, l := newTestLog(t)
	quit := make(chan struct{})
	defer close(quit)

	store.hold()
	epoch := l.writeEpoch()
	require.NoError(t, l.StoreLogs(entries(1, 2)), "returns while the store is held")
	store.awaitWriter(t)
	written := make(chan bool)
	go func() {
		ok, err := l.waitWritten(2, epoch, quit)
		assert.NoError(t, err)
		written <- ok
	}()
	select {
	case <-written:
		t.Fatal("waitWritten returned before the disk had the entries")
	case <-time.After(20 * time.Millisecond):
	}
	store.release()
	assert.True(t, <-written)

	assert.True(t, l.written(2))
	require.NoError(t, l.StoreLogs(entries(3, 3)))
	require.True(t, l.waitDurable(3, nil))

	// The oldest entries deleted (behind a snapshot): the epoch stays.
	epoch = l.writeEpoch()
	require.NoError(t, l.DeleteRange(1, 1))
	ok, err := l.waitWritten(3, epoch, quit)
	require.NoError(t, err)
	assert.True(t, ok)

	// The log's end replaced after the epoch was taken.
	epoch = l.writeEpoch()
	require.NoError(t, l.StoreLogs(entries(4, 4)))
	require.NoError(t, l.DeleteRange(4, 4))
	ok, err = l.waitWritten(4, epoch, quit)
	require.NoError(t, err)
	assert.False(t, ok, "the entry is gone")
	ok, err = l.waitWritten(3, l.writeEpoch(), quit)
	require.NoError(t, err)
	assert.True(t, ok)

	// A failed write.
	failure := errors.New("disk on fire")
	store.mu.Lock()
	store.fail = failure
	store.mu.Unlock()
	epoch = l.writeEpoch()
	require.NoError(t, l.StoreLogs(entries(4, 4)), "queued: the write fails later")
	_, err = l.waitWritten(4, epoch, quit)
	assert.ErrorIs(t, err, failure)
}

// A new leader replacing the tail of a former leader's log: the entries
// still pending are written first, then deleted, so that nothing deleted
// reaches the disk afterwards; the replacements follow.
func TestOverlapLog_DeletingATailWritesWhatIsPendingFirst(t *testing.T) {
	store, l := newTestLog(t)
	require.NoError(t, l.StoreLogs(entries(1, 3)))
	require.True(t, l.waitDurable(3, nil))
	store.hold()
	require.NoError(t, l.StoreLogs(entries(4, 8)))
	deleted := make(chan error)
	go func() { deleted <- l.DeleteRange(6, 8) }()
	store.awaitWriter(t)
	store.release()
	require.NoError(t, <-deleted)
	last, err := l.LastIndex()
	require.NoError(t, err)
	assert.EqualValues(t, 5, last)
	assert.EqualValues(t, 5, l.capCommit(8), "the disk's end went back with the tail")
	replaced := entries(6, 7)
	replaced[0].Term, replaced[1].Term = 2, 2
	require.NoError(t, l.StoreLogs(replaced))
	require.True(t, l.waitDurable(7, nil))
	var got raft.Log
	require.NoError(t, store.GetLog(7, &got))
	assert.EqualValues(t, 2, got.Term)
	assert.Error(t, store.GetLog(8, &got), "the deleted entry stayed deleted")
}

// A failed write fails every later call, and nothing waiting for the disk
// is told the entries are there.
func TestOverlapLog_AFailedWriteFailsWhatFollows(t *testing.T) {
	store, l := newTestLog(t)
	boom := errors.New("disk on fire")
	store.mu.Lock()
	store.fail = boom
	store.mu.Unlock()
	require.NoError(t, l.StoreLogs(entries(1, 2)), "an append does not wait")
	stopped := make(chan struct{})
	close(stopped)
	assert.False(t, l.waitDurable(2, stopped), "never on disk: given up when the member stops")
	assert.ErrorIs(t, l.failed(), boom)
	assert.ErrorIs(t, l.StoreLogs(entries(3, 3)), boom)
	assert.EqualValues(t, 0, l.capCommit(2))
	assert.ErrorIs(t, l.Close(), boom)
}

// Close writes what is pending; a wait for the disk also ends with stop.
func TestOverlapLog_CloseWritesWhatIsPending(t *testing.T) {
	store, l := newTestLog(t)
	store.hold()
	require.NoError(t, l.StoreLogs(entries(1, 4)))
	stopped := make(chan struct{})
	close(stopped)
	durable := make(chan bool)
	// Without a failure, stopping does not skip a batch: the writer goes
	// on until Raft has shut down.
	go func() { durable <- l.waitDurable(4, stopped) }()
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	store.awaitWriter(t)
	store.release()
	require.NoError(t, <-closed)
	assert.True(t, <-durable)
	last, err := store.LastIndex()
	require.NoError(t, err)
	assert.EqualValues(t, 4, last)
	assert.ErrorIs(t, l.StoreLogs(entries(5, 5)), errLogClosed)
}

// An append of an entry that changes the cluster waits for the disk: Raft
// decides on membership from a commit index that counts the leader.
func TestOverlapLog_MembershipEntriesWaitForTheDisk(t *testing.T) {
	for _, typ := range []raft.LogType{raft.LogNoop, raft.LogConfiguration} {
		t.Run(typ.String(), func(t *testing.T) {
			store, l := newTestLog(t)
			store.hold()
			require.NoError(t, l.StoreLogs(entries(1, 2)))
			batch := entries(3, 4)
			batch[0].Type = typ
			stored := make(chan error)
			go func() { stored <- l.StoreLogs(batch) }()
			store.awaitWriter(t)
			requireWaiting(t, stored, "the append")
			store.release()
			require.NoError(t, <-stored)
			assert.True(t, l.waitDurable(4, nil))
		})
	}
}

// Entries that do not follow what is queued (a member that led, then
// restored a snapshot past its log) go after it, rather than failing.
func TestOverlapLog_EntriesPastAGapFollowWhatIsQueued(t *testing.T) {
	store, l := newTestLog(t)
	store.hold()
	require.NoError(t, l.StoreLogs(entries(5, 8)))
	stored := make(chan error)
	go func() { stored <- l.StoreLogs(entries(20, 21)) }()
	store.awaitWriter(t)
	requireWaiting(t, stored, "an append past a gap")
	store.release()
	require.NoError(t, <-stored)
	require.True(t, l.waitDurable(21, nil))
	assert.Equal(t, [][]uint64{{5, 6, 7, 8}, {20, 21}}, store.made())
}

// Once the log failed to write, the state machine refuses snapshots: Raft
// counts the batches it skipped as applied.
func TestNotifyingFSM_NoSnapshotAfterTheLogFailed(t *testing.T) {
	var failure error
	f := notifyingFSM{FSM: raftfsm.New(nil), failed: func() error { return failure }}
	snap, err := f.Snapshot()
	require.NoError(t, err)
	snap.Release()
	failure = errors.New("disk on fire")
	_, err = f.Snapshot()
	assert.ErrorIs(t, err, failure)
}

// startHeldNodes starts three durable members whose log stores can be
// held (stores[i] is member i+1's).
func startHeldNodes(t *testing.T) ([]*Node, []*heldStore) {
	t.Helper()
	stores := make([]*heldStore, 3)
	nodes := startNodes(t, 3, func(c *Config) {
		c.DataDir = t.TempDir()
		c.LogStore = LogStoreWAL
		c.commitTimeout = 5 * time.Millisecond
		// No election while a test holds a disk: with 100 ms timeouts a
		// loaded machine made one 1 run in 40 (beside three CPU hogs), and
		// a new leader commits what the held disk lacks.
		c.RaftTimeout = time.Second
		c.wrapLogStore = func(s raft.LogStore) raft.LogStore {
			hs := &heldStore{LogStore: s}
			stores[c.ServerID-1] = hs
			return hs
		}
	})
	return nodes, stores
}

// In a durable cluster the leader sends entries on while its own disk
// still holds them up, and what Raft commits meanwhile is applied nowhere,
// and no member hears of it as committed, until the leader's disk has it:
// then a majority has it on disk.
func TestOverlapLog_ACommitWaitsForTheLeadersDisk(t *testing.T) {
	nodes, stores := startHeldNodes(t)
	leader := leaderOf(nodes)
	propose := func(session int64) {
		cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: session, Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		leader.Propose(cmd.Encode(), 0)
	}
	propose(1)
	for _, n := range nodes {
		eventually(t, "every member to apply the first session", func() bool {
			_, ok := n.fsm.Session(1)
			return ok
		})
	}
	r := leader.raftNow()
	// proposeAt proposes a session and returns its entry's index.
	proposeAt := func(session int64) uint64 {
		before := leader.trans.storedCommand.Load()
		propose(session)
		eventually(t, "the leader to take the entry", func() bool { return leader.trans.storedCommand.Load() > before })
		return leader.trans.storedCommand.Load()
	}
	zxid := leader.fsm.LastZxid()
	store := stores[leader.cfg.ServerID-1]
	store.hold()
	t.Cleanup(store.release) // before the members stop, should the test fail
	second := proposeAt(2)
	eventually(t, "Raft to commit the second session with the followers", func() bool { return r.CommitIndex() >= second })
	// Proposed after the commit: the AppendEntries that carry it would
	// carry the commit too.
	third := proposeAt(3)
	for _, n := range nodes {
		if n != leader {
			eventually(t, "the followers to store the third session", func() bool { return n.raftNow().LastIndex() >= third })
		}
	}
	assert.EqualValues(t, 1, store.waiting.Load(), "the leader's disk still holds the second session up")
	assert.Equal(t, zxid, leader.fsm.LastZxid(), "the leader applied an entry its disk does not have")
	for _, n := range nodes {
		_, ok := n.fsm.Session(2)
		assert.False(t, ok, "member %d applied the second session", n.cfg.ServerID)
		if n != leader {
			assert.Less(t, n.trans.leaderCommit.Load(), second, "member %d was told of the commit", n.cfg.ServerID)
		}
	}
	store.release()
	for _, n := range nodes {
		eventually(t, "every member to apply the third session", func() bool {
			_, ok := n.fsm.Session(3)
			return ok
		})
	}
}

// A member whose log failed to write can apply nothing the leader has not
// said is committed, and its clients' writes would wait for ever: it stops
// serving them, so that they move to the members that can, and those serve
// on.
func TestOverlapLog_AMemberWhoseLogFailedStopsServing(t *testing.T) {
	nodes, stores := startHeldNodes(t)
	leader := leaderOf(nodes)
	var follower *Node
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	for _, n := range nodes {
		eventually(t, "every member to serve", n.serving.Load)
	}
	store := stores[follower.cfg.ServerID-1]
	store.mu.Lock()
	store.fail = errors.New("input/output error")
	store.mu.Unlock()
	cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: 1, Timeout: 30000,
		Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
	leader.Propose(cmd.Encode(), 0)
	eventually(t, "the follower whose log failed to stop serving", func() bool { return !follower.serving.Load() })
	for _, n := range nodes {
		if n != follower {
			assert.True(t, n.serving.Load(), "member %d serves on", n.cfg.ServerID)
		}
	}
}

// A standalone durable server whose log failed to write stops serving
// clients, writes nothing more to its log, and its Raft, the only voter,
// does not stand again (and fail again) each election timeout.
func TestLatchedLog_AStandaloneServerWhoseLogFailedStopsServing(t *testing.T) {
	store := &heldStore{}
	var logged syncBuffer
	n := New(Config{TickTime: 100 * time.Millisecond, RaftTimeout: 100 * time.Millisecond, SnapCount: 100000, SnapRetainCount: 3,
		DataDir: t.TempDir(), LogStore: LogStoreWAL, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		wrapLogStore: func(s raft.LogStore) raft.LogStore {
			store.LogStore = s
			return store
		}}, raftfsm.New(nil), nopHost{})
	t.Cleanup(func() { n.Stop(); n.Wait() })
	require.NoError(t, n.Start())
	eventually(t, "the server to serve", n.serving.Load)
	r := n.raftNow()
	store.mu.Lock()
	store.fail = errors.New("input/output error")
	tries := store.tries
	store.mu.Unlock()
	cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: 1, Timeout: 30000,
		Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
	n.Propose(cmd.Encode(), 0)
	eventually(t, "the server whose log failed to stop serving", func() bool { return !n.serving.Load() })
	eventually(t, "Raft not to stand again", func() bool { return r.ReloadableConfig().ElectionTimeout == neverStand })
	n.Stop()
	store.mu.Lock()
	assert.Equal(t, tries+1, store.tries, "appends after the failed one")
	store.mu.Unlock()
	assert.False(t, n.serving.Load())
	assert.Contains(t, logged.String(), "the Raft log failed to write")
}

// A durable standalone server restarted with entries in its log past its
// newest snapshot has applied them all when Start returns: it serves
// nothing older than what it acknowledged before, as a ZooKeeper reads its
// whole log before it serves.
func TestStandalone_StartReturnsOnceTheLogIsApplied(t *testing.T) {
	dir := t.TempDir()
	start := func() *Node {
		n := New(Config{TickTime: 100 * time.Millisecond, RaftTimeout: 100 * time.Millisecond, SnapCount: 1000000,
			SnapRetainCount: 3, DataDir: dir, LogStore: LogStoreWAL, Logger: quietLogger()}, raftfsm.New(nil), nopHost{})
		require.NoError(t, n.Start())
		return n
	}
	n := start()
	const sessions = 20000 // past any snapshot: all of them replayed at the restart
	for i := range sessions {
		cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: int64(i + 1), Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		n.Propose(cmd.Encode(), 0)
	}
	eventually(t, "the last session to be applied", func() bool {
		_, ok := n.fsm.Session(sessions)
		return ok
	})
	n.Stop()
	n.Wait()
	again := start()
	t.Cleanup(func() { again.Stop(); again.Wait() })
	_, ok := again.fsm.Session(sessions)
	assert.True(t, ok, "the last session, applied before the restart, when Start returns")
}

// noopFailing fails the write of a leader's first entry, a no-op, as if
// the disk failed just as a standalone server started.
type noopFailing struct{ raft.LogStore }

func (s noopFailing) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s noopFailing) StoreLogs(logs []*raft.Log) error {
	for _, l := range logs {
		if l.Type == raft.LogNoop {
			return errors.New("input/output error")
		}
	}
	return s.LogStore.StoreLogs(logs)
}

// A standalone server whose log fails as it starts does not start: Start
// says why, rather than serving with a log it cannot write or waiting for
// a leadership that will not come.
func TestLatchedLog_AStandaloneServerWhoseLogFailsAtStartDoesNotStart(t *testing.T) {
	for i := range 5 { // the failure races Start's last steps
		n := New(Config{TickTime: 100 * time.Millisecond, RaftTimeout: 100 * time.Millisecond, SnapCount: 100000,
			SnapRetainCount: 3, DataDir: t.TempDir(), LogStore: LogStoreWAL, Logger: quietLogger(),
			wrapLogStore: func(s raft.LogStore) raft.LogStore { return noopFailing{s} }}, raftfsm.New(nil), nopHost{})
		err := n.Start()
		n.Stop()
		n.Wait()
		require.Error(t, err, "run %d", i)
		assert.Contains(t, err.Error(), "failed to write: input/output error", "run %d", i)
		assert.False(t, n.serving.Load(), "run %d", i)
	}
}

// Once a write failed, every later write fails with its error and none
// reaches the store: a failed fsync may have dropped its pages, and a
// later one can succeed without them.
func TestLatchedLog_WritesNothingAfterAFailure(t *testing.T) {
	store := newHeldStore()
	failures := 0
	l := &latchedLog{LogStore: store, onFail: func() { failures++ }}
	require.NoError(t, l.StoreLogs(entries(1, 3)))
	require.NoError(t, l.failed())
	boom := errors.New("input/output error")
	store.fail = boom
	assert.ErrorIs(t, l.StoreLogs(entries(4, 5)), boom)
	store.fail = nil // the disk answers again
	assert.ErrorIs(t, l.StoreLog(entries(4, 4)[0]), boom)
	assert.ErrorIs(t, l.DeleteRange(2, 3), boom)
	assert.ErrorIs(t, l.failed(), boom)
	assert.Equal(t, 2, store.tries, "appends that reached the store")
	assert.Equal(t, 1, failures, "failures reported")
	last, err := l.LastIndex()
	require.NoError(t, err)
	assert.Equal(t, uint64(3), last, "nothing deleted")
}

// A durable follower applies what the leader says is committed while its
// own disk still holds the entries up, and its answer, which says the
// entries are on its disk, waits for that disk: with the other follower
// stopped, nothing more commits until the slow disk has written.
func TestOverlapLog_AFollowerAppliesWhileItWritesAndAnswersOnceWritten(t *testing.T) {
	nodes, stores := startHeldNodes(t)
	leader := leaderOf(nodes)
	var slow, other *Node
	for _, n := range nodes {
		switch {
		case n == leader:
		case slow == nil:
			slow = n
		default:
			other = n
		}
	}
	propose := func(session int64) uint64 {
		before := leader.trans.storedCommand.Load()
		cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: session, Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		leader.Propose(cmd.Encode(), 0)
		eventually(t, "the leader to take the entry", func() bool { return leader.trans.storedCommand.Load() > before })
		return leader.trans.storedCommand.Load()
	}
	applied := func(n *Node, session int64) bool {
		_, ok := n.fsm.Session(session)
		return ok
	}
	propose(1)
	for _, n := range nodes {
		eventually(t, "every member to apply the first session", func() bool { return applied(n, 1) })
	}

	store := stores[slow.cfg.ServerID-1]
	store.hold()
	t.Cleanup(store.release) // before the members stop, should the test fail
	propose(2)
	store.awaitWriter(t)
	eventually(t, "the slow follower to apply the second session", func() bool { return applied(slow, 2) })
	assert.EqualValues(t, 1, store.waiting.Load(), "its disk still holds the second session up")

	other.Stop()
	other.Wait()
	third := propose(3)
	eventually(t, "the slow follower's Raft to store the third session", func() bool { return slow.raftNow().LastIndex() >= third })
	r := leader.raftNow()
	assert.Never(t, func() bool { return r.CommitIndex() >= third }, 200*time.Millisecond, 10*time.Millisecond,
		"committed with an answer from a member whose disk does not have the entry")
	assert.False(t, applied(slow, 3))
	store.release()
	eventually(t, "the third session to commit", func() bool { return r.CommitIndex() >= third })
	eventually(t, "the slow follower to apply the third session", func() bool { return applied(slow, 3) })
}

// Appends stop running ahead of the disk once more than maxQueuedBytes of
// entries wait for it (a follower catching up takes a leader's requests
// faster than its disk writes them); once written, they run ahead again.
func TestOverlapLog_AppendsWaitOnceTooMuchIsQueued(t *testing.T) {
	store, l := newTestLog(t)
	half := func(i uint64) []*raft.Log {
		e := entries(i, i)
		e[0].Data = make([]byte, maxQueuedBytes/2+1)
		return e
	}
	store.hold()
	require.NoError(t, l.StoreLogs(half(1)), "under the bound: does not wait")
	store.awaitWriter(t)
	stored := make(chan error)
	go func() { stored <- l.StoreLogs(half(2)) }()
	eventually(t, "the second append to be queued", func() bool { last, _ := l.LastIndex(); return last == 2 })
	requireWaiting(t, stored, "an append past the bound")
	store.release()
	require.NoError(t, <-stored)
	store.hold()
	require.NoError(t, l.StoreLogs(entries(3, 3)), "written: appends run ahead again")
	store.release()
}

// A member applies what a leader said is committed before its own disk has
// it; a snapshot of that state waits until the disk has everything applied
// (after a crash, the log on disk must reach the newest snapshot), and
// there is none if the write fails.
func TestNotifyingFSM_ASnapshotWaitsForTheDisk(t *testing.T) {
	store, l := newTestLog(t)
	f := notifyingFSM{FSM: raftfsm.New(nil), committed: func(uint64, uint64) {},
		durable: func(uint64) bool { return true }, // committed elsewhere: applied at once
		failed:  l.failed, flushed: l.flushTo, applied: new(atomic.Uint64)}
	cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: 1, Timeout: 30000, Passwd: make([]byte, 16)}
	entry := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()}
	store.hold()
	require.NoError(t, l.StoreLogs([]*raft.Log{entry}))
	store.awaitWriter(t)
	f.ApplyBatch([]*raft.Log{entry})
	_, ok := f.FSM.Session(1)
	require.True(t, ok, "applied before the disk has it")
	snapped := make(chan error)
	go func() {
		snap, err := f.Snapshot()
		if err == nil {
			snap.Release()
		}
		snapped <- err
	}()
	select {
	case err := <-snapped:
		t.Fatalf("a snapshot was taken before the disk had what it holds (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	store.release()
	require.NoError(t, <-snapped)

	failure := errors.New("disk on fire")
	store.mu.Lock()
	store.fail = failure
	store.mu.Unlock()
	entry = &raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: (&raftfsm.Command{Type: raftfsm.TypeCreateSession,
		Session: 2, Timeout: 30000, Passwd: make([]byte, 16)}).Encode()}
	require.NoError(t, l.StoreLogs([]*raft.Log{entry}))
	f.Apply(entry)
	_, err := f.Snapshot()
	assert.ErrorIs(t, err, failure)
}
