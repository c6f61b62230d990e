package tree_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

func TestTree_New(t *testing.T) {
	tr := newTree(t)

	tests := []struct {
		name     string
		path     string
		acl      []wire.ACL
		children []string
		stat     wire.Stat
	}{
		{
			name: "root", path: "/", acl: wire.OpenACLUnsafe, children: []string{"zookeeper"},
			// 2*0 stored creates - 1 child.
			stat: wire.Stat{Cversion: -1, NumChildren: 1},
		},
		{
			name: "zookeeper", path: "/zookeeper", acl: wire.OpenACLUnsafe, children: []string{"quota", "config"},
			stat: wire.Stat{Cversion: -2, NumChildren: 2},
		},
		{
			name: "quota", path: "/zookeeper/quota", acl: wire.OpenACLUnsafe,
			stat: wire.Stat{},
		},
		{
			name: "config", path: "/zookeeper/config", acl: wire.ReadACLUnsafe,
			stat: wire.Stat{Aversion: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, st, code := tr.Get(tc.path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.NotNil(t, data, "system nodes hold empty, not null, data")
			assert.Empty(t, data)
			assert.Equal(t, tc.stat, st)

			acl, aclStat, code := tr.ACL(tc.path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.Equal(t, tc.acl, acl)
			assert.Equal(t, tc.stat, aclStat)

			names, _, code := tr.Children(tc.path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.ElementsMatch(t, tc.children, names)

			exists, code := tr.Exists(tc.path)
			assert.Equal(t, wire.CodeOK, code)
			assert.Equal(t, tc.stat, exists)
		})
	}

	assert.Equal(t, 4, tr.Len())
	assert.Equal(t, 0, tr.EphemeralCount())
	assert.Equal(t, int64(len("/")+len("/zookeeper")+len("/zookeeper/quota")+len("/zookeeper/config")),
		tr.ApproximateDataSize())
	n, code := tr.AllChildrenNumber("/", nil)
	assert.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(3), n, "ZooKeeper's node count 5 minus the two root aliases")
	assert.Empty(t, tr.Reapable(1<<62, 100))
	assert.Empty(t, tr.Owners())
}

func TestTree_ReadsNeedREAD(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/secret", []byte("s"))
	mustCreatePath(t, tr, 2, "/secret/child", nil)
	mustSetACL(t, tr, 3, "/secret", []wire.ACL{{Perms: wire.PermAll, ID: aliceID}})

	tests := []struct {
		name string
		path string
		ids  []wire.Id
		want wire.Code
	}{
		{name: "anonymous", path: "/secret", want: wire.CodeNoAuth},
		{name: "other digest", path: "/secret", ids: []wire.Id{bobID, ipID}, want: wire.CodeNoAuth},
		{name: "same user other hash", path: "/secret", ids: []wire.Id{{Scheme: "digest", ID: "alice:x"}}, want: wire.CodeNoAuth},
		{name: "owner", path: "/secret", ids: []wire.Id{bobID, aliceID}, want: wire.CodeOK},
		{name: "super", path: "/secret", ids: []wire.Id{superID}, want: wire.CodeOK},
		{name: "missing beats no auth", path: "/secret/missing", want: wire.CodeNoNode},
		{name: "child is open", path: "/secret/child", want: wire.CodeOK},
		{name: "no path validation", path: "/secret/", want: wire.CodeNoNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, st, code := tr.Get(tc.path, tc.ids)
			assert.Equal(t, tc.want, code, "Get")
			if tc.want != wire.CodeOK {
				assert.Nil(t, data)
				assert.Zero(t, st)
			}
			names, st, code := tr.Children(tc.path, tc.ids)
			assert.Equal(t, tc.want, code, "Children")
			if tc.want != wire.CodeOK {
				assert.Nil(t, names)
				assert.Zero(t, st)
			}
			_, _, code = tr.ACL(tc.path, tc.ids)
			assert.Equal(t, tc.want, code, "ACL")
			n, code := tr.AllChildrenNumber(tc.path, tc.ids)
			assert.Equal(t, tc.want, code, "AllChildrenNumber")
			if tc.want != wire.CodeOK {
				assert.Zero(t, n)
			}
		})
	}
}

func TestTree_Exists(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/secret", nil)
	mustSetACL(t, tr, 2, "/secret", []wire.ACL{{Perms: wire.PermAll, ID: aliceID}})

	tests := []struct {
		name string
		path string
		want wire.Code
	}{
		{name: "no ACL check in 3.8.0", path: "/secret", want: wire.CodeOK},
		{name: "missing", path: "/missing", want: wire.CodeNoNode},
		{name: "NUL", path: "/secret\x00", want: wire.CodeBadArguments},
		{name: "NUL in missing path", path: "/missing/\x00", want: wire.CodeBadArguments},
		{name: "invalid path is just missing", path: "/secret/", want: wire.CodeNoNode},
		{name: "relative path is just missing", path: "secret", want: wire.CodeNoNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, code := tr.Exists(tc.path)
			assert.Equal(t, tc.want, code)
			if code == wire.CodeOK {
				assert.Equal(t, mustStat(t, tr, tc.path), st)
			} else {
				assert.Zero(t, st)
			}
		})
	}
}

