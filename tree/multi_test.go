package tree_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

func opCreate(path string, flags int32, data []byte) wire.MultiOp {
	return wire.MultiOp{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags}}
}

func opDelete(path string, version int32) wire.MultiOp {
	return wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: path, Version: version}}
}

func opSetData(path string, data []byte, version int32) wire.MultiOp {
	return wire.MultiOp{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: path, Data: data, Version: version}}
}

func opCheck(path string, version int32) wire.MultiOp {
	return wire.MultiOp{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: path, Version: version}}
}

// failed is the result list of a multi whose op at index failedAt failed with code.
func failed(n, failedAt int, code wire.Code) []wire.MultiResult {
	out := make([]wire.MultiResult, n)
	for i := range out {
		out[i].Type = wire.OpError
		switch {
		case i == failedAt:
			out[i].Err = code
		case i > failedAt:
			out[i].Err = wire.CodeRuntimeInconsistency
		}
	}
	return out
}

// treeState is everything observable about a tree that a failed multi must
// leave unchanged.
type treeState struct {
	digest     uint64
	size       int64
	len        int
	ephemerals int
	owners     []int64
	reapable   []string
	stats      map[string]wire.Stat
}

func mustStateOf(t testing.TB, tr *tree.Tree) treeState {
	t.Helper()
	s := treeState{
		digest: tr.Digest(), size: tr.ApproximateDataSize(), len: tr.Len(),
		ephemerals: tr.EphemeralCount(), owners: tr.Owners(), reapable: tr.Reapable(1<<62, 1<<20),
		stats: map[string]wire.Stat{},
	}
	for _, p := range mustAllPaths(t, tr) {
		s.stats[p] = mustStat(t, tr, p)
	}
	return s
}

func TestTree_MultiAtomicity(t *testing.T) {
	tests := []struct {
		name string
		ops  []wire.MultiOp
		at   int
		code wire.Code
	}{
		{
			name: "everything undone",
			ops: []wire.MultiOp{
				opCreate("/p/s", wire.FlagPersistentSequential, []byte("seq")),
				opCreate("/eph", wire.FlagEphemeral, []byte("e")),
				opSetData("/p", []byte("much longer data"), -1),
				opDelete("/p/old", -1),
				{Type: wire.OpCreateContainer, Req: &wire.CreateRequest{Path: "/c", ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer}},
				{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: 5}},
				opDelete("/missing", -1),
				opCreate("/never", 0, nil),
				opCheck("/p", -1),
			},
			at: 6, code: wire.CodeNoNode,
		},
		{
			name: "first op fails",
			ops:  []wire.MultiOp{opCheck("/p", 7), opCreate("/x", 0, nil)},
			at:   0, code: wire.CodeBadVersion,
		},
		{
			name: "last op fails",
			ops:  []wire.MultiOp{opCreate("/x", 0, nil), opCreate("/x", 0, nil)},
			at:   1, code: wire.CodeNodeExists,
		},
		{
			name: "deleted node restored",
			ops:  []wire.MultiOp{opDelete("/p/old", 0), opCreate("/p/new", 0, nil), opCheck("/p/old", -1)},
			at:   2, code: wire.CodeNoNode,
		},
		{
			name: "delete and re-create undone",
			ops:  []wire.MultiOp{opDelete("/p/old", 0), opCreate("/p/old", wire.FlagEphemeral, []byte("xx")), opSetData("/p/old", nil, 5)},
			at:   2, code: wire.CodeBadVersion,
		},
		{
			name: "two setData undone",
			ops:  []wire.MultiOp{opSetData("/p", []byte("1"), 0), opSetData("/p", []byte("22"), 1), opCheck("/p", 0)},
			at:   2, code: wire.CodeBadVersion,
		},
		{
			name: "session ephemerals undone",
			ops:  []wire.MultiOp{opCreate("/e1", wire.FlagEphemeral, nil), opCreate("/e2", wire.FlagEphemeralSequential, nil), opCreate("/e1/x", 0, nil)},
			at:   2, code: wire.CodeNoChildrenForEphemerals,
		},
		{
			name: "invalid flag",
			ops:  []wire.MultiOp{opCreate("/x", 0, nil), opCreate("/y", 7, nil)},
			at:   1, code: wire.CodeBadArguments,
		},
		{
			name: "unsupported sub-op",
			ops:  []wire.MultiOp{opCreate("/x", 0, nil), {Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/p"}}},
			at:   1, code: wire.CodeBadArguments,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			mustCreatePath(t, tr, 1, "/p", []byte("p"))
			mustCreatePath(t, tr, 2, "/p/old", []byte("old"))
			before := mustStateOf(t, tr)

			c := newCtx(10)
			c.ExtendedTypes = true
			earlier := trig("/earlier", wire.EventNodeDataChanged)
			c.Triggers = []tree.Trigger{earlier}
			results := tr.Multi(c, tc.ops)
			assert.Equal(t, failed(len(tc.ops), tc.at, tc.code), results)
			assert.Equal(t, []tree.Trigger{earlier}, noACL(c.Triggers), "the multi's triggers are dropped, earlier ones kept")
			assert.Equal(t, before, mustStateOf(t, tr))
			assert.False(t, tr.HasEphemerals(sessA))

			// The sequential counter was restored too.
			assert.Equal(t, "/p/s0000000001", mustCreate(t, tr, newCtx(11), newCreate("/p/s", wire.FlagPersistentSequential)))
		})
	}
}

