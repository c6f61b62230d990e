package tree_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// newRichTree builds a tree with every kind of node and state a snapshot
// must carry: data that is nil, empty and not, ephemerals of two sessions,
// used and unused containers, TTL nodes, sequential nodes, custom ACLs,
// changed versions, and parents whose children were deleted.
func newRichTree(t testing.TB) *tree.Tree {
	t.Helper()
	tr := newTree(t)
	ext := func(zxid int64) *tree.Context { c := newCtx(zxid); c.ExtendedTypes = true; return c }
	mustCreatePath(t, tr, 1, "/app", []byte("config"))
	mustCreatePath(t, tr, 2, "/app/nil", nil)
	mustCreatePath(t, tr, 3, "/app/empty", []byte{})
	mustCreate(t, tr, newCtx(4), newCreate("/app/s-", wire.FlagPersistentSequential))
	mustCreate(t, tr, newCtx(5), newCreate("/app/s-", wire.FlagPersistentSequential))
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(6), "/app/s-0000000003", -1))
	mustCreate(t, tr, newCtx(7), newCreate("/app/e-", wire.FlagEphemeralSequential))
	cb := newCtx(8)
	cb.Session = sessB
	mustCreate(t, tr, cb, newCreate("/b-eph", wire.FlagEphemeral))
	mustCreate(t, tr, ext(9), tree.CreateArgs{Op: wire.OpCreateContainer, Path: "/used", ACL: wire.OpenACLUnsafe, TTL: -1})
	mustCreatePath(t, tr, 10, "/used/x", nil)
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(11), "/used/x", -1))
	mustCreate(t, tr, ext(12), tree.CreateArgs{Op: wire.OpCreateContainer, Path: "/unused", ACL: wire.OpenACLUnsafe, TTL: -1})
	mustCreate(t, tr, ext(13), tree.CreateArgs{Op: wire.OpCreateTTL, Path: "/ttl", Data: []byte("t"), ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 1234})
	mustCreate(t, tr, ext(14), tree.CreateArgs{Op: wire.OpCreateTTL, Path: "/ttl/s", ACL: wire.OpenACLUnsafe, Flags: 6, TTL: 99})
	_, code := tr.SetData(newCtx(15), "/app", []byte("config v2"), -1)
	require.Equal(t, wire.CodeOK, code)
	mustSetACL(t, tr, 16, "/app/nil", []wire.ACL{
		{Perms: wire.PermRead, ID: wire.Id{Scheme: "world", ID: "anyone"}},
		{Perms: wire.PermAll, ID: aliceID},
		{Perms: wire.PermAdmin, ID: wire.Id{Scheme: "ip", ID: "10.0.0.0/8"}},
	})
	mustSetACL(t, tr, 17, "/zookeeper/config", wire.ReadACLUnsafe)
	return tr
}

// mustRoundTrip writes tr's snapshot and restores it; the restored tree's
// invariants are checked when the test ends.
func mustRoundTrip(t testing.TB, tr *tree.Tree) (*tree.Tree, []byte) {
	t.Helper()
	snap := tr.Snapshot(nil)
	require.Equal(t, tr.Len(), snap.Len())
	var buf bytes.Buffer
	n, err := snap.WriteTo(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n)
	raw := slices.Clone(buf.Bytes())
	restored, err := tree.Restore(&buf)
	require.NoError(t, err)
	mustCheckAtEnd(t, restored)
	return restored, raw
}

// mustSameTree compares two trees through every read the API offers.
func mustSameTree(t testing.TB, want, got *tree.Tree) {
	t.Helper()
	assert.Equal(t, want.Digest(), got.Digest(), "digest")
	assert.Equal(t, want.Len(), got.Len(), "len")
	assert.Equal(t, want.ApproximateDataSize(), got.ApproximateDataSize(), "data size")
	assert.Equal(t, want.EphemeralCount(), got.EphemeralCount(), "ephemeral count")
	assert.ElementsMatch(t, want.Owners(), got.Owners(), "owners")
	for _, s := range want.Owners() {
		assert.Equal(t, sorted(want.Ephemerals(s, "")), sorted(got.Ephemerals(s, "")), "ephemerals of %#x", s)
	}
	for _, now := range []int64{0, timeAt(20), 1 << 62} {
		assert.Equal(t, want.Reapable(now, 100), got.Reapable(now, 100), "reapable at %d", now)
	}
	paths := mustAllPaths(t, want)
	require.Equal(t, paths, mustAllPaths(t, got))
	for _, p := range paths {
		wd, ws, _ := want.Get(p, []wire.Id{superID})
		gd, gs, _ := got.Get(p, []wire.Id{superID})
		assert.Equal(t, ws, gs, "stat of %s", p)
		assert.Equal(t, wd == nil, gd == nil, "null data of %s", p)
		assert.Equal(t, string(wd), string(gd), "data of %s", p)
		wa, _, _ := want.ACL(p, []wire.Id{superID})
		ga, _, _ := got.ACL(p, []wire.Id{superID})
		assert.Equal(t, wa, ga, "ACL of %s", p)
	}
}

