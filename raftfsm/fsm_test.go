package raftfsm_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

func TestFSM_New(t *testing.T) {
	f := newFSM(t, nil)
	assert.Equal(t, int64(0), f.LastZxid())
	assert.Empty(t, f.Sessions())
	assert.Equal(t, tree.New().Digest(), f.Digest())
	_, ok := f.Session(sessA)
	assert.False(t, ok)
}

func TestFSM_Sessions(t *testing.T) {
	a := newApplier(t, nil)
	res := a.mustApplyOK(newCreateSession(sessB, 4000, []byte("passwd-b")))
	assert.Nil(t, res.Resp)
	assert.Empty(t, res.Triggers)
	a.mustApplyOK(newCreateSession(sessA, 30000, []byte{}))

	s, ok := a.fsm.Session(sessB)
	require.True(t, ok)
	assert.Equal(t, raftfsm.Session{ID: sessB, Timeout: 4000, Passwd: []byte("passwd-b")}, s)
	assert.Equal(t, []raftfsm.Session{
		{ID: sessA, Timeout: 30000, Passwd: []byte{}},
		{ID: sessB, Timeout: 4000, Passwd: []byte("passwd-b")},
	}, a.fsm.Sessions(), "ordered by id")
	assert.Equal(t, 2, a.fsm.SessionCount())

	tests := []struct {
		name string
		cmd  raftfsm.Command
		want wire.Code
	}{
		{name: "duplicate session", cmd: newCreateSession(sessA, 1, nil), want: wire.CodeNodeExists},
		{name: "session zero", cmd: newCreateSession(0, 1, nil), want: wire.CodeNodeExists},
		{name: "close unknown", cmd: newCloseSession(0x777), want: wire.CodeSessionExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := a.fsm.Sessions()
			assert.Equal(t, tc.want, a.mustApply(tc.cmd).Code)
			assert.Equal(t, before, a.fsm.Sessions(), "unchanged")
		})
	}
	s, _ = a.fsm.Session(sessA)
	assert.Equal(t, int32(30000), s.Timeout, "a duplicate create does not overwrite")
}

func TestFSM_CloseSessionDeletesEphemerals(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	a.mustApplyOK(newCreateSession(sessB, 4000, nil))
	a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/app", wire.FlagPersistent))
	a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/app/e1", wire.FlagEphemeral))
	a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/e0", wire.FlagEphemeral))
	a.mustApplyOK(newCreateReq(sessB, wire.OpCreate, "/app/theirs", wire.FlagEphemeral))

	res := a.mustApplyOK(newCloseSession(sessA))
	assert.Equal(t, []tree.Trigger{
		{Path: "/app/e1", Event: wire.EventNodeDeleted}, {Path: "/app", Event: wire.EventNodeChildrenChanged},
		{Path: "/e0", Event: wire.EventNodeDeleted}, {Path: "/", Event: wire.EventNodeChildrenChanged},
	}, noACL(res.Triggers))
	assert.False(t, a.exists("/app/e1"))
	assert.False(t, a.exists("/e0"))
	assert.True(t, a.exists("/app/theirs"))
	assert.Equal(t, int64(res.Index), a.mustStat("/app").Pzxid, "one zxid for the whole close")
	assert.Equal(t, int64(res.Index), a.mustStat("/").Pzxid)
	_, ok := a.fsm.Session(sessA)
	assert.False(t, ok)
	a.fsm.Read(func(tr *tree.Tree) {
		assert.False(t, tr.HasEphemerals(sessA))
		assert.True(t, tr.HasEphemerals(sessB))
	})

	// The closed session is gone for good.
	assert.Equal(t, wire.CodeSessionExpired, a.mustApply(newCloseSession(sessA)).Code)
	assert.Equal(t, wire.CodeSessionExpired, a.mustApply(newCreateReq(sessA, wire.OpCreate, "/late", 0)).Code)
	assert.False(t, a.exists("/late"))
}

