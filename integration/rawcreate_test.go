package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestRawCreate covers the create opcodes go-zookeeper cannot send, or
// cannot read the reply of: create2 (15), createContainer (19) and
// createTTL (21), with the reaping of containers and TTL nodes.
func TestRawCreate(t *testing.T) { runRawCases(t, rawCreateCases) }

var rawCreateCases = []rawCase{
	{"create2 returns the path and a full Stat", rawCreate2},
	{"createContainer is reaped after its last child goes", rawCreateContainer},
	{"createTTL with flags 5 and 6, and bad TTLs", rawCreateTTL},
	{"a TTL node is reaped after its TTL once it has no children", rawTTLReaped},
}

func rawCreate2(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/c2")
	create2 := func(path string, data []byte, flags int32) *wire.CreateRequest {
		return &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags}
	}

	// The notification of the create comes before its reply.
	x.mustWatchMissing(dir)
	before := time.Now()
	h, body := x.do(wire.OpCreate2, create2(dir, []byte("data"), wire.FlagPersistent),
		watchEvent{wire.EventNodeCreated, dir})
	after := time.Now()
	require.Equal(t, wire.CodeOK, h.Err)
	resp := mustDecode(t, body, &wire.Create2Response{})
	assert.Equal(t, dir, resp.Path)
	assertNewStat(t, resp.Stat, h.Zxid, 0, 4, before, after)
	assert.Equal(t, resp.Stat, x.stat(dir), "the Stat is the node's")

	// Ephemeral: the owner is the session. The parent's child watch fires
	// before the reply too.
	x.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: dir, Watch: true})
	before = time.Now()
	h, body = x.do(wire.OpCreate2, create2(dir+"/e", nil, wire.FlagEphemeral),
		watchEvent{wire.EventNodeChildrenChanged, dir})
	after = time.Now()
	require.Equal(t, wire.CodeOK, h.Err)
	resp = mustDecode(t, body, &wire.Create2Response{})
	assert.Equal(t, dir+"/e", resp.Path)
	assertNewStat(t, resp.Stat, h.Zxid, x.id, 0, before, after)
	assert.Equal(t, resp.Stat, x.stat(dir+"/e"))

	// Sequential: the path has the suffix, from the parent's cversion (1).
	h, body = x.do(wire.OpCreate2, create2(dir+"/s-", []byte{}, wire.FlagPersistentSequential))
	require.Equal(t, wire.CodeOK, h.Err)
	resp = mustDecode(t, body, &wire.Create2Response{})
	assert.Equal(t, dir+"/s-0000000001", resp.Path)
	assert.Equal(t, resp.Stat, x.stat(dir+"/s-0000000001"))
	assert.Equal(t, h.Zxid, resp.Stat.Czxid)

	errs := []struct {
		name string
		req  *wire.CreateRequest
		want wire.Code
	}{
		{"node exists", create2(dir, nil, wire.FlagPersistent), wire.CodeNodeExists},
		{"parent missing", create2(tg.p("/missing/x"), nil, wire.FlagPersistent), wire.CodeNoNode},
		{"child of an ephemeral", create2(dir+"/e/x", nil, wire.FlagPersistent), wire.CodeNoChildrenForEphemerals},
		{"TTL flag 5 without a TTL", create2(dir+"/t", nil, wire.FlagPersistentWithTTL), wire.CodeBadArguments},
		{"TTL flag 6 without a TTL", create2(dir+"/t", nil, wire.FlagPersistentSequentialWithTTL), wire.CodeBadArguments},
		{"unknown flag", create2(dir+"/t", nil, 7), wire.CodeBadArguments},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			x.on(t).mustFail(tc.want, wire.OpCreate2, tc.req)
		})
	}
	st := x.stat(dir)
	assert.Equal(t, int32(2), st.NumChildren, "nothing made by the failed creates")
	assert.Equal(t, int32(2), st.Cversion)
}

