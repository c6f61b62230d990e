package tree_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// newWriteTree builds the tree the write tests share:
//
//	/p             persistent, version 1 (one setData)
//	/p/c           persistent, has a child
//	/p/c/gc
//	/p/leaf
//	/ro            ACL: everything but DELETE and WRITE for anyone
//	/ro/x
//	/e             ephemeral of sessA
func newWriteTree(t testing.TB) *tree.Tree {
	t.Helper()
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/p", []byte("p"))
	mustCreatePath(t, tr, 2, "/p/c", nil)
	mustCreatePath(t, tr, 3, "/p/c/gc", nil)
	mustCreatePath(t, tr, 4, "/p/leaf", []byte("leaf"))
	mustCreatePath(t, tr, 5, "/ro", nil)
	mustCreatePath(t, tr, 6, "/ro/x", nil)
	mustSetACL(t, tr, 7, "/ro", []wire.ACL{{
		Perms: wire.PermAll &^ (wire.PermDelete | wire.PermWrite),
		ID:    wire.Id{Scheme: "world", ID: "anyone"},
	}})
	mustCreate(t, tr, newCtx(8), newCreate("/e", wire.FlagEphemeral))
	_, code := tr.SetData(newCtx(9), "/p", []byte("p1"), -1)
	require.Equal(t, wire.CodeOK, code)
	return tr
}

func TestTree_DeleteCheckOrder(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		version int32
		ids     []wire.Id
		want    wire.Code
	}{
		{name: "root", path: "/", version: -1, want: wire.CodeBadArguments},
		{name: "zookeeper", path: "/zookeeper", version: -1, want: wire.CodeBadArguments},
		{name: "quota", path: "/zookeeper/quota", version: -1, want: wire.CodeBadArguments},
		{name: "config", path: "/zookeeper/config", version: -1, want: wire.CodeBadArguments},
		{name: "special even as super", path: "/zookeeper", version: -1, ids: []wire.Id{superID}, want: wire.CodeBadArguments},
		{name: "no slash", path: "p", version: -1, want: wire.CodeBadArguments},
		{name: "empty", path: "", version: -1, want: wire.CodeBadArguments},
		{name: "NUL", path: "/p/leaf\x00", version: -1, want: wire.CodeBadArguments},
		{name: "NUL beats missing parent", path: "/missing/\x00", version: -1, want: wire.CodeBadArguments},
		{name: "missing parent", path: "/missing/x", version: -1, want: wire.CodeNoNode},
		{name: "no DELETE on parent", path: "/ro/x", version: -1, want: wire.CodeNoAuth},
		{name: "NOAUTH before existence", path: "/ro/missing", version: -1, want: wire.CodeNoAuth},
		{name: "NOAUTH before version", path: "/ro/x", version: 42, want: wire.CodeNoAuth},
		{name: "super bypasses", path: "/ro/x", version: -1, ids: []wire.Id{superID}, want: wire.CodeOK},
		{name: "missing", path: "/p/missing", version: -1, want: wire.CodeNoNode},
		{name: "trailing slash is just missing", path: "/p/", version: -1, want: wire.CodeNoNode},
		{name: "BADVERSION before NOTEMPTY", path: "/p/c", version: 5, want: wire.CodeBadVersion},
		{name: "not empty", path: "/p/c", version: -1, want: wire.CodeNotEmpty},
		{name: "not empty, right version", path: "/p/c", version: 0, want: wire.CodeNotEmpty},
		{name: "bad version", path: "/p", version: 0, want: wire.CodeBadVersion},
		{name: "version compared to data version", path: "/p/leaf", version: 1, want: wire.CodeBadVersion},
		{name: "right version", path: "/p/leaf", version: 0, want: wire.CodeOK},
		{name: "any version", path: "/p/leaf", version: -1, want: wire.CodeOK},
		{name: "ephemeral", path: "/e", version: -1, want: wire.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			before := tr.Digest()
			c := newCtx(20, tc.ids...)
			code := tr.Delete(c, tc.path, tc.version)
			assert.Equal(t, tc.want, code)
			if code != wire.CodeOK {
				assert.Equal(t, before, tr.Digest())
				assert.Empty(t, c.Triggers)
				return
			}
			_, ok := tr.Stat(tc.path)
			assert.False(t, ok)
		})
	}
}

