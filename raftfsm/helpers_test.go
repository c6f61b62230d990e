package raftfsm_test

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Sessions and identities used by the tests.
const (
	sessA int64 = 0x100000000000a
	sessB int64 = 0x100000000000b
)

var (
	aliceID = wire.Id{Scheme: tree.SchemeDigest, ID: "alice:aGFzaA=="}
	superID = wire.Id{Scheme: tree.SchemeSuper, ID: ""}
)

// baseTime is the proposer's clock the tests stamp on commands.
const baseTime int64 = 1_700_000_000_000

// newFSM returns an FSM whose invariants are checked when the test ends.
func newFSM(t testing.TB, obs raftfsm.Observer) *raftfsm.FSM {
	t.Helper()
	f := raftfsm.New(obs)
	mustCheckAtEnd(t, f)
	return f
}

// mustCheckAtEnd registers a cleanup asserting that f.Check() is nil.
func mustCheckAtEnd(t testing.TB, f *raftfsm.FSM) {
	t.Helper()
	t.Cleanup(func() { assert.NoError(t, f.Check(), "FSM invariants at the end of the test") })
}

// logApplier feeds commands to an FSM as consecutive Raft log entries.
type logApplier struct {
	t     testing.TB
	fsm   *raftfsm.FSM
	index uint64
}

// newApplier returns a logApplier over a fresh FSM, starting at index 1.
func newApplier(t testing.TB, obs raftfsm.Observer) *logApplier {
	t.Helper()
	return &logApplier{t: t, fsm: newFSM(t, obs)}
}

// newLog returns the log entry carrying cmd at index.
func newLog(index uint64, cmd raftfsm.Command) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()}
}

// mustApply applies cmd at the next index and returns its Result.
func (a *logApplier) mustApply(cmd raftfsm.Command) *raftfsm.Result {
	a.t.Helper()
	a.index++
	out := a.fsm.Apply(newLog(a.index, cmd))
	res, ok := out.(*raftfsm.Result)
	require.True(a.t, ok, "Apply returned %T, want *raftfsm.Result", out)
	require.Equal(a.t, a.index, res.Index)
	return res
}

// mustApplyOK applies cmd and requires code OK.
func (a *logApplier) mustApplyOK(cmd raftfsm.Command) *raftfsm.Result {
	a.t.Helper()
	res := a.mustApply(cmd)
	require.Equal(a.t, wire.CodeOK, res.Code, "command %+v", cmd)
	return res
}

// mustStat returns the Stat of a node that must exist.
func (a *logApplier) mustStat(path string) wire.Stat {
	a.t.Helper()
	var st wire.Stat
	var ok bool
	a.fsm.Read(func(tr *tree.Tree) { st, ok = tr.Stat(path) })
	require.True(a.t, ok, "node %s must exist", path)
	return st
}

// exists reports whether a node exists.
func (a *logApplier) exists(path string) bool {
	var ok bool
	a.fsm.Read(func(tr *tree.Tree) { _, ok = tr.Stat(path) })
	return ok
}

// newRequest returns a TypeRequest command for session with rec as body.
func newRequest(session int64, op wire.Op, rec wire.Record) raftfsm.Command {
	return raftfsm.Command{
		Type: raftfsm.TypeRequest, Origin: 1, ReqID: 99, Session: session, Time: baseTime,
		Op: op, Body: rec.Append(nil),
	}
}

// newCreateReq returns a create request command with an open ACL.
func newCreateReq(session int64, op wire.Op, path string, flags int32) raftfsm.Command {
	return newRequest(session, op, &wire.CreateRequest{Path: path, Data: []byte("d"), ACL: wire.OpenACLUnsafe, Flags: flags})
}

// newCreateSession returns a TypeCreateSession command.
func newCreateSession(id int64, timeout int32, passwd []byte) raftfsm.Command {
	return raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: id, Time: baseTime, Timeout: timeout, Passwd: passwd}
}

// newCloseSession returns a TypeCloseSession command.
func newCloseSession(id int64) raftfsm.Command {
	return raftfsm.Command{Type: raftfsm.TypeCloseSession, Session: id, Time: baseTime}
}

// observation is what recordingObserver saw of one Applied call.
type observation struct {
	res    *raftfsm.Result
	digest uint64 // of the tree, when Applied ran
}

// recordingObserver records every Applied and Restored call.
type recordingObserver struct {
	mu       sync.Mutex
	applied  []observation
	restored []uint64 // digests of restored trees
}

func (o *recordingObserver) Applied(t *tree.Tree, r *raftfsm.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applied = append(o.applied, observation{res: r, digest: t.Digest()})
}

func (o *recordingObserver) Restored(t *tree.Tree) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.restored = append(o.restored, t.Digest())
}

// memSink is an in-memory raft.SnapshotSink. With failAfter >= 0, writes
// fail once that many bytes were written.
type memSink struct {
	buf       bytes.Buffer
	failAfter int
	closed    bool
	cancelled bool
}

var errSinkFull = errors.New("sink full")

func newMemSink() *memSink { return &memSink{failAfter: -1} }

func (s *memSink) ID() string { return "mem" }

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter >= 0 && s.buf.Len()+len(p) > s.failAfter {
		n := s.failAfter - s.buf.Len()
		s.buf.Write(p[:n])
		return n, errSinkFull
	}
	return s.buf.Write(p)
}

func (s *memSink) Close() error {
	s.closed = true
	return nil
}

func (s *memSink) Cancel() error {
	s.cancelled = true
	return nil
}

var _ raft.SnapshotSink = (*memSink)(nil)

// trackingReader is an io.ReadCloser that records Close.
type trackingReader struct {
	io.Reader
	closed bool
}

func (r *trackingReader) Close() error {
	r.closed = true
	return nil
}

// mustSnapshot takes f's snapshot and persists it into memory.
func mustSnapshot(t testing.TB, f *raftfsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	require.NoError(t, err)
	defer snap.Release()
	sink := newMemSink()
	require.NoError(t, snap.Persist(sink))
	require.True(t, sink.closed)
	require.False(t, sink.cancelled)
	return sink.buf.Bytes()
}

// noACL returns triggers without their ACLs, to compare paths and events.
func noACL(ts []tree.Trigger) []tree.Trigger {
	out := make([]tree.Trigger, len(ts))
	for i, t := range ts {
		out[i] = tree.Trigger{Path: t.Path, Event: t.Event}
	}
	return out
}