func TestFSM_RequestChecks(t *testing.T) {
	reconfig := &wire.ReconfigRequest{JoiningServers: "server.4=h:2888:3888", CurConfigID: -1}
	tests := []struct {
		name string
		cmd  raftfsm.Command
		want wire.Code
	}{
		{name: "unknown session", cmd: newCreateReq(0x999, wire.OpCreate, "/x", 0), want: wire.CodeSessionExpired},
		{
			name: "unknown session beats a bad body",
			cmd:  raftfsm.Command{Type: raftfsm.TypeRequest, Session: 0x999, Op: wire.OpCreate, Body: []byte{1}},
			want: wire.CodeSessionExpired,
		},
		{name: "garbage body", cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: wire.OpCreate, Body: []byte{0, 0, 0, 9, 'x'}}, want: wire.CodeMarshallingError},
		{name: "empty body", cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: wire.OpSetData}, want: wire.CodeMarshallingError},
		{
			name: "multi with a bad sub-op type",
			cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: wire.OpMulti,
				Body: wire.MultiHeader{Type: wire.OpSetACL, Err: -1}.Append(nil)},
			want: wire.CodeMarshallingError,
		},
		{
			name: "multi of reads",
			cmd: newRequest(sessA, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
				{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/"}},
			}}),
			want: wire.CodeMarshallingError,
		},
		{name: "reconfig", cmd: newRequest(sessA, wire.OpReconfig, reconfig), want: wire.CodeReconfigDisabled},
		{name: "reconfig with garbage body", cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: wire.OpReconfig, Body: []byte{7}}, want: wire.CodeMarshallingError},
		{name: "read op", cmd: newRequest(sessA, wire.OpGetData, &wire.PathWatchRequest{Path: "/"}), want: wire.CodeUnimplemented},
		{name: "sync", cmd: newRequest(sessA, wire.OpSync, &wire.PathRequest{Path: "/"}), want: wire.CodeUnimplemented},
		{name: "standalone check passes", cmd: newRequest(sessA, wire.OpCheck, &wire.CheckVersionRequest{Path: "/", Version: -1}), want: wire.CodeOK},
		{name: "standalone check fails", cmd: newRequest(sessA, wire.OpCheck, &wire.CheckVersionRequest{Path: "/", Version: 3}), want: wire.CodeBadVersion},
		{name: "client deleteContainer", cmd: newRequest(sessA, wire.OpDeleteContainer, &wire.PathRequest{Path: "/zookeeper/quota"}), want: wire.CodeBadArguments},
		{name: "op without body", cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: wire.OpPing}, want: wire.CodeUnimplemented},
		{name: "unknown op", cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: 999, Body: []byte{1, 2}}, want: wire.CodeUnimplemented},
		{name: "createSession op", cmd: raftfsm.Command{Type: raftfsm.TypeRequest, Session: sessA, Op: wire.OpCreateSession}, want: wire.CodeUnimplemented},
		{name: "createTTL disabled", cmd: newRequest(sessA, wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 10}), want: wire.CodeUnimplemented},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t, nil)
			a.mustApplyOK(newCreateSession(sessA, 4000, nil))
			before := a.fsm.Digest()
			res := a.mustApply(tc.cmd)
			assert.Equal(t, tc.want, res.Code)
			assert.Nil(t, res.Resp)
			assert.Empty(t, res.Triggers)
			assert.Equal(t, before, a.fsm.Digest())
			assert.Equal(t, int64(2), a.fsm.LastZxid(), "a failed write still consumes its zxid")
		})
	}
}