func TestTree_DeleteEffects(t *testing.T) {
	tr := newWriteTree(t)
	parentBefore := mustStat(t, tr, "/p")
	require.Equal(t, int32(2), parentBefore.NumChildren)
	require.Equal(t, int32(2*2-2), parentBefore.Cversion)
	size := tr.ApproximateDataSize()

	c := newCtx(30)
	require.Equal(t, wire.CodeOK, tr.Delete(c, "/p/leaf", -1))
	assert.Equal(t, []tree.Trigger{
		trig("/p/leaf", wire.EventNodeDeleted),
		trig("/p", wire.EventNodeChildrenChanged),
	}, noACL(c.Triggers))
	want := parentBefore
	want.NumChildren = 1
	want.Cversion = 2*2 - 1 // stored creates unchanged: visible +1
	want.Pzxid = 30
	assert.Equal(t, want, mustStat(t, tr, "/p"), "parent: numChildren, visible cversion and pzxid only")
	assert.Equal(t, size-int64(len("/p/leaf")+len("leaf")), tr.ApproximateDataSize())

	// The stored counter was not touched: the next sequential name continues.
	p := mustCreate(t, tr, newCtx(31), newCreate("/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, "/p/s0000000002", p)

	// Deleting an ephemeral drops it from its session's index.
	c = newCtx(32)
	require.Equal(t, wire.CodeOK, tr.Delete(c, "/e", -1))
	assert.False(t, tr.HasEphemerals(sessA))
	assert.Empty(t, tr.Ephemerals(sessA, ""))
	assert.Equal(t, 0, tr.EphemeralCount())
	assert.Equal(t, []tree.Trigger{trig("/e", wire.EventNodeDeleted), trig("/", wire.EventNodeChildrenChanged)}, noACL(c.Triggers))
	assert.Equal(t, int64(32), mustStat(t, tr, "/").Pzxid)
}

func TestTree_DeleteDropsReapable(t *testing.T) {
	tr := newTree(t)
	c := newCtx(1)
	c.ExtendedTypes = true
	mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreateContainer, Path: "/c", ACL: wire.OpenACLUnsafe, TTL: -1})
	mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreateTTL, Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 1})
	mustCreatePath(t, tr, 2, "/c/x", nil)
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(3), "/c/x", -1))
	require.Equal(t, []string{"/c", "/t"}, tr.Reapable(timeAt(100), 10))
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(4), "/c", -1))
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(5), "/t", -1))
	assert.Empty(t, tr.Reapable(timeAt(100), 10))
}

func TestTree_SetData(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		version int32
		ids     []wire.Id
		want    wire.Code
	}{
		{name: "trailing slash", path: "/p/", version: -1, want: wire.CodeBadArguments},
		{name: "invalid path beats missing", path: "/missing/", version: -1, want: wire.CodeBadArguments},
		{name: "relative", path: "p", version: -1, want: wire.CodeBadArguments},
		{name: "dot", path: "/p/.", version: -1, want: wire.CodeBadArguments},
		{name: "missing", path: "/missing", version: -1, want: wire.CodeNoNode},
		{name: "no WRITE", path: "/ro", version: -1, want: wire.CodeNoAuth},
		{name: "NOAUTH beats BADVERSION", path: "/ro", version: 99, want: wire.CodeNoAuth},
		{name: "config is read-only", path: "/zookeeper/config", version: -1, want: wire.CodeNoAuth},
		{name: "super", path: "/ro", version: -1, ids: []wire.Id{superID}, want: wire.CodeOK},
		{name: "bad version", path: "/p", version: 0, want: wire.CodeBadVersion},
		{name: "bad version ahead", path: "/p", version: 2, want: wire.CodeBadVersion},
		{name: "right version", path: "/p", version: 1, want: wire.CodeOK},
		{name: "any version", path: "/p", version: -1, want: wire.CodeOK},
		{name: "root", path: "/", version: -1, want: wire.CodeOK},
		{name: "ephemeral", path: "/e", version: 0, want: wire.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			before := tr.Digest()
			var old wire.Stat
			if st, ok := tr.Stat(tc.path); ok {
				old = st
			}
			c := newCtx(40, tc.ids...)
			st, code := tr.SetData(c, tc.path, []byte("new data"), tc.version)
			assert.Equal(t, tc.want, code)
			if code != wire.CodeOK {
				assert.Zero(t, st)
				assert.Equal(t, before, tr.Digest())
				assert.Empty(t, c.Triggers)
				return
			}
			want := old
			want.Version = old.Version + 1
			want.Mzxid = 40
			want.Mtime = timeAt(40)
			want.DataLength = int32(len("new data"))
			assert.Equal(t, want, st, "only version, mzxid, mtime and dataLength change")
			assert.Equal(t, want, mustStat(t, tr, tc.path))
			data, _, _ := tr.Get(tc.path, []wire.Id{superID})
			assert.Equal(t, "new data", string(data))
			assert.Equal(t, []tree.Trigger{trig(tc.path, wire.EventNodeDataChanged)}, noACL(c.Triggers))
		})
	}
}

