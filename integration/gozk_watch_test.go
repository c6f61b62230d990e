package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestWatchEvents sets each kind of watch on one session and makes each
// kind of change from another, and checks the event delivered.
func TestWatchEvents(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	w, _ := mustConnectRecorded(t, addr, 5*time.Second)
	x, _ := mustConnectRecorded(t, addr, 5*time.Second)

	getW := func(p string) (<-chan zk.Event, error) { _, _, ch, err := w.GetW(p); return ch, err }
	existsW := func(p string) (<-chan zk.Event, error) { _, _, ch, err := w.ExistsW(p); return ch, err }
	childrenW := func(p string) (<-chan zk.Event, error) { _, _, ch, err := w.ChildrenW(p); return ch, err }

	tests := []struct {
		name     string
		setup    []string // persistent nodes to create first, in order
		watch    func(p string) (<-chan zk.Event, error)
		watched  string
		change   func(t *testing.T)
		wantType zk.EventType
	}{
		{"getData watch, setData", []string{"/a"}, getW, "/a", func(t *testing.T) {
			_, err := x.Set("/a", []byte("new"), -1)
			require.NoError(t, err)
		}, zk.EventNodeDataChanged},
		{"getData watch, delete", []string{"/b"}, getW, "/b", func(t *testing.T) {
			require.NoError(t, x.Delete("/b", -1))
		}, zk.EventNodeDeleted},
		{"getData watch, setData in a multi", []string{"/bm"}, getW, "/bm", func(t *testing.T) {
			_, err := x.Multi(&zk.SetDataRequest{Path: "/bm", Data: []byte("m"), Version: -1})
			require.NoError(t, err)
		}, zk.EventNodeDataChanged},
		{"exists watch on an existing node, setData", []string{"/c"}, existsW, "/c", func(t *testing.T) {
			_, err := x.Set("/c", nil, -1)
			require.NoError(t, err)
		}, zk.EventNodeDataChanged},
		{"exists watch on an existing node, delete", []string{"/d"}, existsW, "/d", func(t *testing.T) {
			require.NoError(t, x.Delete("/d", -1))
		}, zk.EventNodeDeleted},
		{"exists watch on a missing node, create", nil, existsW, "/e", func(t *testing.T) {
			mustCreate(t, x, "/e", nil)
		}, zk.EventNodeCreated},
		{"exists watch on a missing node, ephemeral create", nil, existsW, "/ee", func(t *testing.T) {
			_, err := x.Create("/ee", nil, zk.FlagEphemeral, openACL)
			require.NoError(t, err)
		}, zk.EventNodeCreated},
		{"exists watch on a missing node, sequential create", []string{"/seq"}, existsW, "/seq/n-0000000000",
			func(t *testing.T) {
				_, err := x.Create("/seq/n-", nil, zk.FlagSequence, openACL)
				require.NoError(t, err)
			}, zk.EventNodeCreated},
		{"child watch, child created", []string{"/f"}, childrenW, "/f", func(t *testing.T) {
			mustCreate(t, x, "/f/kid", nil)
		}, zk.EventNodeChildrenChanged},
		{"child watch, child deleted", []string{"/g", "/g/kid"}, childrenW, "/g", func(t *testing.T) {
			require.NoError(t, x.Delete("/g/kid", -1))
		}, zk.EventNodeChildrenChanged},
		{"child watch, ephemeral child gone with its session", []string{"/h"}, childrenW, "/h", nil,
			zk.EventNodeChildrenChanged},
		{"child watch, the node itself deleted", []string{"/i"}, childrenW, "/i", func(t *testing.T) {
			require.NoError(t, x.Delete("/i", -1))
		}, zk.EventNodeDeleted},
		{"child watch on the root, top-level create", nil, childrenW, "/", func(t *testing.T) {
			mustCreate(t, x, "/top", nil)
		}, zk.EventNodeChildrenChanged},
		{"child watch, setData on the node does not fire, a child create does", []string{"/j"}, childrenW, "/j",
			func(t *testing.T) {
				_, err := x.Set("/j", []byte("x"), -1)
				require.NoError(t, err)
				mustCreate(t, x, "/j/kid", nil)
			}, zk.EventNodeChildrenChanged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.setup {
				mustCreate(t, x, p, nil)
			}
			change := tc.change
			if change == nil { // an ephemeral child whose session closes
				y, _ := mustConnectRecorded(t, addr, 5*time.Second)
				_, err := y.Create(tc.watched+"/eph", nil, zk.FlagEphemeral, openACL)
				require.NoError(t, err)
				change = func(*testing.T) { y.Close() }
			}
			ch, err := tc.watch(tc.watched)
			require.NoError(t, err)
			assertNoEvent(t, ch, "before the change")
			change(t)
			ev := waitEvent(t, ch)
			assert.Equal(t, zk.Event{Type: tc.wantType, State: zk.StateSyncConnected, Path: tc.watched}, ev)
		})
	}
}