func TestTree_MultiResults(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/p", []byte("p"))
	mustCreatePath(t, tr, 2, "/gone", nil)
	c := newCtx(10)
	c.ExtendedTypes = true
	ops := []wire.MultiOp{
		opCreate("/plain", wire.FlagPersistent, []byte("abc")),
		opCreate("/c", wire.FlagContainer, nil),
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: 100}},
		{Type: wire.OpCreate2, Req: &wire.CreateRequest{Path: "/w15", ACL: wire.OpenACLUnsafe, Flags: 0}},
		{Type: wire.OpCreateContainer, Req: &wire.CreateRequest{Path: "/w19", ACL: wire.OpenACLUnsafe, Flags: 0}},
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: "/ttl-dropped", ACL: wire.OpenACLUnsafe, Flags: 0, TTL: 100}},
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: "/ttl-container", ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer, TTL: 100}},
		opCreate("/e", wire.FlagEphemeralSequential, nil),
		opDelete("/gone", -1),
		opSetData("/p", []byte("pp"), 0),
		opCheck("/p", 1),
	}
	results := tr.Multi(c, ops)
	require.Len(t, results, len(ops))
	stat := func(p string) wire.Stat { return mustStat(t, tr, p) }
	want := []wire.MultiResult{
		{Type: wire.OpCreate, Path: "/plain"},
		{Type: wire.OpCreate2, Path: "/c", Stat: stat("/c")},
		{Type: wire.OpCreate2, Path: "/t", Stat: stat("/t")},
		{Type: wire.OpCreate, Path: "/w15"},
		{Type: wire.OpCreate, Path: "/w19"},
		{Type: wire.OpCreate, Path: "/ttl-dropped"},
		{Type: wire.OpCreate2, Path: "/ttl-container", Stat: stat("/ttl-container")},
		{Type: wire.OpCreate, Path: "/e0000000009"},
		{Type: wire.OpDelete},
		{Type: wire.OpSetData, Stat: stat("/p")},
		{Type: wire.OpCheck},
	}
	assert.Equal(t, want, results)

	// Node kinds: decided by the flags, not the sub-op's wire type.
	for p, kind := range map[string]tree.Kind{
		"/plain": tree.KindPersistent, "/c": tree.KindContainer, "/t": tree.KindTTL,
		"/w15": tree.KindPersistent, "/w19": tree.KindPersistent, "/ttl-dropped": tree.KindPersistent,
		"/ttl-container": tree.KindContainer, "/e0000000009": tree.KindEphemeral,
	} {
		st := stat(p)
		assert.Equal(t, int64(10), st.Czxid, "one zxid for the whole multi: %s", p)
		assert.Equal(t, int64(10), st.Mzxid, p)
		assert.Equal(t, timeAt(10), st.Ctime, p)
		assert.Equal(t, kind, mustKindOf(t, tr, p, 20), p)
	}
	assert.Equal(t, int32(1), stat("/p").Version)

	assert.Equal(t, []tree.Trigger{
		trig("/plain", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/c", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/t", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/w15", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/w19", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/ttl-dropped", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/ttl-container", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/e0000000009", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged),
		trig("/gone", wire.EventNodeDeleted), trig("/", wire.EventNodeChildrenChanged),
		trig("/p", wire.EventNodeDataChanged),
	}, noACL(c.Triggers), "in op order")
}

