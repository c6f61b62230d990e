package tree

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

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
	n := tr.nodes["/n"]
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
	tr.nodes["/p"].childCreates = math.MaxInt32 - 1

	assert.Equal(t, "/p/s2147483646", mustCreateNode(t, tr, 2, "/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, "/p/s2147483647", mustCreateNode(t, tr, 3, "/p/s", wire.FlagPersistentSequential))
	assert.Equal(t, "/p/s-2147483648", mustCreateNode(t, tr, 4, "/p/s", wire.FlagPersistentSequential), "int32 wrap, as documented")
	assert.Equal(t, "/p/s-2147483647", mustCreateNode(t, tr, 5, "/p/s", wire.FlagPersistentSequential))

	tr.nodes["/p"].childCreates = -1
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
			n := &node{childCreates: tc.creates}
			for i := range tc.children {
				n.children.add(fmt.Sprint(i))
			}
			st := n.stat()
			assert.Equal(t, tc.want, st.Cversion)
			assert.Equal(t, int32(tc.children), st.NumChildren)
		})
	}
}

func TestNode_StatHidesNonEphemeralOwner(t *testing.T) {
	for _, k := range []Kind{KindPersistent, KindContainer, KindTTL} {
		n := &node{kind: k, owner: 99, ttl: 5}
		assert.Zero(t, n.stat().EphemeralOwner, "kind %d", k)
	}
	assert.Equal(t, int64(99), (&node{kind: KindEphemeral, owner: 99}).stat().EphemeralOwner)
}

// TestTree_CreateNodeExistsBeforeEphemeralParent checks the order of two
// checks that a consistent tree can never make collide: it plants a child
// under an ephemeral by hand, and removes it before the invariant check.
func TestTree_CreateNodeExistsBeforeEphemeralParent(t *testing.T) {
	tr := newTestTree(t)
	mustCreateNode(t, tr, 1, "/e", wire.FlagEphemeral)
	e := tr.nodes["/e"]
	tr.nodes["/e/x"] = &node{data: []byte{}, acl: wire.OpenACLUnsafe}
	tr.link(e, "x")
	tr.dataSize += int64(len("/e/x"))
	t.Cleanup(func() {
		delete(tr.nodes, "/e/x")
		e.children.remove("x")
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
		{name: "missing parent link", corrupt: func(tr *Tree) { tr.nodes["/p"].children.remove("c") }},
		{name: "dangling child", corrupt: func(tr *Tree) { tr.nodes["/p"].children.add("ghost") }},
		{name: "pzxid below child czxid", corrupt: func(tr *Tree) { tr.nodes["/p"].pzxid = 0 }},
		{name: "data size", corrupt: func(tr *Tree) { tr.dataSize++ }},
		{name: "ephemeral not indexed", corrupt: func(tr *Tree) { delete(tr.ephemerals, 7) }},
		{name: "ephemeral with child", corrupt: func(tr *Tree) {
			tr.nodes["/e/x"] = &node{}
			tr.link(tr.nodes["/e"], "x")
			tr.dataSize += int64(len("/e/x"))
		}},
		{name: "reapable index", corrupt: func(tr *Tree) { tr.reapable["/p"] = struct{}{} }},
		{name: "no root", corrupt: func(tr *Tree) { delete(tr.nodes, "/") }},
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

func TestRestore_RejectsInconsistentSnapshot(t *testing.T) {
	root := record{path: "/", n: node{data: []byte{}, acl: wire.OpenACLUnsafe}}
	leaf := func(p string) record { return record{path: p, n: node{acl: wire.OpenACLUnsafe}} }
	tests := []struct {
		name    string
		records []record
		raw     func(b []byte) []byte // optional change to the encoded stream
	}{
		{name: "no root", records: []record{leaf("/a")}},
		{name: "orphan", records: []record{root, leaf("/a/b")}},
		{name: "duplicate", records: []record{root, leaf("/a"), leaf("/a")}},
		{name: "invalid path", records: []record{root, leaf("/a/")}},
		{name: "relative path", records: []record{root, leaf("a")}},
		{name: "unknown kind", records: []record{root, {path: "/a", n: node{kind: KindTTL + 1}}}},
		{
			name:    "trailing bytes in a record",
			records: []record{root},
			raw: func(b []byte) []byte {
				// Grow the only record's length prefix by one and append a byte.
				const hdr = len(snapshotMagic) + 1 + 8
				b[hdr+3]++
				return append(b, 0)
			},
		},
		{
			name:    "garbage record",
			records: []record{root},
			raw: func(b []byte) []byte {
				const hdr = len(snapshotMagic) + 1 + 8
				return append(b[:hdr], 0, 0, 0, 2, 0xff, 0xff)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := handMade(tc.records).WriteTo(&buf)
			require.NoError(t, err)
			raw := buf.Bytes()
			if tc.raw != nil {
				raw = tc.raw(raw)
			}
			got, err := Restore(bytes.NewReader(raw))
			assert.ErrorIs(t, err, ErrBadSnapshot)
			assert.Nil(t, got)
		})
	}

	// The same machinery accepts a consistent hand-made snapshot.
	var buf bytes.Buffer
	_, err := handMade([]record{root, leaf("/a"), leaf("/a/b")}).WriteTo(&buf)
	require.NoError(t, err)
	got, err := Restore(&buf)
	require.NoError(t, err)
	assert.NoError(t, got.Check())
	assert.Equal(t, 3, got.Len())
}

// handMade returns a snapshot of the given records, each listed as a child
// of its parent's path, in order, whether that parent is among them or not.
func handMade(records []record) *Snapshot {
	s := &Snapshot{records: records, kids: map[string]*kidSeqs{}}
	for i, r := range records {
		if r.path == "/" || !strings.HasPrefix(r.path, "/") {
			continue
		}
		ks := s.kids[parentOf(r.path)]
		if ks == nil {
			ks = &kidSeqs{}
			s.kids[parentOf(r.path)] = ks
		}
		ks.names = append(ks.names, baseName(r.path))
		ks.seqs = append(ks.seqs, uint32(i))
	}
	return s
}
