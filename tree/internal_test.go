package tree

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// newTestTree returns a fresh tree whose invariants are checked when the
// test ends (the white-box twin of tree_test's newTree).
func newTestTree(t testing.TB) *Tree {
	t.Helper()
	tr := New()
	t.Cleanup(func() { assert.NoError(t, tr.Check(), "tree invariants at the end of the test") })
	return tr
}

func newTestCtx(zxid int64) *Context { return &Context{Zxid: zxid, Time: 1000 * zxid, Session: 7} }

func mustCreateNode(t testing.TB, tr *Tree, zxid int64, path string, flags int32) string {
	t.Helper()
	p, _, code := tr.Create(newTestCtx(zxid), CreateArgs{Op: wire.OpCreate, Path: path, ACL: wire.OpenACLUnsafe, Flags: flags, TTL: -1})
	require.Equal(t, wire.CodeOK, code, "create %s", path)
	return p
}

func TestSeqSuffix(t *testing.T) {
	tests := []struct {
		name string
		v    int32
		want string
	}{
		{name: "zero", v: 0, want: "0000000000"},
		{name: "one", v: 1, want: "0000000001"},
		{name: "ten digits", v: 1234567890, want: "1234567890"},
		{name: "max", v: math.MaxInt32, want: "2147483647"},
		{name: "minus one", v: -1, want: "-000000001"},
		{name: "minus ten digits", v: -123456789, want: "-123456789"},
		{name: "min", v: math.MinInt32, want: "-2147483648"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, seqSuffix(tc.v))
			assert.Equal(t, fmt.Sprintf("%010d", tc.v), seqSuffix(tc.v), "same as Go's %%010d")
		})
	}
}

func TestNextVersion(t *testing.T) {
	tests := []struct {
		name string
		v    int32
		want int32
	}{
		{name: "zero", v: 0, want: 1},
		{name: "wraps past max", v: math.MaxInt32, want: math.MinInt32},
		{name: "skips minus one", v: -2, want: 0},
		{name: "from minus one", v: -1, want: 0},
		{name: "negative", v: math.MinInt32, want: math.MinInt32 + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, nextVersion(tc.v))
		})
	}
}

func TestTree_VersionWrap(t *testing.T) {
	tr := newTestTree(t)
	mustCreateNode(t, tr, 1, "/n", 0)
	n := tr.lookup("/n")
	n.version, n.aversion = math.MaxInt32, math.MaxInt32

	st, code := tr.SetData(newTestCtx(2), "/n", nil, math.MaxInt32)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(math.MinInt32), st.Version)
	st, code = tr.SetACL(newTestCtx(3), "/n", wire.OpenACLUnsafe, math.MaxInt32)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(math.MinInt32), st.Aversion)

	n.version, n.aversion = -2, -2
	st, code = tr.SetData(newTestCtx(4), "/n", nil, -2)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(0), st.Version, "-1 is skipped: it means any version")
	st, code = tr.SetACL(newTestCtx(5), "/n", wire.OpenACLUnsafe, -2)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, int32(0), st.Aversion)
}