func TestFSM_WriteResponses(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	ttl := newRequest(sessA, wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 10})
	ttl.ExtendedTypes = true

	res := a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/p", wire.FlagPersistent))
	assert.Equal(t, &wire.CreateResponse{Path: "/p"}, res.Resp)
	res = a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, &wire.CreateResponse{Path: "/p/s0000000000"}, res.Resp)
	res = a.mustApplyOK(newCreateReq(sessA, wire.OpCreate2, "/p2", wire.FlagEphemeral))
	assert.Equal(t, &wire.Create2Response{Path: "/p2", Stat: a.mustStat("/p2")}, res.Resp)
	assert.Equal(t, sessA, a.mustStat("/p2").EphemeralOwner)
	res = a.mustApplyOK(newCreateReq(sessA, wire.OpCreateContainer, "/c", wire.FlagContainer))
	assert.Equal(t, &wire.Create2Response{Path: "/c", Stat: a.mustStat("/c")}, res.Resp)
	res = a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/flag4", wire.FlagContainer))
	assert.Equal(t, &wire.CreateResponse{Path: "/flag4"}, res.Resp, "create with flag 4 is a plain create")
	res = a.mustApplyOK(ttl)
	assert.Equal(t, &wire.Create2Response{Path: "/t", Stat: a.mustStat("/t")}, res.Resp)

	res = a.mustApplyOK(newRequest(sessA, wire.OpSetData, &wire.SetDataRequest{Path: "/p", Data: []byte("v1"), Version: 0}))
	assert.Equal(t, &wire.StatResponse{Stat: a.mustStat("/p")}, res.Resp)
	assert.Equal(t, int32(1), a.mustStat("/p").Version)
	assert.Equal(t, []tree.Trigger{{Path: "/p", Event: wire.EventNodeDataChanged}}, noACL(res.Triggers))

	res = a.mustApplyOK(newRequest(sessA, wire.OpDelete, &wire.DeleteRequest{Path: "/p/s0000000000", Version: -1}))
	assert.Nil(t, res.Resp, "delete replies with the header only")
	assert.Equal(t, []tree.Trigger{
		{Path: "/p/s0000000000", Event: wire.EventNodeDeleted},
		{Path: "/p", Event: wire.EventNodeChildrenChanged},
	}, noACL(res.Triggers))

	res = a.mustApplyOK(newRequest(sessA, wire.OpSetACL, &wire.SetACLRequest{Path: "/p", ACL: wire.ReadACLUnsafe, Version: 0}))
	assert.Equal(t, &wire.StatResponse{Stat: a.mustStat("/p")}, res.Resp)
	assert.Equal(t, int32(1), a.mustStat("/p").Aversion)
	assert.Empty(t, res.Triggers)

	res = a.mustApply(newRequest(sessA, wire.OpSetData, &wire.SetDataRequest{Path: "/p", Version: -1}))
	assert.Equal(t, wire.CodeNoAuth, res.Code, "/p now has a world READ-only ACL")
	assert.Nil(t, res.Resp)
	res = a.mustApply(newRequest(sessA, wire.OpDelete, &wire.DeleteRequest{Path: "/p", Version: 5}))
	assert.Equal(t, wire.CodeBadVersion, res.Code)
	assert.Nil(t, res.Resp)

	// Only the leader's reaper deletes containers: a client's
	// deleteContainer never passes ZooKeeper 3.8's path check.
	res = a.mustApply(newRequest(sessA, wire.OpDeleteContainer, &wire.PathRequest{Path: "/c"}))
	assert.Equal(t, wire.CodeBadArguments, res.Code)
	assert.Nil(t, res.Resp)
	assert.True(t, a.exists("/c"))
}

func TestFSM_ZxidIsLogIndex(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	a.index = 41 // Raft indexes need not start at 1 nor be dense for the FSM.
	res := a.mustApplyOK(newCreateReq(sessA, wire.OpCreate2, "/x", 0))
	assert.Equal(t, uint64(42), res.Index)
	assert.Equal(t, int64(42), a.fsm.LastZxid())
	st := a.mustStat("/x")
	assert.Equal(t, int64(42), st.Czxid)
	assert.Equal(t, int64(42), st.Mzxid)
	assert.Equal(t, int64(42), st.Pzxid)
	assert.Equal(t, baseTime, st.Ctime, "time comes from the command")
	assert.Equal(t, int64(42), a.mustStat("/").Pzxid)

	cmd := newRequest(sessA, wire.OpSetData, &wire.SetDataRequest{Path: "/x", Data: nil, Version: -1})
	cmd.Time = baseTime + 5000
	a.mustApplyOK(cmd)
	st = a.mustStat("/x")
	assert.Equal(t, int64(43), st.Mzxid)
	assert.Equal(t, baseTime+5000, st.Mtime)
	assert.Equal(t, int64(43), a.fsm.LastZxid())

	a.mustApply(newCreateReq(sessA, wire.OpCreate, "/x", 0)) // NODEEXISTS
	assert.Equal(t, int64(44), a.fsm.LastZxid(), "failed writes consume a zxid")
	a.mustApplyOK(newCloseSession(sessA))
	assert.Equal(t, int64(45), a.fsm.LastZxid(), "so does closeSession")
}

