package tree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// TestDataArena_ChurnKeepsDataAndBoundsTheArena sets data of every size,
// from none to a chunk of its own, over and over on a few hundred nodes,
// deleting and creating some, and checks after each round that every node
// reads what was last set, that every slice handed out earlier still reads
// what it read then (items are never overwritten, compaction copies), and
// that the arena holds at most about twice the live bytes.
func TestDataArena_ChurnKeepsDataAndBoundsTheArena(t *testing.T) {
	tr := newTestTree(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const nodes = 300
	want := make(map[string][]byte)
	type handed struct {
		got, was []byte
	}
	var out []handed
	zxid := int64(1)
	for i := range nodes {
		mustCreateNode(t, tr, zxid, fmt.Sprintf("/n%d", i), 0)
		zxid++
		want[fmt.Sprintf("/n%d", i)] = nil
	}
	size := func() int {
		switch rng.IntN(20) {
		case 0:
			return dataAlone + rng.IntN(dataAlone) // a chunk of its own
		case 1:
			return dataAlone - 1
		case 2:
			return 0
		}
		return rng.IntN(600)
	}
	for round := range 40 {
		for range 500 {
			p := fmt.Sprintf("/n%d", rng.IntN(nodes))
			if _, ok := want[p]; !ok {
				mustCreateNode(t, tr, zxid, p, 0)
				zxid++
				want[p] = nil
				continue
			}
			if rng.IntN(10) == 0 {
				require.Equal(t, wire.CodeOK, tr.Delete(newTestCtx(zxid), p, -1))
				zxid++
				delete(want, p)
				continue
			}
			data := bytes.Repeat([]byte{byte(rng.IntN(256))}, size())
			if len(data) > 0 {
				data[len(data)-1] = byte(round)
			}
			_, code := tr.SetData(newTestCtx(zxid), p, data, -1)
			require.Equal(t, wire.CodeOK, code)
			zxid++
			want[p] = data
			if rng.IntN(50) == 0 {
				got, _, _ := tr.Get(p, nil)
				out = append(out, handed{got: got, was: bytes.Clone(got)})
			}
		}
		live := 0
		for p, data := range want {
			got, st, code := tr.Get(p, nil)
			require.Equal(t, wire.CodeOK, code, p)
			require.Equal(t, data, got, "data of %s in round %d", p, round)
			require.Equal(t, int32(len(data)), st.DataLength)
			if len(data) > 0 {
				live += dataHeader + len(data)
			}
		}
		for i, h := range out {
			require.Equal(t, h.was, h.got, "slice %d handed out changed", i)
		}
		require.NoError(t, tr.Check())
		used := tr.arena.arenaBytes()
		assert.LessOrEqual(t, used, 2*live+2*dataChunkMax, "round %d: arena holds %d bytes for %d live", round, used, live)
	}
	assert.NotEmpty(t, tr.arena.chunks.free, "chunks were compacted and dropped")
}

// TestDataArena_NilAndEmptyData checks that no data and empty data stay
// apart, and take no room in the arena.
func TestDataArena_NilAndEmptyData(t *testing.T) {
	tr := newTestTree(t)
	for i, data := range [][]byte{nil, {}, []byte("x"), nil, {}} {
		p := fmt.Sprintf("/d%d", i)
		_, _, code := tr.Create(newTestCtx(int64(i+1)), CreateArgs{Op: wire.OpCreate, Path: p, Data: data, ACL: wire.OpenACLUnsafe, TTL: -1})
		require.Equal(t, wire.CodeOK, code)
		got, _, _ := tr.Get(p, nil)
		assert.Equal(t, data == nil, got == nil, "%s: nil data", p)
		assert.Equal(t, string(data), string(got))
	}
	used := tr.arena.arenaBytes()
	assert.Equal(t, dataHeader+1, used, "only the one byte of data is in the arena")
}

// TestNodeTable_ReusesIDsAfterAMulti checks that a multi's removed nodes
// are held until it ends: a failed multi puts them back as they were, a
// successful one releases them for the next creates.
func TestNodeTable_ReusesIDsAfterAMulti(t *testing.T) {
	tr := newTestTree(t)
	mustCreateNode(t, tr, 1, "/a", 0)
	_, code := tr.SetData(newTestCtx(2), "/a", []byte("data of a"), -1)
	require.Equal(t, wire.CodeOK, code)
	a, _ := tr.findID("/a")

	results := tr.Multi(newTestCtx(3), []wire.MultiOp{
		{Req: &wire.DeleteRequest{Path: "/a", Version: -1}},
		{Req: &wire.CreateRequest{Path: "/b", Data: []byte("b"), ACL: wire.OpenACLUnsafe}},
		{Req: &wire.CheckVersionRequest{Path: "/b", Version: 7}},
	})
	require.Equal(t, wire.CodeBadVersion, results[2].Err)
	id, _ := tr.findID("/a")
	assert.Equal(t, a, id, "the failed multi put /a back as it was")
	got, _, _ := tr.Get("/a", nil)
	assert.Equal(t, "data of a", string(got))
	require.NoError(t, tr.Check())

	results = tr.Multi(newTestCtx(4), []wire.MultiOp{
		{Req: &wire.DeleteRequest{Path: "/a", Version: -1}},
		{Req: &wire.CreateRequest{Path: "/b", Data: []byte("b"), ACL: wire.OpenACLUnsafe}},
	})
	require.Equal(t, wire.OpDelete, results[0].Type)
	b, _ := tr.findID("/b")
	assert.NotEqual(t, a, b, "/a's id was held while the multi ran")
	require.NoError(t, tr.Check())
	mustCreateNode(t, tr, 5, "/c", 0)
	c, _ := tr.findID("/c")
	assert.Equal(t, a, c, "released when the multi ended")
}

// TestJavaSet_NamesRepacked removes and adds names until the set packs its
// names anew, and checks that every name is still found, and that names
// handed out before read as they did.
func TestJavaSet_NamesRepacked(t *testing.T) {
	s := &javaSet[member]{init: childrenInitBits}
	var handedOut []string
	for i := range 2000 {
		s.add(fmt.Sprintf("name-%06d", i), member{})
	}
	for name := range s.all {
		handedOut = append(handedOut, name)
	}
	before := &s.names[0]
	for i := range 1900 {
		s.remove(fmt.Sprintf("name-%06d", i))
	}
	assert.NotSame(t, before, &s.names[0], "packed anew")
	assert.Less(t, len(s.names), 2*100*len("name-000000")+256)
	for i := range 3000 {
		name := fmt.Sprintf("name-%06d", i)
		assert.Equal(t, i >= 1900 && i < 2000, s.has(name), name)
	}
	for i, name := range handedOut {
		assert.Regexp(t, `^name-\d{6}$`, name, "name %d handed out", i)
	}
	assert.Equal(t, checkCounts(s), s.counts)
}