// TestWatchDelivery checks, through the notifications a session receives on
// the wire (recorded in order), that watches are one-shot, that several
// registrations of one path collapse into one notification, that a delete
// notifies a connection once, and that failed reads and setACL set or fire
// nothing. A sentinel event (NodeCreated on a fresh path, after the changes
// under test) marks the end: any notification for the changes under test
// arrives before it.
func TestWatchDelivery(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	x, _ := mustConnectRecorded(t, addr, 5*time.Second)

	tests := []struct {
		name    string
		arm     func(t *testing.T, w *zk.Conn) []<-chan zk.Event
		changes func(t *testing.T)
		want    []zk.Event // notifications before the sentinel
	}{
		{"data watch is one-shot", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/once", nil)
			_, _, ch, err := w.GetW("/once")
			require.NoError(t, err)
			return []<-chan zk.Event{ch}
		}, func(t *testing.T) {
			for i := 0; i < 3; i++ {
				_, err := x.Set("/once", []byte{byte(i)}, -1)
				require.NoError(t, err)
			}
		}, []zk.Event{{Type: zk.EventNodeDataChanged, Path: "/once"}}},
		{"exists watch is one-shot", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			_, _, ch, err := w.ExistsW("/once-e")
			require.NoError(t, err)
			return []<-chan zk.Event{ch}
		}, func(t *testing.T) {
			mustCreate(t, x, "/once-e", nil)
			_, err := x.Set("/once-e", nil, -1)
			require.NoError(t, err)
			require.NoError(t, x.Delete("/once-e", -1))
		}, []zk.Event{{Type: zk.EventNodeCreated, Path: "/once-e"}}},
		{"child watch is one-shot", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/once-c", nil)
			_, _, ch, err := w.ChildrenW("/once-c")
			require.NoError(t, err)
			return []<-chan zk.Event{ch}
		}, func(t *testing.T) {
			mustCreate(t, x, "/once-c/a", nil)
			mustCreate(t, x, "/once-c/b", nil)
			require.NoError(t, x.Delete("/once-c/a", -1))
		}, []zk.Event{{Type: zk.EventNodeChildrenChanged, Path: "/once-c"}}},
		{"same-table registrations collapse", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/dup", nil)
			_, _, a, err := w.GetW("/dup")
			require.NoError(t, err)
			_, _, b, err := w.GetW("/dup")
			require.NoError(t, err)
			_, _, c, err := w.ExistsW("/dup")
			require.NoError(t, err)
			return []<-chan zk.Event{a, b, c}
		}, func(t *testing.T) {
			_, err := x.Set("/dup", nil, -1)
			require.NoError(t, err)
		}, []zk.Event{{Type: zk.EventNodeDataChanged, Path: "/dup"}}},
		{"delete notifies a connection once", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/del", nil)
			_, _, a, err := w.GetW("/del")
			require.NoError(t, err)
			_, _, b, err := w.ChildrenW("/del")
			require.NoError(t, err)
			return []<-chan zk.Event{a, b}
		}, func(t *testing.T) {
			require.NoError(t, x.Delete("/del", -1))
		}, []zk.Event{{Type: zk.EventNodeDeleted, Path: "/del"}}},
		{"delete fires the child watch of the parent", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/par", nil)
			mustCreate(t, x, "/par/kid", nil)
			_, _, a, err := w.GetW("/par/kid")
			require.NoError(t, err)
			_, _, b, err := w.ChildrenW("/par")
			require.NoError(t, err)
			return []<-chan zk.Event{a, b}
		}, func(t *testing.T) {
			require.NoError(t, x.Delete("/par/kid", -1))
		}, []zk.Event{{Type: zk.EventNodeDeleted, Path: "/par/kid"}, {Type: zk.EventNodeChildrenChanged, Path: "/par"}}},
		{"failed getData and getChildren set no watch", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			_, _, _, err := w.GetW("/later")
			require.ErrorIs(t, err, zk.ErrNoNode)
			_, _, _, err = w.ChildrenW("/later")
			require.ErrorIs(t, err, zk.ErrNoNode)
			return nil
		}, func(t *testing.T) {
			mustCreate(t, x, "/later", nil)
			mustCreate(t, x, "/later/kid", nil)
			_, err := x.Set("/later", nil, -1)
			require.NoError(t, err)
		}, nil},
		{"setACL fires no watch", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/acl", nil)
			_, _, ch, err := w.GetW("/acl")
			require.NoError(t, err)
			return []<-chan zk.Event{ch}
		}, func(t *testing.T) {
			_, err := x.SetACL("/acl", zk.WorldACL(zk.PermAll), -1)
			require.NoError(t, err)
		}, nil},
		{"watches of another connection are not fired", func(t *testing.T, w *zk.Conn) []<-chan zk.Event {
			mustCreate(t, x, "/xs", nil)
			_, _, _, err := x.GetW("/xs")
			require.NoError(t, err)
			return nil
		}, func(t *testing.T) {
			_, err := x.Set("/xs", nil, -1)
			require.NoError(t, err)
		}, nil},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, rec := mustConnectRecorded(t, addr, 5*time.Second)
			chs := tc.arm(t, w)
			tc.changes(t)
			sentinel := fmt.Sprintf("/sentinel-%d", i)
			_, _, _, err := w.ExistsW(sentinel)
			require.NoError(t, err)
			mustCreate(t, x, sentinel, nil)

			var got []zk.Event
			for {
				ev := rec.nextNode(t)
				if ev.Path == sentinel {
					assert.Equal(t, zk.EventNodeCreated, ev.Type)
					break
				}
				got = append(got, zk.Event{Type: ev.Type, Path: ev.Path})
			}
			assert.Equal(t, tc.want, got, "notifications received")
			for j, ch := range chs {
				if len(tc.want) == 0 {
					assertNoEvent(t, ch, fmt.Sprintf("watch %d", j))
					continue
				}
				ev := eventNow(t, ch, fmt.Sprintf("watch %d", j))
				assert.Contains(t, tc.want, zk.Event{Type: ev.Type, Path: ev.Path})
			}
		})
	}
}