func TestTree_SetDataNilAndEmpty(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/n", []byte("x"))
	for i, data := range [][]byte{nil, {}, []byte("abc"), nil} {
		st, code := tr.SetData(newCtx(int64(2+i)), "/n", data, int32(i))
		require.Equal(t, wire.CodeOK, code)
		assert.Equal(t, int32(i+1), st.Version)
		got, _, _ := tr.Get("/n", nil)
		assert.Equal(t, data == nil, got == nil, "step %d: null stays null", i)
		assert.Equal(t, string(data), string(got))
	}
}

func TestTree_SetACL(t *testing.T) {
	newACL := []wire.ACL{{Perms: wire.PermRead | wire.PermAdmin, ID: wire.Id{Scheme: "world", ID: "anyone"}}}
	tests := []struct {
		name    string
		path    string
		acl     []wire.ACL
		version int32
		ids     []wire.Id
		want    wire.Code
	}{
		{name: "invalid path", path: "/p/", acl: newACL, version: -1, want: wire.CodeBadArguments},
		{name: "invalid path beats invalid ACL", path: "/missing/", acl: nil, version: -1, want: wire.CodeBadArguments},
		{name: "invalid ACL beats missing", path: "/missing", acl: []wire.ACL{}, version: -1, want: wire.CodeInvalidACL},
		{name: "invalid ACL beats NOAUTH", path: "/zookeeper/config", acl: []wire.ACL{}, version: -1, want: wire.CodeInvalidACL},
		{name: "missing", path: "/missing", acl: newACL, version: -1, want: wire.CodeNoNode},
		{name: "no ADMIN", path: "/zookeeper/config", acl: newACL, version: -1, want: wire.CodeNoAuth},
		{name: "NOAUTH beats BADVERSION", path: "/zookeeper/config", acl: newACL, version: 7, want: wire.CodeNoAuth},
		{name: "config as super, any version", path: "/zookeeper/config", acl: newACL, version: -1, ids: []wire.Id{superID}, want: wire.CodeOK},
		{name: "data version is not the ACL version", path: "/p", acl: newACL, version: 1, want: wire.CodeBadVersion},
		{name: "ACL version", path: "/p", acl: newACL, version: 0, want: wire.CodeOK},
		{name: "ro has ADMIN", path: "/ro", acl: newACL, version: 1, want: wire.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			before := tr.Digest()
			var old wire.Stat
			if st, ok := tr.Stat(tc.path); ok {
				old = st
			}
			c := newCtx(50, tc.ids...)
			st, code := tr.SetACL(c, tc.path, tc.acl, tc.version)
			assert.Equal(t, tc.want, code)
			assert.Empty(t, c.Triggers, "setACL fires nothing")
			if code != wire.CodeOK {
				assert.Zero(t, st)
				assert.Equal(t, before, tr.Digest())
				return
			}
			want := old
			want.Aversion = old.Aversion + 1
			assert.Equal(t, want, st, "only aversion changes")
			assert.Equal(t, want, mustStat(t, tr, tc.path))
			acl, _, code := tr.ACL(tc.path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.Equal(t, tc.acl, acl)
		})
	}
}

func TestTree_ConfigACLVersionStartsAtMinusOne(t *testing.T) {
	tr := newTree(t)
	acl := wire.ReadACLUnsafe
	_, code := tr.SetACL(newCtx(1, superID), "/zookeeper/config", acl, 0)
	assert.Equal(t, wire.CodeBadVersion, code, "aversion is -1, and -1 in a request means any")
	st, code := tr.SetACL(newCtx(2, superID), "/zookeeper/config", acl, -1)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(0), st.Aversion, "-1 + 1")
	st, code = tr.SetACL(newCtx(3, superID), "/zookeeper/config", acl, 0)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(1), st.Aversion)
}