func TestTree_SequentialCounterWraps(t *testing.T) {
	tr := newTestTree(t)
	mustCreateNode(t, tr, 1, "/p", 0)
	p := tr.lookup("/p")
	tr.parentKids(p).creates = math.MaxInt32 - 1

	assert.Equal(t, "/p/s2147483646", mustCreateNode(t, tr, 2, "/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, "/p/s2147483647", mustCreateNode(t, tr, 3, "/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, "/p/s-2147483648", mustCreateNode(t, tr, 4, "/p/s", wire.FlagPersistentSequential), "int32 wrap, as documented")
	assert.Equal(t, "/p/s-2147483647", mustCreateNode(t, tr, 5, "/p/s", wire.FlagPersistentSequential))

	tr.kidsOf(p).creates = -1
	assert.Equal(t, "/p/s-000000001", mustCreateNode(t, tr, 6, "/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, "/p/s0000000000", mustCreateNode(t, tr, 7, "/p/s", wire.FlagPersistentSequential))
}

func TestNode_VisibleCversion(t *testing.T) {
	tests := []struct {
		name     string
		creates  int32
		children int
		want     int32
	}{
		{name: "fresh root", creates: 0, children: 1, want: -1},
		{name: "creates only", creates: 3, children: 3, want: 3},
		{name: "creates and deletes", creates: 3, children: 1, want: 5},
		{name: "all deleted", creates: 3, children: 0, want: 6},
		{name: "int32 wrap", creates: math.MaxInt32, children: 0, want: -2},
		{name: "int32 wrap with child", creates: math.MaxInt32/2 + 1, children: 1, want: math.MaxInt32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			_, n := tr.nodes.alloc()
			tr.parentKids(n).creates = tc.creates
			for i := range tc.children {
				id, _ := tr.nodes.alloc()
				tr.kidsOf(n).set.add(fmt.Sprint(i), id)
			}
			st := tr.stat(n)
			assert.Equal(t, tc.want, st.Cversion)
			assert.Equal(t, int32(tc.children), st.NumChildren)
		})
	}
}

func TestNode_StatHidesNonEphemeralOwner(t *testing.T) {
	tr := New()
	for _, k := range []Kind{KindPersistent, KindContainer, KindTTL} {
		n := &node{kind: k, ownerTTL: 99}
		assert.Zero(t, tr.stat(n).EphemeralOwner, "kind %d", k)
	}
	assert.Equal(t, int64(99), tr.stat(&node{kind: KindEphemeral, ownerTTL: 99}).EphemeralOwner)
}

// TestTree_CreateNodeExistsBeforeEphemeralParent checks the order of two
// checks that a consistent tree can never make collide: it plants a child
// under an ephemeral by hand, and removes it before the invariant check.
func TestTree_CreateNodeExistsBeforeEphemeralParent(t *testing.T) {
	tr := newTestTree(t)
	mustCreateNode(t, tr, 1, "/e", wire.FlagEphemeral)
	e := tr.lookup("/e")
	x, xn := tr.nodes.alloc()
	xn.data = emptyData
	tr.link(e, "x", x)
	tr.count++
	tr.dataSize += int64(len("/e/x"))
	t.Cleanup(func() {
		tr.kidsOf(e).set.remove("x")
		tr.kidsTab.release(e.kids)
		e.kids = 0
		tr.nodes.release(x)
		tr.count--
		tr.dataSize -= int64(len("/e/x"))
	})

	_, _, code := tr.Create(newTestCtx(2), CreateArgs{Op: wire.OpCreate, Path: "/e/x", ACL: wire.OpenACLUnsafe, TTL: -1})
	assert.Equal(t, wire.CodeNodeExists, code)
	_, _, code = tr.Create(newTestCtx(3), CreateArgs{Op: wire.OpCreate, Path: "/e/y", ACL: wire.OpenACLUnsafe, TTL: -1})
	assert.Equal(t, wire.CodeNoChildrenForEphemerals, code)
}

func TestTree_CheckReportsViolations(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(tr *Tree)
	}{
		{name: "missing parent link", corrupt: func(tr *Tree) { tr.kidsOf(tr.lookup("/p")).set.remove("c") }},
		{name: "dangling child", corrupt: func(tr *Tree) {
			k := tr.kidsOf(tr.lookup("/p"))
			i, _ := k.set.lookup("c")
			k.set.slots[i].e = 0
		}},
		{name: "child count", corrupt: func(tr *Tree) { tr.kidsOf(tr.lookup("/p")).set.n++ }},
		{name: "bin counts", corrupt: func(tr *Tree) { tr.kidsOf(tr.lookup("/p")).set.counts[0]++ }},
		{name: "pzxid below child czxid", corrupt: func(tr *Tree) { tr.kidsOf(tr.lookup("/p")).pzxid = 0 }},
		{name: "data chunk count", corrupt: func(tr *Tree) {
			_, err := tr.SetData(newTestCtx(4), "/p", []byte("x"), -1)
			require.Equal(t, wire.CodeOK, err)
			tr.arena.chunks.items[tr.lookup("/p").data.chunk].live++
		}},
		{name: "node table", corrupt: func(tr *Tree) { tr.nodes.alloc() }},
		{name: "data size", corrupt: func(tr *Tree) { tr.dataSize++ }},
		{name: "ephemeral not indexed", corrupt: func(tr *Tree) { delete(tr.ephemerals, 7) }},
		{name: "ephemeral with child", corrupt: func(tr *Tree) {
			id, _ := tr.nodes.alloc()
			tr.link(tr.lookup("/e"), "x", id)
			tr.count++
			tr.dataSize += int64(len("/e/x"))
		}},
		{name: "reapable index", corrupt: func(tr *Tree) { tr.reapable["/p"] = struct{}{} }},
		{name: "no root", corrupt: func(tr *Tree) { tr.root = 0 }},
		{name: "ACL references", corrupt: func(tr *Tree) { tr.acls.refs[openACL]++ }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			mustCreateNode(t, tr, 1, "/p", 0)
			mustCreateNode(t, tr, 2, "/p/c", 0)
			mustCreateNode(t, tr, 3, "/e", wire.FlagEphemeral)
			require.NoError(t, tr.Check())
			tc.corrupt(tr)
			assert.Error(t, tr.Check())
		})
	}
}

func TestJavaSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "a:b", want: []string{"a", "b"}},
		{in: "a:", want: []string{"a"}},
		{in: ":b", want: []string{"", "b"}},
		{in: "a:b::", want: []string{"a", "b"}},
		{in: "::", want: []string{}},
		{in: "a::b", want: []string{"a", "", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, javaSplit(tc.in, ":"))
		})
	}
}

// pathRecord is a record as a snapshot stream holds it, with its path.
type pathRecord struct {
	path string
	r    record
}

// encodeSnapshot writes a snapshot stream of hand-made records, each
// listed as a child of its parent's path, in order, whether that parent is
// among them or not.
func encodeSnapshot(t testing.TB, records []pathRecord) []byte {
	t.Helper()
	type kidList struct {
		parent string
		names  []string
		seqs   []uint32
	}
	var lists []kidList
	for i, r := range records {
		if r.path == "/" || !strings.HasPrefix(r.path, "/") {
			continue
		}
		k := slices.IndexFunc(lists, func(l kidList) bool { return l.parent == parentOf(r.path) })
		if k < 0 {
			k, lists = len(lists), append(lists, kidList{parent: parentOf(r.path)})
		}
		lists[k].names, lists[k].seqs = append(lists[k].names, baseName(r.path)), append(lists[k].seqs, uint32(i))
	}
	var buf bytes.Buffer
	e := newEncoder(&buf, len(records), [][]wire.ACL{wire.OpenACLUnsafe})
	for i := range records {
		e.record([]byte(records[i].path), &records[i].r)
	}
	for _, l := range lists {
		e.kids([]byte(l.parent), l.names, l.seqs)
	}
	require.NoError(t, e.flush())
	return buf.Bytes()
}

func TestRestore_RejectsInconsistentSnapshot(t *testing.T) {
	root := pathRecord{path: "/", r: record{data: []byte{}, n: node{acl: openACL}}}
	leaf := func(p string) pathRecord { return pathRecord{path: p, r: record{n: node{acl: openACL}}} }
	tests := []struct {
		name    string
		records []pathRecord
		raw     func(b []byte) []byte // optional change to the encoded stream
	}{
		{name: "no root", records: []pathRecord{leaf("/a")}},
		{name: "orphan", records: []pathRecord{root, leaf("/a/b")}},
		{name: "duplicate", records: []pathRecord{root, leaf("/a"), leaf("/a")}},
		{name: "invalid path", records: []pathRecord{root, leaf("/a/")}},
		{name: "relative path", records: []pathRecord{root, leaf("a")}},
		{name: "unknown kind", records: []pathRecord{root, {path: "/a", r: record{n: node{kind: KindTTL + 1}}}}},
		{name: "a child table past any size", records: []pathRecord{
			{path: "/", r: record{data: []byte{}, n: node{acl: openACL}, kids: setState{next: 2, bits: 62}}}, leaf("/a")}},
		{name: "an ephemeral table past any size", records: []pathRecord{root,
			{path: "/e", r: record{n: node{acl: openACL, kind: KindEphemeral, ownerTTL: 7}, eph: setState{next: 1, bits: 40}}}}},
		{
			name:    "trailing bytes in a record",
			records: []pathRecord{root},
			raw: func(b []byte) []byte {
				// Grow the only record's length prefix by one and append a byte.
				const hdr = len(snapshotMagic) + 1 + 8
				b[hdr+3]++
				return append(b, 0)
			},
		},
		{
			name:    "garbage record",
			records: []pathRecord{root},
			raw: func(b []byte) []byte {
				const hdr = len(snapshotMagic) + 1 + 8
				return append(b[:hdr], 0, 0, 0, 2, 0xff, 0xff)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := encodeSnapshot(t, tc.records)
			if tc.raw != nil {
				raw = tc.raw(raw)
			}
			got, err := Restore(bytes.NewReader(raw))
			assert.ErrorIs(t, err, ErrBadSnapshot)
			assert.Nil(t, got)
		})
	}

	// The same machinery accepts a consistent hand-made snapshot, also one
	// whose records come back to a parent after another's subtree (each
	// still after its parent), and refuses one with a child before its
	// parent.
	got, err := Restore(bytes.NewReader(encodeSnapshot(t, []pathRecord{root, leaf("/a"), leaf("/a/b")})))
	require.NoError(t, err)
	assert.NoError(t, got.Check())
	assert.Equal(t, 3, got.Len())
	got, err = Restore(bytes.NewReader(encodeSnapshot(t, []pathRecord{root, leaf("/a"), leaf("/a/b"), leaf("/c"), leaf("/a/d")})))
	require.NoError(t, err)
	assert.NoError(t, got.Check())
	names, _, _ := got.Children("/a", nil)
	assert.ElementsMatch(t, []string{"b", "d"}, names)
	_, err = Restore(bytes.NewReader(encodeSnapshot(t, []pathRecord{root, leaf("/a/b"), leaf("/a")})))
	assert.ErrorIs(t, err, ErrBadSnapshot)
}

