package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// TestRawMulti covers multi (14) with the sub-op types go-zookeeper cannot
// send or decode, and multiRead (22).
func TestRawMulti(t *testing.T) { runRawCases(t, rawMultiCases) }

var rawMultiCases = []rawCase{
	{"create2, container and TTL sub-ops", rawMultiCreates},
	{"a failed multi changes nothing and fires nothing", rawMultiFailed},
	{"malformed multis", rawMultiMalformed},
	{"multiRead", rawMultiRead},
	{"malformed multiReads", rawMultiReadMalformed},
}

// multiEnd is the terminator of a multi request or reply: {-1, true, -1}.
var multiEnd = []byte{0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0xff, 0xff, 0xff}

func rawMultiCreates(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/m")
	x.create(dir, nil)
	cr := func(path string, flags int32) *wire.CreateRequest {
		return &wire.CreateRequest{Path: path, Data: []byte("d"), ACL: wire.OpenACLUnsafe, Flags: flags}
	}
	ttl := func(path string, flags int32) *wire.CreateTTLRequest {
		return &wire.CreateTTLRequest{Path: path, Data: []byte("t"), ACL: wire.OpenACLUnsafe, Flags: flags, TTL: 3600000}
	}
	x.mustWatchMissing(dir + "/a")
	x.mustWatchMissing(dir + "/p")
	x.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: dir, Watch: true})

	// The result type follows the create mode, not the sub-op's type: 1
	// (path only) for flags 0-3, 15 (path and Stat) for a container or TTL.
	h, body := x.do(wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate2, Req: cr(dir+"/a", wire.FlagPersistent)},
		{Type: wire.OpCreateContainer, Req: cr(dir+"/c", wire.FlagContainer)},
		{Type: wire.OpCreateTTL, Req: ttl(dir+"/t", wire.FlagPersistentWithTTL)},
		{Type: wire.OpCreate, Req: cr(dir+"/c1", wire.FlagContainer)},
		{Type: wire.OpCreateContainer, Req: cr(dir+"/p", wire.FlagPersistent)},
		{Type: wire.OpCreate2, Req: cr(dir+"/s-", wire.FlagPersistentSequential)},
		{Type: wire.OpCreateTTL, Req: ttl(dir+"/ts-", wire.FlagPersistentSequentialWithTTL)},
		{Type: wire.OpCreate2, Req: cr(dir+"/e", wire.FlagEphemeral)},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: dir + "/a", Data: []byte("a2"), Version: 0}},
		{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: dir + "/a", Version: 1}},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: dir + "/p", Version: -1}},
	}},
		// In op order, all before the reply.
		watchEvent{wire.EventNodeCreated, dir + "/a"},
		watchEvent{wire.EventNodeChildrenChanged, dir},
		watchEvent{wire.EventNodeCreated, dir + "/p"},
	)
	require.Equal(t, wire.CodeOK, h.Err)
	got := mustDecode(t, body, &wire.MultiResponse{}).Results

	stats := make(map[string]wire.Stat)
	for _, n := range []string{"/a", "/c", "/t", "/c1", "/ts-0000000006", "/e"} {
		st := x.stat(dir + n)
		assert.Equal(t, h.Zxid, st.Czxid, "%s: every op has the multi's zxid", n)
		stats[n] = st
	}
	assert.Equal(t, x.id, stats["/e"].EphemeralOwner)
	for _, n := range []string{"/c", "/t", "/c1", "/ts-0000000006"} {
		assert.Zero(t, stats[n].EphemeralOwner, n)
	}
	assert.Equal(t, int32(1), stats["/a"].Version)
	assert.Equal(t, []wire.MultiResult{
		{Type: wire.OpCreate, Path: dir + "/a"},
		{Type: wire.OpCreate2, Path: dir + "/c", Stat: stats["/c"]},
		{Type: wire.OpCreate2, Path: dir + "/t", Stat: stats["/t"]},
		{Type: wire.OpCreate2, Path: dir + "/c1", Stat: stats["/c1"]},
		{Type: wire.OpCreate, Path: dir + "/p"},
		{Type: wire.OpCreate, Path: dir + "/s-0000000005"},
		{Type: wire.OpCreate2, Path: dir + "/ts-0000000006", Stat: stats["/ts-0000000006"]},
		{Type: wire.OpCreate, Path: dir + "/e"},
		{Type: wire.OpSetData, Stat: stats["/a"]},
		{Type: wire.OpCheck},
		{Type: wire.OpDelete},
	}, got)
	x.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: dir + "/p"})
	st := x.stat(dir)
	assert.Equal(t, int32(7), st.NumChildren)
	assert.Equal(t, int32(9), st.Cversion)

	// An empty multi is legal: just the terminator.
	h, body = x.do(wire.OpMulti, &wire.MultiRequest{})
	assert.Equal(t, wire.CodeOK, h.Err)
	assert.Equal(t, multiEnd, body)
}