func TestTree_CheckVersion(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		version int32
		ids     []wire.Id
		want    wire.Code
	}{
		{name: "invalid path", path: "/p/", version: -1, want: wire.CodeBadArguments},
		{name: "invalid path beats missing", path: "//", version: -1, want: wire.CodeBadArguments},
		{name: "missing", path: "/missing", version: -1, want: wire.CodeNoNode},
		{name: "no READ", path: "/w", version: -1, want: wire.CodeNoAuth},
		{name: "NOAUTH beats BADVERSION", path: "/w", version: 5, want: wire.CodeNoAuth},
		{name: "READ by digest", path: "/w", version: 0, ids: []wire.Id{aliceID}, want: wire.CodeOK},
		{name: "bad version", path: "/p", version: 0, want: wire.CodeBadVersion},
		{name: "right version", path: "/p", version: 1, want: wire.CodeOK},
		{name: "any version", path: "/p", version: -1, want: wire.CodeOK},
		{name: "read-only node may be checked", path: "/ro", version: 0, want: wire.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newWriteTree(t)
			mustCreatePath(t, tr, 10, "/w", nil)
			mustSetACL(t, tr, 11, "/w", []wire.ACL{
				{Perms: wire.PermAll &^ wire.PermRead, ID: wire.Id{Scheme: "world", ID: "anyone"}},
				{Perms: wire.PermRead, ID: aliceID},
			})
			before := tr.Digest()
			c := newCtx(60, tc.ids...)
			assert.Equal(t, tc.want, tr.CheckVersion(c, tc.path, tc.version))
			assert.Equal(t, before, tr.Digest(), "check changes nothing")
			assert.Empty(t, c.Triggers)
		})
	}
}

func TestTree_DeleteContainer(t *testing.T) {
	tests := []struct {
		name string
		path string
		want wire.Code
	}{
		{name: "root", path: "/", want: wire.CodeBadArguments},
		{name: "zookeeper", path: "/zookeeper", want: wire.CodeBadArguments},
		{name: "config", path: "/zookeeper/config", want: wire.CodeBadArguments},
		{name: "no slash", path: "c", want: wire.CodeBadArguments},
		{name: "NUL", path: "/c\x00", want: wire.CodeBadArguments},
		{name: "missing", path: "/missing", want: wire.CodeNoNode},
		{name: "missing parent", path: "/missing/x", want: wire.CodeNoNode},
		{name: "container with a child", path: "/full", want: wire.CodeNotEmpty},
		{name: "persistent with a child", path: "/p", want: wire.CodeNotEmpty},
		{name: "session ephemeral", path: "/e", want: wire.CodeBadVersion},
		{name: "empty container", path: "/c", want: wire.CodeOK},
		{name: "TTL node", path: "/t", want: wire.CodeOK},
		{name: "persistent empty node", path: "/p/leaf", want: wire.CodeOK},
		{name: "no ACL check", path: "/locked/leaf", want: wire.CodeOK},
		{name: "no ACL check on the node either", path: "/locked", want: wire.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			c := newCtx(1)
			c.ExtendedTypes = true
			container := func(p string) tree.CreateArgs {
				return tree.CreateArgs{Op: wire.OpCreateContainer, Path: p, ACL: wire.OpenACLUnsafe, TTL: -1}
			}
			mustCreate(t, tr, c, container("/c"))
			mustCreate(t, tr, c, container("/full"))
			mustCreate(t, tr, c, newCreate("/full/x", 0))
			mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreateTTL, Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 1})
			mustCreate(t, tr, c, newCreate("/p", 0))
			mustCreate(t, tr, c, newCreate("/p/leaf", 0))
			mustCreate(t, tr, c, newCreate("/e", wire.FlagEphemeral))
			mustCreate(t, tr, c, newCreate("/locked", 0))
			mustCreate(t, tr, c, newCreate("/locked/leaf", 0))
			locked := []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}
			mustSetACL(t, tr, 2, "/locked/leaf", locked)
			mustSetACL(t, tr, 3, "/locked", locked)
			if tc.path == "/locked" {
				require.Equal(t, wire.CodeOK, tr.DeleteContainer(newCtx(4), "/locked/leaf"))
			}
			before := tr.Digest()

			c = newCtx(10)
			code := tr.DeleteContainer(c, tc.path)
			assert.Equal(t, tc.want, code)
			if code != wire.CodeOK {
				assert.Equal(t, before, tr.Digest())
				assert.Empty(t, c.Triggers)
				return
			}
			_, ok := tr.Stat(tc.path)
			assert.False(t, ok)
			parent := "/"
			if i := len(tc.path) - len("/leaf"); i > 0 && tc.path[i:] == "/leaf" {
				parent = tc.path[:i]
			}
			assert.Equal(t, []tree.Trigger{
				trig(tc.path, wire.EventNodeDeleted),
				trig(parent, wire.EventNodeChildrenChanged),
			}, noACL(c.Triggers))
			assert.Equal(t, int64(10), mustStat(t, tr, parent).Pzxid)
			assert.NotContains(t, tr.Reapable(1<<62, 100), tc.path)
		})
	}
}