func rawCreateContainer(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/cc")
	x.create(dir, nil)
	ctr := dir + "/ctr"

	before := time.Now()
	h, body := x.do(wire.OpCreateContainer,
		&wire.CreateRequest{Path: ctr, Data: []byte("c"), ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer})
	after := time.Now()
	require.Equal(t, wire.CodeOK, h.Err)
	resp := mustDecode(t, body, &wire.Create2Response{})
	assert.Equal(t, ctr, resp.Path)
	assertNewStat(t, resp.Stat, h.Zxid, 0, 1, before, after)
	assert.Equal(t, resp.Stat, x.stat(ctr), "a container reports ephemeralOwner 0")

	x.mustFail(wire.CodeNodeExists, wire.OpCreateContainer,
		&wire.CreateRequest{Path: ctr, ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer})
	h, body = x.do(wire.OpCreateContainer,
		&wire.CreateRequest{Path: dir + "/unused", ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer})
	require.Equal(t, wire.CodeOK, h.Err)
	assert.Equal(t, dir+"/unused", mustDecode(t, body, &wire.Create2Response{}).Path)

	// A data watch on the container does not fire for its children; the
	// server deletes it some time after its last child goes.
	x.create(ctr+"/kid", nil)
	x.mustDo(wire.OpExists, &wire.PathWatchRequest{Path: ctr, Watch: true})
	x.mustDo(wire.OpDelete, &wire.DeleteRequest{Path: ctr + "/kid", Version: -1})
	x.expectEvents(watchEvent{wire.EventNodeDeleted, ctr})
	x.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: ctr})

	// A container that never had a child stays.
	x.reaperPass(dir)
	assert.Zero(t, x.stat(dir+"/unused").EphemeralOwner)
}

func rawCreateTTL(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/ttl")
	x.create(dir, nil)
	ttl := func(path string, flags int32, ttl int64) *wire.CreateTTLRequest {
		return &wire.CreateTTLRequest{Path: path, Data: []byte("t"), ACL: wire.OpenACLUnsafe, Flags: flags, TTL: ttl}
	}

	x.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: dir, Watch: true})
	before := time.Now()
	h, body := x.do(wire.OpCreateTTL, ttl(dir+"/a", wire.FlagPersistentWithTTL, 60000),
		watchEvent{wire.EventNodeChildrenChanged, dir})
	after := time.Now()
	require.Equal(t, wire.CodeOK, h.Err)
	resp := mustDecode(t, body, &wire.Create2Response{})
	assert.Equal(t, dir+"/a", resp.Path)
	assertNewStat(t, resp.Stat, h.Zxid, 0, 1, before, after)
	assert.Equal(t, resp.Stat, x.stat(dir+"/a"), "a TTL node reports ephemeralOwner 0")

	before = time.Now()
	h, body = x.do(wire.OpCreateTTL, ttl(dir+"/s-", wire.FlagPersistentSequentialWithTTL, 60000))
	after = time.Now()
	require.Equal(t, wire.CodeOK, h.Err)
	resp = mustDecode(t, body, &wire.Create2Response{})
	assert.Equal(t, dir+"/s-0000000001", resp.Path)
	assertNewStat(t, resp.Stat, h.Zxid, 0, 1, before, after)

	// The largest TTL is 2^40-1 ms.
	h, body = x.do(wire.OpCreateTTL, ttl(dir+"/max", wire.FlagPersistentWithTTL, 0xFFFFFFFFFF))
	require.Equal(t, wire.CodeOK, h.Err)
	assert.Equal(t, dir+"/max", mustDecode(t, body, &wire.Create2Response{}).Path)

	errs := []struct {
		name string
		req  *wire.CreateTTLRequest
		want wire.Code
	}{
		{"ttl 0", ttl(dir+"/bad", wire.FlagPersistentWithTTL, 0), wire.CodeBadArguments},
		{"ttl -1", ttl(dir+"/bad", wire.FlagPersistentWithTTL, -1), wire.CodeBadArguments},
		{"ttl above 2^40-1", ttl(dir+"/bad", wire.FlagPersistentWithTTL, 0x10000000000), wire.CodeBadArguments},
		{"sequential, ttl 0", ttl(dir+"/bad", wire.FlagPersistentSequentialWithTTL, 0), wire.CodeBadArguments},
		{"sequential, negative ttl", ttl(dir+"/bad", wire.FlagPersistentSequentialWithTTL, -5), wire.CodeBadArguments},
		{"container flag with a ttl", ttl(dir+"/bad", wire.FlagContainer, 60000), wire.CodeBadArguments},
		{"unknown flag", ttl(dir+"/bad", 7, 60000), wire.CodeBadArguments},
		{"node exists", ttl(dir+"/a", wire.FlagPersistentWithTTL, 60000), wire.CodeNodeExists},
		{"parent missing", ttl(tg.p("/missing/t"), wire.FlagPersistentWithTTL, 60000), wire.CodeNoNode},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			x.on(t).mustFail(tc.want, wire.OpCreateTTL, tc.req)
		})
	}
	st := x.stat(dir)
	assert.Equal(t, int32(3), st.NumChildren, "nothing made by the failed creates")
	assert.Equal(t, int32(3), st.Cversion)
}

