package tree_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// newChurnTree is newRichTree with a parent of 3 chunks of children, some
// ephemeral, so that a snapshot is written in several holds of the lock.
func newChurnTree(t testing.TB) *tree.Tree {
	t.Helper()
	tr := newRichTree(t)
	mustCreatePath(t, tr, 100, "/big", []byte("big"))
	for i := range 3 * tree.SnapshotChunk {
		c := newCtx(int64(101 + i))
		a := newCreate(fmt.Sprintf("/big/c%05d", i), wire.FlagPersistent)
		if i%7 == 0 {
			a.Flags = wire.FlagEphemeral
			c.Session = sessB
		}
		a.Data = []byte(a.Path)
		mustCreate(t, tr, c, a)
	}
	return tr
}

// churner changes a tree in every way a snapshot must not see: data, ACLs
// (old lists freed, their slots given to new ones), deletes of nodes
// visited and not, creates that grow child tables, leaves that become
// parents, sequential nodes, a closed session's ephemerals, a new
// session's, failed multis undone, the config node.
type churner struct {
	t    testing.TB
	tr   *tree.Tree
	rng  *rand.Rand
	zxid int64
	made []string // nodes the churner created
}

func newChurner(t testing.TB, tr *tree.Tree, seed uint64) *churner {
	return &churner{t: t, tr: tr, rng: rand.New(rand.NewPCG(seed, 1)), zxid: 1 << 20}
}

func (c *churner) ctx(ids ...wire.Id) *tree.Context {
	c.zxid++
	return newCtx(c.zxid, ids...)
}

func (c *churner) big() string {
	return fmt.Sprintf("/big/c%05d", c.rng.IntN(3*tree.SnapshotChunk))
}

// step makes one round of changes; the codes of changes that find a node
// gone or taken do not matter.
func (c *churner) step() {
	tr := c.tr
	for i := range 20 {
		// Data of every size, a chunk of its own now and then, so that the
		// data arena compacts its chunks while the snapshot reads them.
		data := []byte("changed")
		switch i % 10 {
		case 0:
			data = bytes.Repeat([]byte{byte(c.zxid)}, 1+c.rng.IntN(2000))
		case 1:
			if c.rng.IntN(10) == 0 {
				data = bytes.Repeat([]byte{byte(c.zxid)}, 70_000)
			}
		}
		tr.SetData(c.ctx(), c.big(), data, -1)
	}
	// Nodes made one after the other have their data side by side: new
	// data for a run of them leaves chunks mostly dead, which the arena
	// compacts (copies out and drops) while the snapshot still holds the
	// old data.
	from := c.rng.IntN(2 * tree.SnapshotChunk)
	for i := range 400 {
		tr.SetData(c.ctx(), fmt.Sprintf("/big/c%05d", from+i), []byte("rewritten"), -1)
	}
	for range 5 {
		tr.Delete(c.ctx(), c.big(), -1)
	}
	for range 30 {
		p, _, code := tr.Create(c.ctx(), newCreate("/big/new-", wire.FlagPersistentSequential))
		if code == wire.CodeOK {
			c.made = append(c.made, p)
		}
	}
	// A leaf becomes a parent.
	tr.Create(c.ctx(), newCreate(c.big()+"/kid", wire.FlagPersistent))
	// A custom ACL set, then dropped by a delete, then another takes its slot.
	acl := []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: "world", ID: "anyone"}}, {Perms: wire.PermRead, ID: bobID}}
	acl[1].Perms = int32(1 + c.rng.IntN(31))
	tr.SetACL(c.ctx(superID), c.big(), acl, -1)
	if len(c.made) > 0 {
		p := c.made[c.rng.IntN(len(c.made))]
		tr.SetACL(c.ctx(superID), p, acl, -1)
		tr.Delete(c.ctx(), p, -1)
	}
	// A failed multi: its creates, deletes and sets are undone.
	victim := c.big()
	tr.Multi(c.ctx(), []wire.MultiOp{
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: "/big/undone", ACL: wire.OpenACLUnsafe}},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/app", Data: []byte("undone"), Version: -1}},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: victim, Version: -1}},
		{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: "/big", Version: 12345}},
	})
	// Sessions come and go.
	if c.rng.IntN(4) == 0 {
		tr.CloseSession(c.ctx(), sessB)
	}
	ec := c.ctx()
	ec.Session = sessA + c.zxid
	tr.Create(ec, newCreate("/big/eph-", wire.FlagEphemeralSequential))
	tr.SetConfig([]byte(fmt.Sprintf("server.1=config at %d", c.zxid)), c.zxid)
}