func TestTree_ACLMasksDigestWithoutAdmin(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/n", nil)
	acl := []wire.ACL{
		{Perms: wire.PermRead, ID: wire.Id{Scheme: "world", ID: "anyone"}},
		{Perms: wire.PermAll, ID: aliceID},
		{Perms: wire.PermRead, ID: wire.Id{Scheme: "digest", ID: ":nouser"}},
		{Perms: wire.PermAdmin, ID: wire.Id{Scheme: "ip", ID: "10.0.0.0/8"}},
	}
	mustSetACL(t, tr, 2, "/n", acl)
	masked := []wire.ACL{
		acl[0],
		{Perms: wire.PermAll, ID: wire.Id{Scheme: "digest", ID: "alice:x"}},
		{Perms: wire.PermRead, ID: wire.Id{Scheme: "digest", ID: ":x"}},
		acl[3],
	}

	tests := []struct {
		name string
		ids  []wire.Id
		want []wire.ACL
	}{
		{name: "READ only: masked", ids: nil, want: masked},
		{name: "other digest user: masked", ids: []wire.Id{bobID}, want: masked},
		{name: "ADMIN by digest", ids: []wire.Id{aliceID}, want: acl},
		{name: "ADMIN by ip", ids: []wire.Id{ipID}, want: acl},
		{name: "super", ids: []wire.Id{superID}, want: acl},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st, code := tr.ACL("/n", tc.ids)
			require.Equal(t, wire.CodeOK, code)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, mustStat(t, tr, "/n"), st)
		})
	}

	// The stored ACL is not changed by masking.
	got, _, _ := tr.ACL("/n", []wire.Id{superID})
	assert.Equal(t, acl, got)
}

func TestTree_ACLNeedsReadOrAdmin(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/n", nil)

	tests := []struct {
		name string
		acl  []wire.ACL
		ids  []wire.Id
		want wire.Code
	}{
		{name: "ADMIN only", acl: []wire.ACL{{Perms: wire.PermAdmin, ID: aliceID}}, ids: []wire.Id{aliceID}, want: wire.CodeOK},
		{name: "READ only", acl: []wire.ACL{{Perms: wire.PermRead, ID: aliceID}}, ids: []wire.Id{aliceID}, want: wire.CodeOK},
		{
			name: "WRITE CREATE DELETE only",
			acl:  []wire.ACL{{Perms: wire.PermWrite | wire.PermCreate | wire.PermDelete, ID: aliceID}},
			ids:  []wire.Id{aliceID}, want: wire.CodeNoAuth,
		},
		{name: "world WRITE only", acl: []wire.ACL{{Perms: wire.PermWrite, ID: wire.Id{Scheme: "world", ID: "anyone"}}}, want: wire.CodeNoAuth},
		{name: "someone else's", acl: []wire.ACL{{Perms: wire.PermAll, ID: bobID}}, ids: []wire.Id{aliceID}, want: wire.CodeNoAuth},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustSetACL(t, tr, int64(10+i), "/n", tc.acl)
			_, _, code := tr.ACL("/n", tc.ids)
			assert.Equal(t, tc.want, code)
		})
	}
}