func rawTTLReaped(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/reap")
	x.create(dir, nil)

	// A TTL node with a child stays past its TTL; made in one multi so
	// that the reaper cannot take it before the child exists.
	parent := dir + "/parent"
	body := x.mustDo(wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: parent, ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentWithTTL, TTL: 1}},
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: parent + "/kid", ACL: wire.OpenACLUnsafe}},
	}})
	res := mustDecode(t, body, &wire.MultiResponse{}).Results
	require.Len(t, res, 2)
	require.Equal(t, wire.OpCreate2, res[0].Type)

	const ttl = 300 * time.Millisecond
	start := time.Now()
	x.mustDo(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: dir + "/short", Data: []byte("x"),
		ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: ttl.Milliseconds()})
	x.mustDo(wire.OpExists, &wire.PathWatchRequest{Path: dir + "/short", Watch: true})
	x.expectEvents(watchEvent{wire.EventNodeDeleted, dir + "/short"})
	assert.GreaterOrEqual(t, time.Since(start), ttl, "a TTL node lives at least its TTL")

	x.reaperPass(dir)
	assert.Equal(t, int32(1), x.stat(parent).NumChildren, "a TTL node with a child is not reaped")
	x.mustDo(wire.OpExists, &wire.PathWatchRequest{Path: parent, Watch: true})
	x.mustDo(wire.OpDelete, &wire.DeleteRequest{Path: parent + "/kid", Version: -1})
	x.expectEvents(watchEvent{wire.EventNodeDeleted, parent})
}

// TestRawCreateTTLDisabled checks TTL nodes with TTLs disabled
// (zookeeper.extendedTypesEnabled=false): a TTL create mode is
// UNIMPLEMENTED, checked after the flag is known valid and before the TTL
// is; the connection stays open and nothing is made.
func TestRawCreateTTLDisabled(t *testing.T) {
	tg := newRawTarget(t, servertestNoTTL)
	x := mustRawSession(t, tg.addr)
	x.create("/d", nil)
	tests := []struct {
		name string
		op   wire.Op
		req  wire.Record
		want wire.Code
	}{
		{"createTTL flag 5", wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/d/t", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentWithTTL, TTL: 60000}, wire.CodeUnimplemented},
		{"createTTL flag 6", wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/d/t", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentSequentialWithTTL, TTL: 60000}, wire.CodeUnimplemented},
		{"createTTL flag 5, bad ttl", wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/d/t", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentWithTTL, TTL: 0}, wire.CodeUnimplemented},
		{"createTTL unknown flag", wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/d/t", ACL: wire.OpenACLUnsafe,
			Flags: 7, TTL: 60000}, wire.CodeBadArguments},
		{"create2 flag 5", wire.OpCreate2, &wire.CreateRequest{Path: "/d/t", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentWithTTL}, wire.CodeUnimplemented},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x.on(t).mustFail(tc.want, tc.op, tc.req)
		})
	}
	body := x.mustDo(wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: "/d/a", ACL: wire.OpenACLUnsafe}},
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: "/d/t", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentWithTTL, TTL: 60000}},
	}})
	assert.Equal(t, []wire.MultiResult{
		{Type: wire.OpError, Err: wire.CodeOK},
		{Type: wire.OpError, Err: wire.CodeUnimplemented},
	}, mustDecode(t, body, &wire.MultiResponse{}).Results, "a failed multi")
	st := x.stat("/d")
	assert.Zero(t, st.NumChildren)
	assert.Zero(t, st.Cversion)
	mustPing(t, x.rawConn)
}

// servertestNoTTL disables TTL nodes.
var servertestNoTTL = servertest.WithConfig(func(c *server.Config) { c.ExtendedTypesEnabled = false })