func TestTree_SnapshotRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		build func(t testing.TB) *tree.Tree
	}{
		{name: "fresh", build: newTree},
		{name: "rich", build: newRichTree},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.build(t)
			restored, _ := mustRoundTrip(t, tr)
			mustSameTree(t, tr, restored)

			// Both go on identically.
			for _, x := range []*tree.Tree{tr, restored} {
				p := mustCreate(t, x, newCtx(30), newCreate("/app-or-root-", wire.FlagPersistentSequential))
				assert.Contains(t, p, "/app-or-root-")
				x.CloseSession(newCtx(31), sessA)
				x.CloseSession(newCtx(32), sessB)
			}
			mustSameTree(t, tr, restored)
		})
	}
}

func TestTree_DigestSeesNilVersusEmptyData(t *testing.T) {
	a, b := newTree(t), newTree(t)
	mustCreatePath(t, a, 1, "/x", nil)
	mustCreatePath(t, b, 1, "/x", []byte{})
	assert.NotEqual(t, a.Digest(), b.Digest())
	ra, _ := mustRoundTrip(t, a)
	rb, _ := mustRoundTrip(t, b)
	assert.Equal(t, a.Digest(), ra.Digest())
	assert.Equal(t, b.Digest(), rb.Digest())
}

func TestTree_DigestIsOrderIndependent(t *testing.T) {
	// The same history gives the same digest whatever the maps' iteration
	// order; the same nodes created in another order do not, because
	// clients see children listed in insertion-dependent (Java) order.
	a, b, c := newTree(t), newTree(t), newTree(t)
	paths := []string{"/x", "/y", "/z", "/x/1", "/x/2"}
	for i, p := range paths {
		mustCreatePath(t, a, int64(i+1), p, []byte(p))
		mustCreatePath(t, c, int64(i+1), p, []byte(p))
	}
	for _, i := range []int{2, 1, 0, 4, 3} {
		mustCreatePath(t, b, int64(i+1), paths[i], []byte(paths[i]))
	}
	assert.Equal(t, a.Digest(), c.Digest())
	assert.NotEqual(t, a.Digest(), b.Digest(), "the children's insertion order differs")
	b = c

	mustCreatePath(t, b, 9, "/tmp", nil)
	require.Equal(t, wire.CodeOK, b.Delete(newCtx(10), "/tmp", -1))
	assert.NotEqual(t, a.Digest(), b.Digest(), "the root's pzxid and child counter differ")
}

func TestTree_SnapshotIsPointInTime(t *testing.T) {
	tr := newRichTree(t)
	// A copy of the state at snapshot time, through a round trip.
	expected, _ := mustRoundTrip(t, tr)
	snap := tr.Snapshot(nil)

	_, code := tr.SetData(newCtx(40), "/app", []byte("changed"), -1)
	require.Equal(t, wire.CodeOK, code)
	mustSetACL(t, tr, 41, "/app/empty", []wire.ACL{{Perms: wire.PermAll, ID: bobID}})
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(42), "/app/nil", -1))
	mustCreatePath(t, tr, 43, "/new", []byte("n"))
	tr.CloseSession(newCtx(44), sessA)
	require.NotEqual(t, expected.Digest(), tr.Digest())

	var buf bytes.Buffer
	_, err := snap.WriteTo(&buf)
	require.NoError(t, err)
	restored, err := tree.Restore(&buf)
	require.NoError(t, err)
	mustCheckAtEnd(t, restored)
	mustSameTree(t, expected, restored)
}