// TestSnapshot_WrittenWhileTheTreeChanges: a snapshot written while the
// tree changes between every chunk it reads gives the same bytes as one
// written before any change, and the tree keeps nothing for it once it
// is closed.
func TestSnapshot_WrittenWhileTheTreeChanges(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			var mu sync.RWMutex
			tr := newChurnTree(t)
			before := tr.Digest()
			snap := tr.Snapshot(&mu)
			var want bytes.Buffer
			_, err := snap.WriteTo(&want)
			require.NoError(t, err)

			churn := newChurner(t, tr, seed)
			pauses := 0
			tree.SetSnapshotPaused(t, func() {
				mu.Lock()
				defer mu.Unlock()
				churn.step()
				pauses++
			})
			var got bytes.Buffer
			_, err = snap.WriteTo(&got)
			require.NoError(t, err)
			require.GreaterOrEqual(t, pauses, 4, "the tree changed while the snapshot was read")
			require.NotEqual(t, before, tr.Digest())
			assert.True(t, bytes.Equal(want.Bytes(), got.Bytes()), "the snapshot changed with the tree")
			assert.Positive(t, snap.Preserved())

			restored, err := tree.Restore(&got)
			require.NoError(t, err)
			mustCheckAtEnd(t, restored)
			assert.Equal(t, before, restored.Digest())

			snap.Close()
			assert.Equal(t, -1, snap.Preserved())
			assert.Zero(t, tr.OpenSnapshots())
			_, err = snap.WriteTo(&got)
			assert.ErrorIs(t, err, tree.ErrSnapshotClosed)
		})
	}
}

// TestSnapshot_ConcurrentWriters: two snapshots, opened at different
// times and written at once while another goroutine changes the tree, each
// give the tree as it was when it was opened.
func TestSnapshot_ConcurrentWriters(t *testing.T) {
	var mu sync.RWMutex
	tr := newChurnTree(t)
	churn := newChurner(t, tr, 7)
	type opened struct {
		snap *tree.Snapshot
		want []byte
	}
	open := func() opened {
		mu.Lock()
		defer mu.Unlock()
		// The tree as it is now, written while nothing changes.
		still := tr.Snapshot(nil)
		var b bytes.Buffer
		_, err := still.WriteTo(&b)
		require.NoError(t, err)
		still.Close()
		return opened{tr.Snapshot(&mu), b.Bytes()}
	}
	first := open()
	for range 3 {
		mu.Lock()
		churn.step()
		mu.Unlock()
	}
	second := open()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			churn.step()
			mu.Unlock()
		}
	})
	var writers sync.WaitGroup
	for _, o := range []opened{first, second, first} {
		writers.Go(func() {
			var b bytes.Buffer
			_, err := o.snap.WriteTo(&b)
			assert.NoError(t, err)
			assert.True(t, bytes.Equal(o.want, b.Bytes()), "a snapshot changed with the tree")
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	first.snap.Close()
	second.snap.Close()
	assert.Zero(t, tr.OpenSnapshots())
}

// TestSnapshot_CloseWhileWriting: Close during a WriteTo lets it finish,
// and ends the snapshot when it has.
func TestSnapshot_CloseWhileWriting(t *testing.T) {
	var mu sync.RWMutex
	tr := newChurnTree(t)
	mu.Lock()
	snap := tr.Snapshot(&mu)
	mu.Unlock()
	closed := false
	tree.SetSnapshotPaused(t, func() {
		if !closed {
			closed = true
			snap.Close()
			assert.Equal(t, 1, tr.OpenSnapshots(), "the write under way keeps the snapshot open")
			_, err := snap.WriteTo(new(bytes.Buffer))
			assert.ErrorIs(t, err, tree.ErrSnapshotClosed, "a new write of a closing snapshot")
		}
	})
	var b bytes.Buffer
	_, err := snap.WriteTo(&b)
	require.NoError(t, err)
	require.True(t, closed)
	assert.Zero(t, tr.OpenSnapshots())
	restored, err := tree.Restore(&b)
	require.NoError(t, err)
	mustSameTree(t, tr, restored)
}