func TestTree_MultiTTLDisabled(t *testing.T) {
	tr := newTree(t)
	ops := []wire.MultiOp{
		opCreate("/a", 0, nil),
		{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: 100}},
	}
	assert.Equal(t, failed(2, 1, wire.CodeUnimplemented), tr.Multi(newCtx(1), ops))
	_, ok := tr.Stat("/a")
	assert.False(t, ok)
}

func TestTree_MultiSeesEarlierOps(t *testing.T) {
	tests := []struct {
		name string
		ops  []wire.MultiOp
		want []string // created paths, in order
	}{
		{name: "parent then child", ops: []wire.MultiOp{opCreate("/a", 0, nil), opCreate("/a/b", 0, nil), opCreate("/a/b/c", 0, nil)}, want: []string{"/a", "/a/b", "/a/b/c"}},
		{name: "setData then check new version", ops: []wire.MultiOp{opSetData("/x", []byte("1"), 0), opCheck("/x", 1), opSetData("/x", []byte("2"), 1), opCheck("/x", 2)}},
		{name: "delete then re-create", ops: []wire.MultiOp{opDelete("/x/y", 0), opCreate("/x/y", wire.FlagEphemeral, nil)}, want: []string{"/x/y"}},
		{name: "create then delete", ops: []wire.MultiOp{opCreate("/tmp", 0, nil), opDelete("/tmp", 0)}, want: []string{"/tmp"}},
		{name: "delete child then parent", ops: []wire.MultiOp{opDelete("/x/y", -1), opDelete("/x", -1)}},
		{
			name: "consecutive sequential suffixes",
			ops: []wire.MultiOp{
				opCreate("/q/s", wire.FlagPersistentSequential, nil),
				opCreate("/q/s", wire.FlagEphemeralSequential, nil),
				opCreate("/q/t", wire.FlagPersistentSequential, nil),
			},
			want: []string{"/q/s0000000000", "/q/s0000000001", "/q/t0000000002"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			mustCreatePath(t, tr, 1, "/x", nil)
			mustCreatePath(t, tr, 2, "/x/y", nil)
			mustCreatePath(t, tr, 3, "/q", nil)
			results := tr.Multi(newCtx(10), tc.ops)
			require.Len(t, results, len(tc.ops))
			var created []string
			for i, r := range results {
				require.NotEqual(t, wire.OpError, r.Type, "op %d failed: %v", i, r.Err)
				assert.Equal(t, wire.CodeOK, r.Err)
				if r.Type == wire.OpCreate {
					created = append(created, r.Path)
				}
			}
			assert.Equal(t, tc.want, created)
		})
	}
}

func TestTree_MultiEmpty(t *testing.T) {
	tr := newTree(t)
	before := mustStateOf(t, tr)
	c := newCtx(5)
	results := tr.Multi(c, nil)
	assert.Empty(t, results)
	assert.Empty(t, c.Triggers)
	assert.Equal(t, before, mustStateOf(t, tr))
}

func TestTree_MultiAfterFailedMulti(t *testing.T) {
	tr := newTree(t)
	results := tr.Multi(newCtx(1), []wire.MultiOp{opCreate("/a", 0, nil), opCreate("/a", 0, nil)})
	require.Equal(t, failed(2, 1, wire.CodeNodeExists), results)
	results = tr.Multi(newCtx(2), []wire.MultiOp{opCreate("/a", 0, nil), opCreate("/a/b", 0, nil)})
	assert.Equal(t, []wire.MultiResult{{Type: wire.OpCreate, Path: "/a"}, {Type: wire.OpCreate, Path: "/a/b"}}, results)
	assert.Equal(t, int64(2), mustStat(t, tr, "/a").Czxid)
}