// TestSnapshot_DigestIsTheTreesAtTheSnapshot: a snapshot's digest is the
// tree's when it was taken, whatever changes after.
func TestSnapshot_DigestIsTheTreesAtTheSnapshot(t *testing.T) {
	tr := newRichTree(t)
	want := tr.Digest()
	snap := tr.Snapshot(nil)
	defer snap.Close()
	_, code := tr.SetData(newCtx(40), "/app", []byte("changed"), -1)
	require.Equal(t, wire.CodeOK, code)
	mustSetACL(t, tr, 41, "/app/empty", []wire.ACL{{Perms: wire.PermAll, ID: bobID}})
	require.Equal(t, wire.CodeOK, tr.Delete(newCtx(42), "/app/nil", -1))
	mustCreatePath(t, tr, 43, "/new", []byte("n"))
	tr.CloseSession(newCtx(44), sessA)
	require.NotEqual(t, want, tr.Digest())

	got, err := snap.Digest(nil)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	now := tr.Snapshot(nil)
	defer now.Close()
	got, err = now.Digest(nil)
	require.NoError(t, err)
	assert.Equal(t, tr.Digest(), got)
}

func TestTree_RestoreTruncated(t *testing.T) {
	tr := newRichTree(t)
	_, raw := mustRoundTrip(t, tr)
	require.Greater(t, len(raw), 100)
	for cut := 0; cut < len(raw); cut++ {
		got, err := tree.Restore(bytes.NewReader(raw[:cut]))
		if !assert.ErrorIs(t, err, tree.ErrBadSnapshot, "cut at %d of %d", cut, len(raw)) {
			continue
		}
		assert.Nil(t, got, "cut at %d", cut)
	}
}

func TestTree_RestoreCorrupt(t *testing.T) {
	tr := newRichTree(t)
	_, raw := mustRoundTrip(t, tr)
	const headerLen = len("ZKTREE") + 1 + 8

	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		says   string // in the error, when the stream decodes but the tree is wrong
	}{
		{name: "magic", mutate: func(b []byte) []byte { b[0] ^= 0xff; return b }},
		{name: "last magic byte", mutate: func(b []byte) []byte { b[5] = 'X'; return b }},
		{name: "version", mutate: func(b []byte) []byte { b[6] = 3; return b }},
		{name: "no version", mutate: func(b []byte) []byte { b[6] = 0; return b }},
		{name: "count too high", mutate: func(b []byte) []byte { b[headerLen-1]++; return b }},
		{name: "huge record length", mutate: func(b []byte) []byte { copy(b[headerLen:], []byte{0x7f, 0xff, 0xff, 0xff}); return b }},
		{name: "negative record length", mutate: func(b []byte) []byte { copy(b[headerLen:], []byte{0xff, 0xff, 0xff, 0xfe}); return b }},
		{name: "a record twice", mutate: func(b []byte) []byte {
			first := b[headerLen : headerLen+4+int(binary.BigEndian.Uint32(b[headerLen:]))]
			b[headerLen-1]++ // one more in the count
			return slices.Concat(b[:headerLen], first, b[headerLen:])
		}, says: "duplicate node"},
		{name: "a node without its parent", mutate: func(b []byte) []byte {
			rec := wire.AppendString(nil, "/nowhere/child")
			rec = append(rec, make([]byte, 4*2+7*8+3*4+4+6*4)...)                 // no data (length 0), no ACL, zeros
			binary.BigEndian.PutUint32(rec[len("/nowhere/child")+4:], 0xffffffff) // data: null
			frame, start := wire.StartFrame(nil)
			b[headerLen-1]++
			return slices.Concat(b[:headerLen], wire.EndFrame(append(frame, rec...), start), b[headerLen:])
		}, says: "/nowhere/child has no parent"},
		{name: "garbage", mutate: func([]byte) []byte { return []byte("not a snapshot at all, just text") }},
		{name: "empty", mutate: func([]byte) []byte { return nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tree.Restore(bytes.NewReader(tc.mutate(slices.Clone(raw))))
			assert.ErrorIs(t, err, tree.ErrBadSnapshot)
			if tc.says != "" {
				assert.ErrorContains(t, err, tc.says)
			}
			assert.Nil(t, got)
		})
	}
}