// TestWatchBeforeData checks ZooKeeper's ordering guarantee: a client that
// watches a node sees the notification of a change before it sees the
// change in any read. The event is therefore already on the watch channel
// when the read that returns the new data returns.
func TestWatchBeforeData(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	w, _ := mustConnectRecorded(t, addr, 5*time.Second)
	x, _ := mustConnectRecorded(t, addr, 5*time.Second)
	mustCreate(t, x, "/x", []byte("0"))
	mustCreate(t, x, "/kids", nil)

	for i := 1; i <= 20; i++ {
		_, _, dataCh, err := w.GetW("/x")
		require.NoError(t, err)
		_, _, kidsCh, err := w.ChildrenW("/kids")
		require.NoError(t, err)
		_, _, existCh, err := w.ExistsW(fmt.Sprintf("/new-%d", i))
		require.NoError(t, err)

		want := fmt.Sprint(i)
		_, err = x.Set("/x", []byte(want), -1)
		require.NoError(t, err)
		mustCreate(t, x, fmt.Sprintf("/kids/k%d", i), nil)
		mustCreate(t, x, fmt.Sprintf("/new-%d", i), nil)

		data, _, err := w.Get("/x")
		require.NoError(t, err)
		require.Equal(t, want, string(data))
		assert.Equal(t, zk.EventNodeDataChanged, eventNow(t, dataCh, "data watch").Type)

		kids, _, err := w.Children("/kids")
		require.NoError(t, err)
		require.Len(t, kids, i)
		assert.Equal(t, zk.EventNodeChildrenChanged, eventNow(t, kidsCh, "child watch").Type)

		ok, _, err := w.Exists(fmt.Sprintf("/new-%d", i))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, zk.EventNodeCreated, eventNow(t, existCh, "exists watch").Type)
	}
}