func TestFSM_AuthTravelsInTheCommand(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	create := newRequest(sessA, wire.OpCreate, &wire.CreateRequest{Path: "/mine", ACL: wire.CreatorAllACL})
	assert.Equal(t, wire.CodeInvalidACL, a.mustApply(create).Code, "auth ACL without identities")
	create.Auth = []wire.Id{{Scheme: "ip", ID: "127.0.0.1"}, aliceID}
	a.mustApplyOK(create)

	set := newRequest(sessA, wire.OpSetData, &wire.SetDataRequest{Path: "/mine", Data: []byte("x"), Version: -1})
	set.Auth = []wire.Id{{Scheme: "ip", ID: "127.0.0.1"}}
	assert.Equal(t, wire.CodeNoAuth, a.mustApply(set).Code)
	set.Auth = []wire.Id{aliceID}
	a.mustApplyOK(set)
	set.Auth = []wire.Id{superID}
	a.mustApplyOK(set)
}

func TestFSM_Multi(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	ok := newRequest(sessA, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m", ACL: wire.OpenACLUnsafe}},
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m/e", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral}},
		{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: "/m", Version: 0}},
	}})
	res := a.mustApplyOK(ok)
	assert.Equal(t, &wire.MultiResponse{Results: []wire.MultiResult{
		{Type: wire.OpCreate, Path: "/m"}, {Type: wire.OpCreate, Path: "/m/e"}, {Type: wire.OpCheck},
	}}, res.Resp)
	assert.Len(t, res.Triggers, 4)
	assert.Equal(t, int64(res.Index), a.mustStat("/m/e").Czxid)

	bad := newRequest(sessA, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/m/e", Version: -1}},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/m/e", Version: -1}},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/m", Version: -1}},
	}})
	res = a.mustApply(bad)
	assert.Equal(t, wire.CodeOK, res.Code, "a failed multi still has header code OK")
	assert.Equal(t, &wire.MultiResponse{Results: []wire.MultiResult{
		{Type: wire.OpError, Err: wire.CodeOK},
		{Type: wire.OpError, Err: wire.CodeNoNode},
		{Type: wire.OpError, Err: wire.CodeRuntimeInconsistency},
	}}, res.Resp)
	assert.Empty(t, res.Triggers)
	assert.True(t, a.exists("/m/e"))

	res = a.mustApplyOK(newRequest(sessA, wire.OpMulti, &wire.MultiRequest{}))
	assert.Equal(t, &wire.MultiResponse{Results: []wire.MultiResult{}}, res.Resp, "an empty multi")
	assert.Equal(t, int64(res.Index), a.fsm.LastZxid(), "an empty multi consumes a zxid")
}

func TestFSM_Reap(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	a.mustApplyOK(newCreateReq(sessA, wire.OpCreateContainer, "/c", 0))
	a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/c/x", 0))
	a.mustApplyOK(newCreateReq(sessA, wire.OpCreate, "/e", wire.FlagEphemeral))
	reap := func(p string) raftfsm.Command {
		return raftfsm.Command{Type: raftfsm.TypeReap, Time: baseTime, Path: p}
	}

	assert.Equal(t, wire.CodeNotEmpty, a.mustApply(reap("/c")).Code)
	assert.Equal(t, wire.CodeBadVersion, a.mustApply(reap("/e")).Code)
	assert.Equal(t, wire.CodeNoNode, a.mustApply(reap("/missing")).Code)
	assert.Equal(t, wire.CodeBadArguments, a.mustApply(reap("/zookeeper")).Code)
	a.mustApplyOK(newRequest(sessA, wire.OpDelete, &wire.DeleteRequest{Path: "/c/x", Version: -1}))
	res := a.mustApplyOK(reap("/c"))
	assert.Nil(t, res.Resp)
	assert.Equal(t, []tree.Trigger{
		{Path: "/c", Event: wire.EventNodeDeleted}, {Path: "/", Event: wire.EventNodeChildrenChanged},
	}, noACL(res.Triggers))
	assert.False(t, a.exists("/c"))
}

func TestFSM_SkipsNonCommandLogs(t *testing.T) {
	obs := &recordingObserver{}
	a := newApplier(t, obs)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	digest := a.fsm.Digest()
	for i, typ := range []raft.LogType{raft.LogNoop, raft.LogConfiguration, raft.LogBarrier, raft.LogAddPeerDeprecated} {
		out := a.fsm.Apply(&raft.Log{Index: uint64(10 + i), Type: typ, Data: []byte("not a command")})
		assert.Nil(t, out, "log type %v", typ)
	}
	assert.Equal(t, int64(1), a.fsm.LastZxid())
	assert.Equal(t, digest, a.fsm.Digest())
	assert.Len(t, obs.applied, 1)
}