func TestTree_RestoreReaderError(t *testing.T) {
	boom := errors.New("disk on fire")
	tr := newRichTree(t)
	_, raw := mustRoundTrip(t, tr)
	got, err := tree.Restore(&failingReader{data: raw[:len(raw)/2], err: boom})
	assert.ErrorIs(t, err, boom)
	assert.ErrorIs(t, err, tree.ErrBadSnapshot)
	assert.Nil(t, got)
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestTree_SnapshotWriteError(t *testing.T) {
	tr := newRichTree(t)
	// A record larger than WriteTo's buffer makes the writer fail mid-stream,
	// not only at the final flush.
	mustCreatePath(t, tr, 50, "/big", bytes.Repeat([]byte("x"), 300<<10))
	boom := errors.New("sink full")
	for _, limit := range []int{0, 5, 100, 200 << 10, 300 << 10} {
		w := &failingWriter{limit: limit, err: boom}
		_, err := tr.Snapshot(nil).WriteTo(w)
		assert.ErrorIs(t, err, boom, "limit %d", limit)
	}
}

type failingWriter struct {
	limit, n int
	err      error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		k := w.limit - w.n
		w.n = w.limit
		return k, w.err
	}
	w.n += len(p)
	return len(p), nil
}

func TestTree_RestoreRejectsTrailingData(t *testing.T) {
	tr := newRichTree(t)
	_, raw := mustRoundTrip(t, tr)
	extra := append(bytes.Clone(raw), 0, 0, 0, 1, 'x')
	_, err := tree.Restore(bytes.NewReader(extra))
	assert.ErrorIs(t, err, tree.ErrBadSnapshot)
}

// TestTree_SnapshotWrittenTwiceAtOnce: a kept snapshot is written each time
// it is opened, possibly for two members at once; both copies restore the
// tree.
func TestTree_SnapshotWrittenTwiceAtOnce(t *testing.T) {
	tr := newRichTree(t)
	snap := tr.Snapshot(nil)
	var bufs [2]bytes.Buffer
	var wg sync.WaitGroup
	for i := range bufs {
		wg.Go(func() {
			_, err := snap.WriteTo(&bufs[i])
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for i := range bufs {
		restored, err := tree.Restore(&bufs[i])
		require.NoError(t, err)
		mustSameTree(t, tr, restored)
	}
}

// TestTree_RestoresVersion1: a snapshot written before child lists had a
// section of their own (each node's place in its record; durable data dirs
// hold such) restores the same tree. testdata/rich-tree.v1.snapshot was
// written from newRichTree by the version 1 writer.
func TestTree_RestoresVersion1(t *testing.T) {
	raw, err := os.ReadFile("testdata/rich-tree.v1.snapshot")
	require.NoError(t, err)
	require.Equal(t, byte(1), raw[len("ZKTREE")])
	restored, err := tree.Restore(bytes.NewReader(raw))
	require.NoError(t, err)
	mustCheckAtEnd(t, restored)
	mustSameTree(t, newRichTree(t), restored)
}

// TestTree_RestoresChildrenOfUnevenNames checks children whose names grow
// longer than the first one restored, and a parent that lost most of its
// children: a restored set's name array is sized from the first name and
// grows as a live one does.
func TestTree_RestoresChildrenOfUnevenNames(t *testing.T) {
	tr := newTree(t)
	zxid := int64(1)
	mustCreatePath(t, tr, zxid, "/p", nil)
	for i := range 300 {
		zxid++
		mustCreatePath(t, tr, zxid, fmt.Sprintf("/p/%s", strings.Repeat("n", 1+i%40)+fmt.Sprint(i)), []byte{byte(i)})
	}
	zxid++
	mustCreatePath(t, tr, zxid, "/q", nil)
	for i := range 200 {
		zxid++
		mustCreatePath(t, tr, zxid, fmt.Sprintf("/q/%d", i), nil)
	}
	for i := range 199 {
		zxid++
		require.Equal(t, wire.CodeOK, tr.Delete(newCtx(zxid), fmt.Sprintf("/q/%d", i), -1))
	}
	restored, _ := mustRoundTrip(t, tr)
	mustSameTree(t, tr, restored)
	zxid++
	for _, x := range []*tree.Tree{tr, restored} {
		mustCreatePath(t, x, zxid, "/p/"+strings.Repeat("m", 200), nil)
	}
	mustSameTree(t, tr, restored)
}