// TestWatchBeforeOwnReply checks that a session's own write fires its own
// watches before the write's reply arrives.
func TestWatchBeforeOwnReply(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	mustCreate(t, c, "/own", nil)

	_, _, ch, err := c.GetW("/own")
	require.NoError(t, err)
	_, err = c.Set("/own", []byte("x"), -1)
	require.NoError(t, err)
	assert.Equal(t, zk.EventNodeDataChanged, eventNow(t, ch, "data watch").Type)

	_, _, ch, err = c.ChildrenW("/own")
	require.NoError(t, err)
	mustCreate(t, c, "/own/kid", nil)
	assert.Equal(t, zk.EventNodeChildrenChanged, eventNow(t, ch, "child watch").Type)

	_, _, ch, err = c.ExistsW("/own/kid")
	require.NoError(t, err)
	_, _, kids, err := c.ChildrenW("/own")
	require.NoError(t, err)
	require.NoError(t, c.Delete("/own/kid", -1))
	assert.Equal(t, zk.EventNodeDeleted, eventNow(t, ch, "exists watch").Type)
	assert.Equal(t, zk.EventNodeChildrenChanged, eventNow(t, kids, "child watch").Type)
}

// TestWatchesSurviveReconnect cuts a client's connection (through a proxy)
// and checks that go-zookeeper's setWatches restores its watches on the new
// connection, and that changes made while it was disconnected are
// delivered when it reconnects.
func TestWatchesSurviveReconnect(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	px := newProxy(t, addr)
	w, rec := mustConnectRecorded(t, px.addr(), 10*time.Second)
	x, _ := mustConnectRecorded(t, addr, 5*time.Second)
	id := w.SessionID()

	for _, p := range []string{"/data", "/parent", "/data2", "/parent2", "/gone", "/gone-kids", "/still"} {
		mustCreate(t, x, p, nil)
	}

	t.Run("watches restored on the new connection", func(t *testing.T) {
		_, _, dataCh, err := w.GetW("/data")
		require.NoError(t, err)
		_, _, existCh, err := w.ExistsW("/missing")
		require.NoError(t, err)
		_, _, kidsCh, err := w.ChildrenW("/parent")
		require.NoError(t, err)

		px.sever()
		rec.waitState(t, zk.StateDisconnected)
		rec.waitState(t, zk.StateHasSession)
		require.Equal(t, id, w.SessionID(), "the session was resumed")
		require.Equal(t, 2, px.linkCount())

		_, err = x.Set("/data", []byte("changed"), -1)
		require.NoError(t, err)
		mustCreate(t, x, "/missing", nil)
		mustCreate(t, x, "/parent/kid", nil)
		assert.Equal(t, zk.Event{Type: zk.EventNodeDataChanged, State: zk.StateSyncConnected, Path: "/data"}, waitEvent(t, dataCh))
		assert.Equal(t, zk.Event{Type: zk.EventNodeCreated, State: zk.StateSyncConnected, Path: "/missing"}, waitEvent(t, existCh))
		assert.Equal(t, zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/parent"}, waitEvent(t, kidsCh))
	})

	t.Run("changes made while disconnected are delivered", func(t *testing.T) {
		type watch struct {
			ch   <-chan zk.Event
			want zk.Event
		}
		var watches []watch
		add := func(ch <-chan zk.Event, err error, typ zk.EventType, path string) {
			require.NoError(t, err)
			watches = append(watches, watch{ch, zk.Event{Type: typ, State: zk.StateSyncConnected, Path: path}})
		}
		_, _, ch, err := w.GetW("/data2")
		add(ch, err, zk.EventNodeDataChanged, "/data2")
		_, _, ch, err = w.ExistsW("/missing2")
		add(ch, err, zk.EventNodeCreated, "/missing2")
		_, _, ch, err = w.ChildrenW("/parent2")
		add(ch, err, zk.EventNodeChildrenChanged, "/parent2")
		_, _, ch, err = w.GetW("/gone")
		add(ch, err, zk.EventNodeDeleted, "/gone")
		_, _, ch, err = w.ChildrenW("/gone-kids")
		add(ch, err, zk.EventNodeDeleted, "/gone-kids")
		_, _, stillCh, err := w.GetW("/still")
		require.NoError(t, err)

		px.refuse(true)
		px.sever()
		rec.waitState(t, zk.StateDisconnected)

		_, err = x.Set("/data2", []byte("changed"), -1)
		require.NoError(t, err)
		mustCreate(t, x, "/missing2", nil)
		mustCreate(t, x, "/parent2/kid", nil)
		require.NoError(t, x.Delete("/gone", -1))
		require.NoError(t, x.Delete("/gone-kids", -1))
		for _, wt := range watches {
			assertNoEvent(t, wt.ch, "while disconnected")
		}

		px.refuse(false)
		rec.waitState(t, zk.StateHasSession)
		require.Equal(t, id, w.SessionID(), "the session was resumed")
		for _, wt := range watches {
			assert.Equal(t, wt.want, waitEvent(t, wt.ch))
		}

		// The unchanged node's watch was registered again, not fired:
		// nothing about /still arrives before a sentinel, and the next
		// change fires it.
		_, _, _, err = w.ExistsW("/sentinel")
		require.NoError(t, err)
		mustCreate(t, x, "/sentinel", nil)
		for {
			ev := rec.nextNode(t)
			require.NotEqual(t, "/still", ev.Path, "unexpected event %+v", ev)
			if ev.Path == "/sentinel" {
				break
			}
		}
		assertNoEvent(t, stillCh, "unchanged node")
		_, err = x.Set("/still", []byte("now"), -1)
		require.NoError(t, err)
		assert.Equal(t, zk.Event{Type: zk.EventNodeDataChanged, State: zk.StateSyncConnected, Path: "/still"}, waitEvent(t, stillCh))
	})

	t.Run("auth and many watches restored", func(t *testing.T) {
		// go-zookeeper resends its credentials on the new connection, and
		// splits watches into setWatches requests of at most 128 KiB.
		const n = 1000
		long := strings.Repeat("x", 130)
		_, err := x.Create("/private", []byte("p"), 0, zk.DigestACL(zk.PermAll, "alice", "pw"))
		require.NoError(t, err)
		require.NoError(t, w.AddAuth("digest", []byte("alice:pw")))
		_, _, err = w.Get("/private")
		require.NoError(t, err)
		mustCreate(t, x, "/many", nil)
		chs := make([]<-chan zk.Event, n)
		for i := range chs {
			ok, _, ch, err := w.ExistsW(fmt.Sprintf("/many/%s-%d", long, i))
			require.NoError(t, err)
			require.False(t, ok)
			chs[i] = ch
		}

		px.sever()
		rec.waitState(t, zk.StateDisconnected)
		rec.waitState(t, zk.StateHasSession)
		require.Equal(t, id, w.SessionID())

		// w makes no request until its watches are back: go-zookeeper
		// v1.0.4 reads its lastZxid while building setWatches requests
		// without synchronising with the receive loop that updates it on
		// every reply, which the race detector reports.
		for start := 0; start < n; start += 100 {
			ops := make([]any, 0, 100)
			for i := start; i < start+100; i++ {
				ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/many/%s-%d", long, i), Acl: openACL})
			}
			_, err := x.Multi(ops...)
			require.NoError(t, err)
		}
		for i, ch := range chs {
			ev := waitEvent(t, ch)
			require.Equal(t, zk.EventNodeCreated, ev.Type, "watch %d", i)
			require.Equal(t, fmt.Sprintf("/many/%s-%d", long, i), ev.Path)
		}
		data, _, err := w.Get("/private")
		require.NoError(t, err, "credentials resent after the reconnect")
		assert.Equal(t, "p", string(data))
	})
}

// TestConcurrentClientsOrdering runs several sessions that write and read a
// few shared nodes at once, each checking the guarantees it can see on its
// own: read-your-writes (a read after a write returns that write or a later
// one), and watch-before-data (a read that shows a change made after a watch
// was set finds the watch already fired).
func TestConcurrentClientsOrdering(t *testing.T) {
	const workers, steps, keys = 8, 150, 4
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	setup, _ := mustConnectRecorded(t, addr, 5*time.Second)
	for k := 0; k < keys; k++ {
		mustCreate(t, setup, fmt.Sprintf("/k%d", k), nil)
	}
	conns := make([]*zk.Conn, workers)
	for i := range conns {
		conns[i], _ = mustConnectRecorded(t, addr, 5*time.Second)
	}

	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- orderingWorker(c, i, steps, keys)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

func orderingWorker(c *zk.Conn, id, steps, keys int) error {
	rng := rand.New(rand.NewPCG(uint64(id), 42))
	type dataWatch struct {
		mzxid int64
		ch    <-chan zk.Event
	}
	type childWatch struct {
		pzxid int64
		ch    <-chan zk.Event
	}
	dataWatches := make(map[string]dataWatch)
	childWatches := make(map[string]childWatch)
	fired := func(ch <-chan zk.Event) bool {
		select {
		case _, ok := <-ch:
			return ok
		default:
			return false
		}
	}
	for s := 0; s < steps; s++ {
		key := fmt.Sprintf("/k%d", rng.IntN(keys))
		switch rng.IntN(5) {
		case 0: // write, then read it back
			st, err := c.Set(key, []byte(fmt.Sprintf("%d-%d", id, s)), -1)
			if err != nil {
				return fmt.Errorf("worker %d: set %s: %w", id, key, err)
			}
			_, got, err := c.Get(key)
			if err != nil {
				return fmt.Errorf("worker %d: get %s: %w", id, key, err)
			}
			if got.Mzxid < st.Mzxid {
				return fmt.Errorf("worker %d: read of %s after its write has mzxid %#x < %#x", id, key, got.Mzxid, st.Mzxid)
			}
		case 1: // child churn
			p, err := c.Create(key+"/c-", nil, zk.FlagEphemeralSequential, openACL)
			if err != nil {
				return fmt.Errorf("worker %d: create under %s: %w", id, key, err)
			}
			if rng.IntN(2) == 0 {
				if err := c.Delete(p, -1); err != nil {
					return fmt.Errorf("worker %d: delete %s: %w", id, p, err)
				}
			}
		case 2: // set a data watch unless one is pending
			if _, ok := dataWatches[key]; !ok {
				_, st, ch, err := c.GetW(key)
				if err != nil {
					return fmt.Errorf("worker %d: getW %s: %w", id, key, err)
				}
				dataWatches[key] = dataWatch{st.Mzxid, ch}
			}
		case 3: // set a child watch unless one is pending
			if _, ok := childWatches[key]; !ok {
				_, st, ch, err := c.ChildrenW(key)
				if err != nil {
					return fmt.Errorf("worker %d: childrenW %s: %w", id, key, err)
				}
				childWatches[key] = childWatch{st.Pzxid, ch}
			}
		case 4: // read and check the watches against what the read shows
			_, st, err := c.Get(key)
			if err != nil {
				return fmt.Errorf("worker %d: get %s: %w", id, key, err)
			}
			if w, ok := dataWatches[key]; ok && st.Mzxid > w.mzxid {
				if !fired(w.ch) {
					return fmt.Errorf("worker %d: read shows %s changed (mzxid %#x > %#x) before its data watch fired",
						id, key, st.Mzxid, w.mzxid)
				}
				delete(dataWatches, key)
			}
			if w, ok := childWatches[key]; ok && st.Pzxid > w.pzxid {
				if !fired(w.ch) {
					return fmt.Errorf("worker %d: read shows %s's children changed (pzxid %#x > %#x) before its child watch fired",
						id, key, st.Pzxid, w.pzxid)
				}
				delete(childWatches, key)
			}
		}
	}
	return nil
}
