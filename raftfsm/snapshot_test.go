package raftfsm_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// newBusyApplier returns an applier whose FSM went through sampleHistory
// and a few more sessions, so that it holds sessions with nil, empty and
// set passwords, ephemerals, containers and TTL nodes.
func newBusyApplier(t testing.TB, obs raftfsm.Observer) *logApplier {
	t.Helper()
	a := newApplier(t, obs)
	for _, cmd := range sampleHistory() {
		a.mustApply(cmd)
	}
	a.mustApplyOK(newCreateSession(0x42, 10000, []byte{}))
	a.mustApplyOK(newCreateSession(-7, 1, bytes.Repeat([]byte{0}, 16)))
	a.mustApplyOK(newCreateReq(0x42, wire.OpCreate, "/app/x", wire.FlagEphemeral))
	a.mustApplyOK(newCreateReq(-7, wire.OpCreate, "/neg", wire.FlagEphemeralSequential))
	return a
}

// mustRestore restores raw into a fresh FSM.
func mustRestore(t testing.TB, raw []byte, obs raftfsm.Observer) *raftfsm.FSM {
	t.Helper()
	f := newFSM(t, obs)
	rc := &trackingReader{Reader: bytes.NewReader(raw)}
	require.NoError(t, f.Restore(rc))
	assert.True(t, rc.closed, "Restore closes its reader")
	return f
}

func TestFSM_SnapshotRestore(t *testing.T) {
	src := newBusyApplier(t, nil)
	raw := mustSnapshot(t, src.fsm)

	obs := &recordingObserver{}
	got := mustRestore(t, raw, obs)
	assert.Equal(t, src.fsm.Digest(), got.Digest())
	assert.Equal(t, src.fsm.Sessions(), got.Sessions(), "ids, timeouts and passwords (nil and empty kept apart)")
	assert.Equal(t, src.fsm.LastZxid(), got.LastZxid())
	assert.NoError(t, got.Check())
	require.Equal(t, []uint64{src.fsm.Digest()}, obs.restored, "Restored called once, with the new tree")
	assert.Empty(t, obs.applied)

	s, ok := got.Session(-7)
	require.True(t, ok)
	assert.Equal(t, raftfsm.Session{ID: -7, Timeout: 1, Passwd: make([]byte, 16)}, s)
	got.Read(func(tr *tree.Tree) {
		assert.ElementsMatch(t, []string{"/app/x"}, tr.Ephemerals(0x42, ""))
		assert.True(t, tr.HasEphemerals(sessB))
	})

	// Both go on identically from the same next log entry.
	next := src.index + 1
	for _, cmd := range []raftfsm.Command{
		newCloseSession(sessB),
		newCreateReq(0x42, wire.OpCreate2, "/app/s-", wire.FlagPersistentSequential),
	} {
		r1 := src.fsm.Apply(newLog(next, cmd)).(*raftfsm.Result)
		r2 := got.Apply(newLog(next, cmd)).(*raftfsm.Result)
		assert.Equal(t, r1.Code, r2.Code)
		assert.Equal(t, r1.Resp, r2.Resp)
		assert.Equal(t, r1.Triggers, r2.Triggers)
		next++
	}
	assert.Equal(t, src.fsm.Digest(), got.Digest())
	assert.Equal(t, src.fsm.Sessions(), got.Sessions())
}

func TestFSM_RestoreReplacesState(t *testing.T) {
	empty := mustSnapshot(t, newFSM(t, nil))
	a := newBusyApplier(t, nil)
	require.NotEmpty(t, a.fsm.Sessions())

	rc := &trackingReader{Reader: bytes.NewReader(empty)}
	require.NoError(t, a.fsm.Restore(rc))
	assert.Empty(t, a.fsm.Sessions())
	assert.Equal(t, int64(0), a.fsm.LastZxid())
	assert.Equal(t, tree.New().Digest(), a.fsm.Digest())
}

func TestFSM_SnapshotIsPointInTime(t *testing.T) {
	a := newBusyApplier(t, nil)
	digest, sessions, zxid := a.fsm.Digest(), a.fsm.Sessions(), a.fsm.LastZxid()
	snap, err := a.fsm.Snapshot()
	require.NoError(t, err)
	defer snap.Release()

	a.mustApplyOK(newCloseSession(sessB))
	a.mustApplyOK(newCreateSession(0x99, 5, nil))
	a.mustApplyOK(newRequest(0x99, wire.OpSetData, &wire.SetDataRequest{Path: "/app", Data: []byte("later"), Version: -1}))
	require.NotEqual(t, digest, a.fsm.Digest())

	sink := newMemSink()
	require.NoError(t, snap.Persist(sink))
	got := mustRestore(t, sink.buf.Bytes(), nil)
	assert.Equal(t, digest, got.Digest())
	assert.Equal(t, sessions, got.Sessions())
	assert.Equal(t, zxid, got.LastZxid())
}

func TestFSM_PersistCancelsOnWriteError(t *testing.T) {
	a := newBusyApplier(t, nil)
	full := mustSnapshot(t, a.fsm)
	for _, limit := range []int{0, 3, 20, len(full) / 2, len(full) - 1} {
		snap, err := a.fsm.Snapshot()
		require.NoError(t, err)
		sink := newMemSink()
		sink.failAfter = limit
		err = snap.Persist(sink)
		assert.ErrorIs(t, err, errSinkFull, "limit %d", limit)
		assert.True(t, sink.cancelled, "limit %d: sink cancelled", limit)
		assert.False(t, sink.closed, "limit %d: sink not closed", limit)
		snap.Release()
	}
}