// TestTree_ACLsInternedAndReleased follows the ACL table through creates,
// setACL, deletes and a failed multi whose rollback needs a list back after
// its index went to another.
func TestTree_ACLsInternedAndReleased(t *testing.T) {
	tr := newTestTree(t)
	acl := func(id string) []wire.ACL {
		return []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: SchemeDigest, ID: id + ":x"}}}
	}
	create := func(zxid int64, path string, a []wire.ACL) wire.Code {
		_, _, code := tr.Create(newTestCtx(zxid), CreateArgs{Op: wire.OpCreate, Path: path, ACL: a, TTL: -1})
		return code
	}
	super := &Context{Zxid: 4, Auth: []wire.Id{{Scheme: SchemeSuper}}}
	require.Equal(t, wire.CodeOK, create(1, "/a", acl("l")))
	require.Equal(t, wire.CodeOK, create(2, "/b", acl("l")))
	l := tr.lookup("/a").acl
	require.Equal(t, l, tr.lookup("/b").acl, "one list for both")
	assert.Equal(t, 2, tr.acls.refs[l])

	_, code := tr.SetACL(super, "/a", acl("m"), -1)
	require.Equal(t, wire.CodeOK, code)
	m := tr.lookup("/a").acl
	assert.Equal(t, []int{1, 1}, []int{tr.acls.refs[l], tr.acls.refs[m]})
	super.Zxid++
	require.Equal(t, wire.CodeOK, tr.Delete(super, "/b", -1))
	assert.Nil(t, tr.acls.lists[l], "no node refers to it")

	results := tr.Multi(super, []wire.MultiOp{
		{Req: &wire.DeleteRequest{Path: "/a", Version: -1}},
		{Req: &wire.CreateRequest{Path: "/c", ACL: acl("n")}},
		{Req: &wire.CheckVersionRequest{Path: "/c", Version: 5}},
	})
	require.Equal(t, wire.CodeBadVersion, results[2].Err)
	got, _, code := tr.ACL("/a", super.Auth)
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, acl("m"), got, "the rollback gives /a its list back")
	assert.Nil(t, tr.lookup("/c"))
}

// TestNode_Layout guards the layout: nodes are 72 bytes, and neither a
// node nor a child table's slot holds a pointer, so the collector need not
// scan them.
func TestNode_Layout(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(node{}), uintptr(72))
	assert.Equal(t, uintptr(20), unsafe.Sizeof(slot[nodeID]{}))
	for _, typ := range []reflect.Type{reflect.TypeFor[node](), reflect.TypeFor[slot[nodeID]](), reflect.TypeFor[slot[member]]()} {
		assert.False(t, hasPointers(typ), "%v holds a pointer", typ)
	}
}

func hasPointers(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.String, reflect.Map, reflect.Chan, reflect.Func,
		reflect.Interface, reflect.UnsafePointer:
		return true
	case reflect.Struct:
		for i := range typ.NumField() {
			if hasPointers(typ.Field(i).Type) {
				return true
			}
		}
	case reflect.Array:
		return typ.Len() > 0 && hasPointers(typ.Elem())
	}
	return false
}