func TestTree_CloseSession(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/a", nil)
	mustCreatePath(t, tr, 2, "/b", nil)
	ctxB := func(zxid int64) *tree.Context { c := newCtx(zxid); c.Session = sessB; return c }
	mustCreate(t, tr, newCtx(3), newCreate("/b/e2", wire.FlagEphemeral))
	mustCreate(t, tr, newCtx(4), newCreate("/e3", wire.FlagEphemeral))
	mustCreate(t, tr, newCtx(5), newCreate("/a/e1", wire.FlagEphemeral))
	mustCreate(t, tr, ctxB(6), newCreate("/a/other", wire.FlagEphemeral))
	seq := mustCreate(t, tr, newCtx(7), newCreate("/a/s", wire.FlagEphemeralSequential))
	require.Equal(t, "/a/s0000000002", seq, "/a had two children created")
	require.Equal(t, 5, tr.EphemeralCount())
	assert.ElementsMatch(t, []int64{sessA, sessB}, tr.Owners())

	c := newCtx(10)
	deleted := tr.CloseSession(c, sessA)
	// ZooKeeper deletes in the order of a copy of the session's HashSet;
	// this order was printed by Java 17 for the same creates.
	assert.Equal(t, []string{"/a/s0000000002", "/b/e2", "/a/e1", "/e3"}, deleted, "Java's order")
	assert.Equal(t, []tree.Trigger{
		trig("/a/s0000000002", wire.EventNodeDeleted), trig("/a", wire.EventNodeChildrenChanged),
		trig("/b/e2", wire.EventNodeDeleted), trig("/b", wire.EventNodeChildrenChanged),
		trig("/a/e1", wire.EventNodeDeleted), trig("/a", wire.EventNodeChildrenChanged),
		trig("/e3", wire.EventNodeDeleted), trig("/", wire.EventNodeChildrenChanged),
	}, noACL(c.Triggers))
	for _, p := range deleted {
		_, ok := tr.Stat(p)
		assert.False(t, ok, p)
	}
	for _, p := range []string{"/", "/a", "/b"} {
		assert.Equal(t, int64(10), mustStat(t, tr, p).Pzxid, "pzxid of %s", p)
	}
	assert.False(t, tr.HasEphemerals(sessA))
	assert.True(t, tr.HasEphemerals(sessB))
	assert.Equal(t, []string{"/a/other"}, tr.Ephemerals(sessB, ""))
	assert.Equal(t, []int64{sessB}, tr.Owners())
	assert.Equal(t, 1, tr.EphemeralCount())

	// Closing again, or closing a session with no ephemerals, does nothing.
	c = newCtx(11)
	assert.Empty(t, tr.CloseSession(c, sessA))
	assert.Empty(t, tr.CloseSession(c, 12345))
	assert.Empty(t, c.Triggers)
}