func TestTree_AllChildrenNumber(t *testing.T) {
	tr := newTree(t)
	for i, p := range []string{"/a", "/a/b", "/a/b/c", "/a/d", "/e"} {
		mustCreatePath(t, tr, int64(i+1), p, nil)
	}

	tests := []struct {
		name string
		path string
		want int32
	}{
		{name: "root counts everything but itself", path: "/", want: 8},
		{name: "subtree", path: "/a", want: 3},
		{name: "inner", path: "/a/b", want: 1},
		{name: "leaf", path: "/a/b/c", want: 0},
		{name: "system", path: "/zookeeper", want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, code := tr.AllChildrenNumber(tc.path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.Equal(t, tc.want, n)
		})
	}
	assert.Equal(t, 9, tr.Len())
}

func TestTree_ChildrenAndStat(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/p", nil)
	for i, name := range []string{"x", "y", "z"} {
		mustCreatePath(t, tr, int64(2+i), "/p/"+name, nil)
	}
	names, st, code := tr.Children("/p", nil)
	require.Equal(t, wire.CodeOK, code)
	assert.ElementsMatch(t, []string{"x", "y", "z"}, names)
	assert.Equal(t, mustStat(t, tr, "/p"), st)
	assert.Equal(t, int32(3), st.NumChildren)

	names, _, code = tr.Children("/p/x", nil)
	require.Equal(t, wire.CodeOK, code)
	assert.NotNil(t, names, "a leaf has an empty, non-nil child list")
	assert.Empty(t, names)

	_, ok := tr.Stat("/missing")
	assert.False(t, ok)
	assert.Equal(t, []string{"/", "/p", "/p/x", "/p/y", "/p/z", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"},
		mustAllPaths(t, tr))
}

func TestTree_ApproximateDataSize(t *testing.T) {
	tr := newTree(t)
	base := tr.ApproximateDataSize()
	mustCreatePath(t, tr, 1, "/abc", []byte("12345"))
	assert.Equal(t, base+4+5, tr.ApproximateDataSize())
	_, code := tr.SetData(newCtx(2), "/abc", []byte("1"), -1)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, base+4+1, tr.ApproximateDataSize())
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(3), "/abc", -1))
	assert.Equal(t, base, tr.ApproximateDataSize())
}

// mustKindOf finds a node's kind from the outside: ephemerals report their
// owner; containers become reapable once a child was created and deleted;
// TTL nodes become reapable after their TTL. It creates and deletes a child
// (except under an ephemeral), so it changes the tree.
func mustKindOf(t testing.TB, tr *tree.Tree, path string, zxid int64) tree.Kind {
	t.Helper()
	st := mustStat(t, tr, path)
	if st.EphemeralOwner != 0 {
		_, _, code := tr.Create(newCtx(zxid), newCreate(path+"/child", 0))
		require.Equal(t, wire.CodeNoChildrenForEphemerals, code, "ephemerals have no children")
		return tree.KindEphemeral
	}
	mustCreate(t, tr, newCtx(zxid), newCreate(path+"/child", 0))
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(zxid+1), path+"/child", -1))
	switch {
	case isReapable(tr, path, st.Mtime):
		return tree.KindContainer
	case isReapable(tr, path, st.Mtime+tree.MaxTTL+1):
		return tree.KindTTL
	}
	return tree.KindPersistent
}

// ZooKeeper's DataTree keeps the root under "" as well as "/", so reads of
// "" see the root; writes of "" are refused by their path checks.
func TestTree_EmptyPathReadsTheRoot(t *testing.T) {
	tr := newTree(t)
	data, st, code := tr.Get("", nil)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, []byte{}, data)
	rootStat, _ := tr.Stat("/")
	assert.Equal(t, rootStat, st)
	kids, _, code := tr.Children("", nil)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, []string{"zookeeper"}, kids)
	_, code = tr.Exists("")
	assert.Equal(t, wire.CodeOK, code)
	acl, _, code := tr.ACL("", nil)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, wire.OpenACLUnsafe, acl)
	all, _ := tr.AllChildrenNumber("", nil)
	slash, _ := tr.AllChildrenNumber("/", nil)
	assert.Equal(t, slash+1, all, "ZooKeeper counts the root itself under \"\"")
	c := &tree.Context{Zxid: 10}
	_, code = tr.SetData(c, "", nil, -1)
	assert.Equal(t, wire.CodeBadArguments, code)
	assert.Equal(t, wire.CodeBadArguments, tr.Delete(c, "", -1))
}
