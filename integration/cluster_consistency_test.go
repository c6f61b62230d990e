package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterWriteVisibleAfterSync writes through each member and reads
// through each other one after a sync: a sync brings the reading member up
// to date with everything committed before it (PROTOCOL.md 5.14). Then a
// session on a follower reads its own writes at once, with no sync (5.16).
func TestClusterWriteVisibleAfterSync(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.Leader()
	conns, _ := mustConnectEach(t, c, 3, 5*time.Second)
	mustCreate(t, conns[leader], "/vis", nil)
	role := func(i int) string {
		if i == leader {
			return fmt.Sprintf("leader %d", i)
		}
		return fmt.Sprintf("follower %d", i)
	}
	for from := range 3 {
		for to := range 3 {
			if from == to {
				continue
			}
			t.Run(role(from)+" to "+role(to), func(t *testing.T) {
				w, r := conns[from], conns[to]
				path := fmt.Sprintf("/vis/%d-%d", from, to)
				_, err := w.Create(path, []byte("v1"), 0, openACL)
				require.NoError(t, err)
				got, err := r.Sync(path)
				require.NoError(t, err)
				assert.Equal(t, path, got, "sync answers with its path")
				data, st, err := r.Get(path)
				require.NoError(t, err, "the write is visible after sync")
				assert.Equal(t, "v1", string(data))

				// An update too, and the Stat agrees on both members.
				wst, err := w.Set(path, []byte("v2"), st.Version)
				require.NoError(t, err)
				_, err = r.Sync(path)
				require.NoError(t, err)
				data, rst, err := r.Get(path)
				require.NoError(t, err)
				assert.Equal(t, "v2", string(data))
				assert.Equal(t, *wst, *rst, "the writer's Stat and the reader's")
			})
		}
	}

	t.Run("read your writes on a follower", func(t *testing.T) {
		f := conns[(leader+1)%3]
		path := "/vis/ryw"
		for k := range 20 {
			val := []byte(strconv.Itoa(k))
			var err error
			if k == 0 {
				_, err = f.Create(path, val, 0, openACL)
			} else {
				_, err = f.Set(path, val, int32(k-1))
			}
			require.NoError(t, err)
			data, st, err := f.Get(path)
			require.NoError(t, err)
			require.Equal(t, string(val), string(data), "write %d", k)
			require.Equal(t, int32(k), st.Version)
			kids, _, err := f.Children("/vis")
			require.NoError(t, err)
			require.Contains(t, kids, "ryw")
		}
		require.NoError(t, f.Delete(path, 19))
		ok, _, err := f.Exists(path)
		require.NoError(t, err)
		assert.False(t, ok, "the delete is seen at once")
	})
}

// TestClusterSequentialNamesUnique has sessions on every member create
// ephemeral and persistent sequential children of one parent at once: the
// leader's log orders them, so the suffixes (from the parent's cversion)
// are unique and have no gap, whichever member took the request.
func TestClusterSequentialNamesUnique(t *testing.T) {
	const (
		sessions = 6  // two per member
		each     = 10 // of each kind per session
		total    = sessions * 2 * each
	)
	c := servertest.NewCluster(t, 3)
	setup := mustConnect(t, c.Addr(c.Leader()))
	mustCreate(t, setup, "/seq", nil)

	type created struct {
		name    string
		owner   int64 // the creating session, for ephemerals
		errText string
	}
	var (
		mu   sync.Mutex
		all  []created
		wg   sync.WaitGroup
		conn = make([]*zk.Conn, sessions)
	)
	for s := range sessions {
		conn[s], _ = mustConnectInOrder(t, []string{c.Addr(s % 3)}, 5*time.Second)
	}
	for s := range sessions {
		for _, flag := range []int32{zk.FlagEphemeral | zk.FlagSequence, zk.FlagSequence} {
			wg.Add(1)
			go func() { // each session runs both kinds at once
				defer wg.Done()
				prefix, owner := "/seq/p-", int64(0)
				if flag&zk.FlagEphemeral != 0 {
					prefix, owner = "/seq/e-", conn[s].SessionID()
				}
				for range each {
					name, err := conn[s].Create(prefix, []byte(prefix), flag, openACL)
					cr := created{name: name, owner: owner}
					if err != nil {
						cr.errText = err.Error()
					}
					mu.Lock()
					all = append(all, cr)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()

	names := make(map[string]created)
	var suffixes []int
	for _, cr := range all {
		require.Empty(t, cr.errText, "a create failed")
		_, dup := names[cr.name]
		require.False(t, dup, "%s created twice", cr.name)
		names[cr.name] = cr
		n, err := strconv.Atoi(cr.name[len(cr.name)-10:])
		require.NoError(t, err, "suffix of %s", cr.name)
		suffixes = append(suffixes, n)
	}
	slices.Sort(suffixes)
	want := make([]int, total)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, suffixes, "suffixes are exactly 0..%d", total-1)

	// Every member has the same children, each with the right owner.
	for i := range 3 {
		r := conn[i] // conn[i] is on member i
		kids := mustSyncedChildren(t, r, "/seq")
		assert.Len(t, kids, total, "member %d", i)
		for _, k := range kids {
			cr, ok := names["/seq/"+k]
			if !assert.True(t, ok, "member %d has %s, which no one created", i, k) {
				continue
			}
			data, st, err := r.Get(cr.name)
			require.NoError(t, err)
			assert.Equal(t, cr.owner, st.EphemeralOwner, "owner of %s on member %d", k, i)
			assert.True(t, strings.HasPrefix(cr.name, string(data)), "data of %s", k)
		}
		st := mustStat(t, r, "/seq")
		assert.Equal(t, int32(total), st.Cversion, "member %d", i)
		assert.Equal(t, int32(total), st.NumChildren, "member %d", i)
	}
}