func TestTree_Ephemerals(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/app", nil)
	mustCreatePath(t, tr, 2, "/b", nil)
	for i, p := range []string{"/app/x", "/app/y", "/apple", "/b/z"} {
		mustCreate(t, tr, newCtx(int64(3+i)), newCreate(p, wire.FlagEphemeral))
	}
	c := newCtx(10)
	c.Session = sessB
	mustCreate(t, tr, c, newCreate("/app/theirs", wire.FlagEphemeral))
	all := []string{"/app/x", "/app/y", "/apple", "/b/z"}

	tests := []struct {
		name    string
		session int64
		prefix  string
		want    []string
	}{
		{name: "empty prefix", session: sessA, prefix: "", want: all},
		{name: "root", session: sessA, prefix: "/", want: all},
		{name: "blank", session: sessA, prefix: "   ", want: all},
		{name: "root with blanks", session: sessA, prefix: " / ", want: all},
		{name: "root with control chars", session: sessA, prefix: "\t/\n", want: all},
		{name: "Java trim drops every char up to space", session: sessA, prefix: "\x01/\x1f", want: all},
		{name: "NBSP is not trimmed by Java", session: sessA, prefix: "\u00a0/", want: nil},
		{name: "plain string prefix", session: sessA, prefix: "/app", want: []string{"/app/x", "/app/y", "/apple"}},
		{name: "prefix with slash", session: sessA, prefix: "/app/", want: []string{"/app/x", "/app/y"}},
		{name: "prefix is not trimmed for matching", session: sessA, prefix: " /app", want: nil},
		{name: "exact path", session: sessA, prefix: "/b/z", want: []string{"/b/z"}},
		{name: "no match", session: sessA, prefix: "/zz", want: nil},
		{name: "other session", session: sessB, prefix: "", want: []string{"/app/theirs"}},
		{name: "unknown session", session: 999, prefix: "", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tr.Ephemerals(tc.session, tc.prefix)
			assert.NotNil(t, got)
			assert.ElementsMatch(t, tc.want, got)
		})
	}
	assert.True(t, tr.HasEphemerals(sessA))
	assert.True(t, tr.HasEphemerals(sessB))
	assert.False(t, tr.HasEphemerals(999))
	assert.Equal(t, 5, tr.EphemeralCount())
}

func TestTree_Reapable(t *testing.T) {
	tr := newTree(t)
	c := newCtx(1)
	c.ExtendedTypes = true
	container := func(p string) tree.CreateArgs {
		return tree.CreateArgs{Op: wire.OpCreateContainer, Path: p, ACL: wire.OpenACLUnsafe, TTL: -1}
	}
	ttl := func(p string, ms int64) tree.CreateArgs {
		return tree.CreateArgs{Op: wire.OpCreateTTL, Path: p, ACL: wire.OpenACLUnsafe, Flags: 5, TTL: ms}
	}
	mustCreate(t, tr, c, container("/c3"))
	mustCreate(t, tr, c, container("/c1"))
	mustCreate(t, tr, c, container("/c2"))
	mustCreate(t, tr, c, container("/fresh"))
	mustCreate(t, tr, c, ttl("/t", 100))
	mustCreate(t, tr, c, newCreate("/plain", wire.FlagContainer)) // create with flag 4: a plain node
	mustCreate(t, tr, c, newCreate("/eph", wire.FlagEphemeral))
	t0 := timeAt(1)

	assert.Empty(t, tr.Reapable(t0+100, 10), "unused containers and young TTL nodes stay")
	assert.Equal(t, []string{"/t"}, tr.Reapable(t0+101, 10), "TTL: strictly older than ttl")

	for i, p := range []string{"/c3", "/c1", "/c2", "/plain"} {
		mustCreatePath(t, tr, int64(2+i), p+"/child", nil)
	}
	mustCreatePath(t, tr, 6, "/t/child", nil)
	assert.Empty(t, tr.Reapable(t0+1000, 10), "nodes with children stay")

	for i, p := range []string{"/c3", "/c1", "/c2", "/plain", "/t"} {
		require.Equal(t, wire.CodeOK, tr.Delete(newCtx(int64(10+i)), p+"/child", -1))
	}
	assert.Equal(t, []string{"/c1", "/c2", "/c3"}, tr.Reapable(t0, 10), "used empty containers, sorted")
	assert.Equal(t, []string{"/c1", "/c2"}, tr.Reapable(t0, 2), "limit")
	assert.Empty(t, tr.Reapable(t0, 0))
	assert.Equal(t, []string{"/c1", "/c2", "/c3", "/t"}, tr.Reapable(t0+101, 10))

	// setData renews a TTL node: its age is counted from mtime.
	_, code := tr.SetData(newCtx(20), "/t", []byte("x"), -1)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, []string{"/c1", "/c2", "/c3"}, tr.Reapable(t0+101, 10))
	assert.Equal(t, []string{"/c1", "/c2", "/c3", "/t"}, tr.Reapable(timeAt(20)+101, 10))
}