func TestFSM_RestoreTruncated(t *testing.T) {
	src := newBusyApplier(t, nil)
	raw := mustSnapshot(t, src.fsm)

	obs := &recordingObserver{}
	dst := newBusyApplier(t, obs)
	dst.mustApplyOK(newCreateSession(0x5151, 3, []byte("keep")))
	digest, sessions, zxid := dst.fsm.Digest(), dst.fsm.Sessions(), dst.fsm.LastZxid()
	applied := len(obs.applied)

	for cut := 0; cut < len(raw); cut++ {
		rc := &trackingReader{Reader: bytes.NewReader(raw[:cut])}
		err := dst.fsm.Restore(rc)
		if !assert.ErrorIs(t, err, raftfsm.ErrBadSnapshot, "cut at %d of %d", cut, len(raw)) {
			continue
		}
		assert.True(t, rc.closed, "cut at %d: reader closed", cut)
	}
	assert.Equal(t, digest, dst.fsm.Digest(), "old state intact")
	assert.Equal(t, sessions, dst.fsm.Sessions())
	assert.Equal(t, zxid, dst.fsm.LastZxid())
	assert.Empty(t, obs.restored)
	assert.Len(t, obs.applied, applied)

	// And it still works.
	dst.mustApplyOK(newCreateReq(0x5151, wire.OpCreate, "/still-alive", 0))
}

func TestFSM_RestoreCorrupt(t *testing.T) {
	raw := mustSnapshot(t, newBusyApplier(t, nil).fsm)
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
	}{
		{name: "magic", mutate: func(b []byte) []byte { b[4] = 'X'; return b }},
		{name: "version", mutate: func(b []byte) []byte { b[4+len("ZKRAFT")] = 9; return b }},
		{name: "header length too short", mutate: func(b []byte) []byte { copy(b, []byte{0, 0, 0, 3}); return b }},
		{name: "header length huge", mutate: func(b []byte) []byte { copy(b, []byte{0x7f, 0xff, 0xff, 0xff}); return b }},
		{name: "session count too high", mutate: func(b []byte) []byte {
			// The count follows the 4-byte frame length, magic, version and lastZxid.
			off := 4 + len("ZKRAFT") + 1 + 8
			copy(b[off:], []byte{0, 0, 1, 0})
			return b
		}},
		{name: "session count negative", mutate: func(b []byte) []byte {
			off := 4 + len("ZKRAFT") + 1 + 8
			copy(b[off:], []byte{0xff, 0xff, 0xff, 0xf0})
			return b
		}},
		{name: "tree header", mutate: func(b []byte) []byte {
			hdr := 4 + int(binary.BigEndian.Uint32(b))
			b[hdr] ^= 0xff
			return b
		}},
		{name: "a tree snapshot alone", mutate: func([]byte) []byte {
			var buf bytes.Buffer
			_, err := tree.New().Snapshot(nil).WriteTo(&buf)
			if err != nil {
				panic(err)
			}
			return buf.Bytes()
		}},
		{name: "empty", mutate: func([]byte) []byte { return nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newBusyApplier(t, nil)
			digest := a.fsm.Digest()
			err := a.fsm.Restore(io.NopCloser(bytes.NewReader(tc.mutate(bytes.Clone(raw)))))
			assert.ErrorIs(t, err, raftfsm.ErrBadSnapshot)
			assert.Equal(t, digest, a.fsm.Digest())
		})
	}
}

func TestFSM_RestoreWrapsTreeErrors(t *testing.T) {
	raw := mustSnapshot(t, newBusyApplier(t, nil).fsm)
	f := newFSM(t, nil)
	err := f.Restore(io.NopCloser(bytes.NewReader(raw[:len(raw)-1])))
	assert.ErrorIs(t, err, raftfsm.ErrBadSnapshot)
	assert.ErrorIs(t, err, tree.ErrBadSnapshot)
}

// /zookeeper/config is each member's own: a restore keeps what this member
// set, whatever the snapshot's source held, and replicas' digests leave it
// out.
func TestFSM_ConfigSurvivesRestore(t *testing.T) {
	src := newBusyApplier(t, nil)
	src.fsm.SetConfig([]byte("server.1=a:1:2:participant\nversion=0"))
	raw := mustSnapshot(t, src.fsm)

	dst := newFSM(t, nil)
	dst.SetConfig([]byte("server.1=b:1:2:participant\nversion=0"))
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(raw))))
	dst.Read(func(tr *tree.Tree) {
		data, stat, code := tr.Get(tree.ConfigPath, nil)
		require.Equal(t, wire.CodeOK, code)
		assert.Equal(t, "server.1=b:1:2:participant\nversion=0", string(data))
		assert.Equal(t, int32(-1), stat.Version)
		assert.Zero(t, stat.Mzxid)
	})
	assert.Equal(t, src.fsm.Digest(), dst.Digest(), "the digest leaves out the member's own config")
}