func rawMultiFailed(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/f")
	x.create(dir, nil)
	before := x.stat(dir)
	x.mustWatchMissing(dir + "/a")
	x.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: dir, Watch: true})

	cr := func(path string, flags int32) *wire.CreateRequest {
		return &wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe, Flags: flags}
	}
	h, body := x.do(wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate2, Req: cr(dir+"/a", wire.FlagPersistent)},
		{Type: wire.OpCreateContainer, Req: cr(dir+"/c", wire.FlagContainer)},
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: dir + "/t", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentWithTTL, TTL: 1000}},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: dir + "/missing", Version: -1}},
		{Type: wire.OpCreate2, Req: cr(dir+"/z", wire.FlagPersistent)},
	}})
	assert.Equal(t, wire.CodeOK, h.Err, "a failed multi is answered with err 0")
	assert.Greater(t, h.Zxid, before.Mzxid, "a failed multi still takes a zxid")
	// mustDecode also checks the encoding: each result's header carries
	// the same code as its body.
	assert.Equal(t, []wire.MultiResult{
		{Type: wire.OpError, Err: wire.CodeOK},
		{Type: wire.OpError, Err: wire.CodeOK},
		{Type: wire.OpError, Err: wire.CodeOK},
		{Type: wire.OpError, Err: wire.CodeNoNode},
		{Type: wire.OpError, Err: wire.CodeRuntimeInconsistency},
	}, mustDecode(t, body, &wire.MultiResponse{}).Results)
	assert.Equal(t, before, x.stat(dir), "nothing was made")
	x.proveQuiet(x, tg.p(""))
}