func TestFSM_UnknownCommandType(t *testing.T) {
	obs := &recordingObserver{}
	f := newFSM(t, obs)
	require.Nil(t, f.Apply(newLog(1, newCreateSession(sessA, 4000, nil))).(*raftfsm.Result).Resp)

	for _, typ := range []raftfsm.Type{0, 6, 0x10, 0x7f} {
		assert.Panics(t, func() {
			f.Apply(newLog(2, raftfsm.Command{Type: typ, Session: sessA}))
		}, "type %#x", typ)
	}
	assert.Panics(t, func() { f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{1, 2}}) }, "undecodable entry")
	assert.Panics(t, func() { f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand}) }, "empty entry")

	for i, typ := range []raftfsm.Type{raftfsm.Ignorable, raftfsm.Ignorable | 0x10, 0xff} {
		out := f.Apply(newLog(uint64(3+i), raftfsm.Command{Type: typ, Session: sessA, Time: baseTime}))
		assert.Nil(t, out, "ignorable type %#x is skipped", typ)
	}
	assert.Equal(t, int64(1), f.LastZxid(), "skipped entries are not zxids")
	assert.Len(t, obs.applied, 1, "the observer hears of applied commands only")
}

func TestFSM_IgnorableKnownTypeIsApplied(t *testing.T) {
	a := newApplier(t, nil)
	cmd := newCreateSession(sessA, 5000, []byte("pw"))
	cmd.Type |= raftfsm.Ignorable
	res := a.mustApplyOK(cmd)
	assert.Equal(t, cmd.Type, res.Command.Type)
	s, ok := a.fsm.Session(sessA)
	require.True(t, ok)
	assert.Equal(t, raftfsm.Session{ID: sessA, Timeout: 5000, Passwd: []byte("pw")}, s)

	req := newCreateReq(sessA, wire.OpCreate, "/x", 0)
	req.Type |= raftfsm.Ignorable
	res = a.mustApplyOK(req)
	assert.Equal(t, &wire.CreateResponse{Path: "/x"}, res.Resp)
}

// sampleHistory is a command sequence touching every handler.
func sampleHistory() []raftfsm.Command {
	ext := newRequest(sessA, wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 10})
	ext.ExtendedTypes = true
	return []raftfsm.Command{
		newCreateSession(sessA, 4000, []byte("a")),
		newCreateSession(sessB, 6000, nil),
		newCreateReq(sessA, wire.OpCreate, "/app", 0),
		newCreateReq(sessA, wire.OpCreate, "/app/e-", wire.FlagEphemeralSequential),
		newCreateReq(sessB, wire.OpCreate2, "/app/b", wire.FlagEphemeral),
		newCreateReq(sessA, wire.OpCreateContainer, "/c", 0),
		ext,
		newCreateReq(sessA, wire.OpCreate, "/app", 0), // NODEEXISTS
		newRequest(sessA, wire.OpSetData, &wire.SetDataRequest{Path: "/app", Data: []byte("v"), Version: 0}),
		newRequest(sessB, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
			{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: "/c/x", ACL: wire.OpenACLUnsafe}},
			{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: "/c/x", Version: -1}},
		}}),
		{Type: raftfsm.TypeReap, Time: baseTime, Path: "/c"},
		newCloseSession(sessA),
		newCreateReq(sessA, wire.OpCreate, "/late", 0), // SESSIONEXPIRED
	}
}

func TestFSM_ApplyBatchEqualsApply(t *testing.T) {
	history := sampleHistory()
	logs := make([]*raft.Log, 0, len(history)+1)
	for _, cmd := range history {
		if len(logs) == 3 {
			// A non-command entry in the middle: nil result, no zxid.
			logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogNoop})
		}
		logs = append(logs, newLog(uint64(len(logs)+1), cmd))
	}

	seqObs, batchObs := &recordingObserver{}, &recordingObserver{}
	seq, batch := newFSM(t, seqObs), newFSM(t, batchObs)
	seqOut := make([]any, len(logs))
	for i, l := range logs {
		seqOut[i] = seq.Apply(l)
	}
	batchOut := batch.ApplyBatch(logs)

	require.Len(t, batchOut, len(logs))
	assert.Nil(t, seqOut[3])
	assert.Nil(t, batchOut[3])
	for i := range logs {
		if i == 3 {
			continue
		}
		s, b := seqOut[i].(*raftfsm.Result), batchOut[i].(*raftfsm.Result)
		assert.Equal(t, s, b, "log %d", i)
	}
	assert.Equal(t, seq.Digest(), batch.Digest())
	assert.Equal(t, seq.Sessions(), batch.Sessions())
	assert.Equal(t, seq.LastZxid(), batch.LastZxid())
	assert.Equal(t, int64(len(logs)), batch.LastZxid())
	require.Len(t, batchObs.applied, len(history))
	for i := range seqObs.applied {
		assert.Equal(t, seqObs.applied[i].digest, batchObs.applied[i].digest)
		assert.Equal(t, seqObs.applied[i].res.Index, batchObs.applied[i].res.Index)
	}
}

func TestFSM_ObserverSeesEveryResultInOrder(t *testing.T) {
	obs := &recordingObserver{}
	a := newApplier(t, obs)
	var results []*raftfsm.Result
	var digests []uint64
	for _, cmd := range sampleHistory() {
		results = append(results, a.mustApply(cmd))
		digests = append(digests, a.fsm.Digest())
	}
	require.Len(t, obs.applied, len(results))
	for i, o := range obs.applied {
		assert.Same(t, results[i], o.res, "the observer gets the Result Apply returns")
		assert.Equal(t, uint64(i+1), o.res.Index)
		assert.Equal(t, digests[i], o.digest, "the observer sees the tree with command %d applied", i)
	}
	assert.Empty(t, obs.restored)
}

func TestFSM_ConcurrentReads(t *testing.T) {
	a := newApplier(t, nil)
	a.mustApplyOK(newCreateSession(sessA, 4000, nil))
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				a.fsm.Read(func(tr *tree.Tree) { _ = tr.Len() })
				_ = a.fsm.Digest()
				_ = a.fsm.Sessions()
				_ = a.fsm.LastZxid()
				_, _ = a.fsm.Session(sessA)
				_ = a.fsm.Check()
			}
		})
	}
	for i := range 200 {
		a.mustApplyOK(newRequest(sessA, wire.OpCreate, &wire.CreateRequest{
			Path: "/n", Data: bytes.Repeat([]byte{byte(i)}, 8), ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentSequential,
		}))
	}
	close(done)
	wg.Wait()
	a.fsm.Read(func(tr *tree.Tree) { assert.Equal(t, 4+200, tr.Len()) })
}

// TestFSM_RequestWithoutSessionIsRefused shows that no request can act
// without a live session: session 0 is the server's own, never a client's.
func TestFSM_RequestWithoutSessionIsRefused(t *testing.T) {
	a := newApplier(t, nil)
	res := a.mustApply(newCreateReq(0, wire.OpCreate, "/orphan", wire.FlagEphemeral))
	assert.Equal(t, wire.CodeSessionExpired, res.Code)
	assert.False(t, a.exists("/orphan"))
}

// The leader's own reconfig (Session 0) versions the configuration once:
// a second, proposed by a leader elected before the first applied there,
// changes nothing and carries no response.
func TestFSM_LeaderVersionsTheConfigurationOnce(t *testing.T) {
	a := newApplier(t, nil)
	a.fsm.SetConfig([]byte("server.1=127.0.0.1:1:2:participant\nversion=0"))
	assert.False(t, a.fsm.ConfigVersioned())
	version := raftfsm.Command{Type: raftfsm.TypeReconfig, Time: baseTime, Body: []byte("server.1=127.0.0.1:1:2:participant\n")}
	res := a.mustApplyOK(version)
	resp, ok := res.Resp.(*wire.GetDataResponse)
	require.True(t, ok)
	assert.Equal(t, fmt.Sprintf("server.1=127.0.0.1:1:2:participant\nversion=%x", res.Index), string(resp.Data))
	assert.Equal(t, int64(res.Index), resp.Stat.Mzxid)
	assert.True(t, a.fsm.ConfigVersioned())
	config := a.fsm.Config()

	res = a.mustApplyOK(version)
	assert.Nil(t, res.Resp)
	assert.Equal(t, config, a.fsm.Config())
}