func rawMultiMalformed(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/mm")
	x.create(dir, nil)
	before := x.stat(dir)
	cr := func(flags int32) *wire.CreateRequest {
		return &wire.CreateRequest{Path: dir + "/x", ACL: wire.OpenACLUnsafe, Flags: flags}
	}
	get := &wire.PathWatchRequest{Path: dir}
	tests := []struct {
		name string
		ops  []wire.MultiOp
	}{
		{"a write then a read", []wire.MultiOp{{Type: wire.OpCreate, Req: cr(0)}, {Type: wire.OpGetData, Req: get}}},
		{"a read then a write", []wire.MultiOp{{Type: wire.OpGetChildren, Req: get}, {Type: wire.OpCreate, Req: cr(0)}}},
		{"a read alone", []wire.MultiOp{{Type: wire.OpGetData, Req: get}}},
		{"create with TTL flag 5 and no TTL", []wire.MultiOp{{Type: wire.OpCreate, Req: cr(wire.FlagPersistentWithTTL)}}},
		{"create2 with TTL flag 6 and no TTL", []wire.MultiOp{{Type: wire.OpCreate2, Req: cr(wire.FlagPersistentSequentialWithTTL)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := x.on(t)
			x.mustFail(wire.CodeMarshallingError, wire.OpMulti, &wire.MultiRequest{Ops: tc.ops})
			assert.Equal(t, before, x.stat(dir), "nothing was made")
			mustPing(t, x.rawConn)
		})
	}
}

func rawMultiRead(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/mr")
	x.create(dir, []byte("dir"))
	x.create(dir+"/k1", []byte("k1"))
	x.create(dir+"/k2", nil)
	x.mustDo(wire.OpCreate, &wire.CreateRequest{Path: dir + "/noread", Data: []byte("secret"),
		ACL: []wire.ACL{{Perms: wire.PermAll &^ wire.PermRead, ID: wire.Id{Scheme: "world", ID: "anyone"}}}})

	read := func(op wire.Op, path string) wire.MultiOp {
		return wire.MultiOp{Type: op, Req: &wire.PathWatchRequest{Path: path, Watch: true}}
	}
	h, body := x.do(wire.OpMultiRead, &wire.MultiRequest{Ops: []wire.MultiOp{
		read(wire.OpGetData, dir),
		read(wire.OpGetChildren, dir),
		read(wire.OpGetData, dir+"/missing"),
		read(wire.OpGetChildren, dir+"/missing"),
		read(wire.OpGetData, dir+"/noread"),
		read(wire.OpGetChildren, dir+"/noread"),
		read(wire.OpGetData, dir+"/k1"),
		read(wire.OpGetData, dir+"/k2"),
		read(wire.OpGetChildren, dir+"/k1"),
	}})
	require.Equal(t, wire.CodeOK, h.Err)
	got := mustDecode(t, body, &wire.MultiResponse{}).Results
	require.Len(t, got, 9)
	require.Equal(t, wire.OpGetChildren, got[1].Type)
	assert.ElementsMatch(t, []string{"k1", "k2", "noread"}, got[1].Children)
	got[1].Children = nil
	assert.Equal(t, []wire.MultiResult{
		{Type: wire.OpGetData, Data: []byte("dir"), Stat: x.stat(dir)},
		{Type: wire.OpGetChildren},
		{Type: wire.OpError, Err: wire.CodeNoNode},
		{Type: wire.OpError, Err: wire.CodeNoNode},
		{Type: wire.OpError, Err: wire.CodeNoAuth},
		{Type: wire.OpError, Err: wire.CodeNoAuth},
		{Type: wire.OpGetData, Data: []byte("k1"), Stat: x.stat(dir + "/k1")},
		{Type: wire.OpGetData, Stat: x.stat(dir + "/k2")},
		{Type: wire.OpGetChildren},
	}, got)

	// The watch flags set no watch.
	w.mustDo(wire.OpSetData, &wire.SetDataRequest{Path: dir, Data: []byte("changed"), Version: -1})
	w.mustDo(wire.OpSetData, &wire.SetDataRequest{Path: dir + "/k1", Data: []byte("changed"), Version: -1})
	w.create(dir+"/k3", nil)
	x.proveQuiet(w, tg.p(""))

	// An empty multiRead is just the terminator.
	h, body = x.do(wire.OpMultiRead, &wire.MultiRequest{})
	assert.Equal(t, wire.CodeOK, h.Err)
	assert.Equal(t, multiEnd, body)
}

func rawMultiReadMalformed(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/mrm")
	x.create(dir, nil)
	before := x.stat(dir)

	// A write sub-op alone: ZooKeeper 3.8.0 fails while answering, and
	// sends the empty result list it had begun with the error.
	h, body := x.do(wire.OpMultiRead, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: dir + "/x", ACL: wire.OpenACLUnsafe}},
	}})
	assert.Equal(t, wire.CodeMarshallingError, h.Err)
	assert.Equal(t, multiEnd, body)
	mustPing(t, x.rawConn)

	// Reads and writes mixed: the request does not decode; no body.
	x.mustFail(wire.CodeMarshallingError, wire.OpMultiRead, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: dir}},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: dir, Version: -1}},
	}})
	assert.Equal(t, before, x.stat(dir), "nothing changed")
	mustPing(t, x.rawConn)
}
