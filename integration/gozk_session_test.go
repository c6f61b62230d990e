package integration

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// ephemeralWatch is what another session watches of an owner's ephemerals.
type ephemeralWatch struct {
	a, b, kids <-chan zk.Event
}

// mustOwnEphemerals makes owner create /eph/a and /eph/b (ephemeral),
// /eph/s-N (ephemeral sequential) and /eph2/c (ephemeral), and makes watcher
// watch them and /eph's children.
func mustOwnEphemerals(t testing.TB, owner, watcher *zk.Conn) ephemeralWatch {
	t.Helper()
	mustCreate(t, watcher, "/eph", nil)
	mustCreate(t, watcher, "/eph2", nil)
	for _, p := range []string{"/eph/a", "/eph/b", "/eph2/c"} {
		_, err := owner.Create(p, []byte("x"), zk.FlagEphemeral, openACL)
		require.NoError(t, err)
	}
	_, err := owner.Create("/eph/s-", nil, zk.FlagEphemeralSequential, openACL)
	require.NoError(t, err)
	var w ephemeralWatch
	_, _, w.a, err = watcher.ExistsW("/eph/a")
	require.NoError(t, err)
	_, _, w.b, err = watcher.GetW("/eph/b")
	require.NoError(t, err)
	kids, _, kidsCh, err := watcher.ChildrenW("/eph")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b", "s-0000000002"}, kids)
	w.kids = kidsCh
	for _, p := range []string{"/eph/a", "/eph/b", "/eph/s-0000000002"} {
		assert.Equal(t, owner.SessionID(), mustStat(t, watcher, p).EphemeralOwner)
	}
	return w
}

// assertEphemeralsGone checks the events, that /eph and /eph2 are left
// empty, and that one transaction deleted all the ephemerals.
func assertEphemeralsGone(t testing.TB, watcher *zk.Conn, w ephemeralWatch) {
	t.Helper()
	assert.Equal(t, zk.Event{Type: zk.EventNodeDeleted, State: zk.StateSyncConnected, Path: "/eph/a"}, waitEvent(t, w.a))
	assert.Equal(t, zk.Event{Type: zk.EventNodeDeleted, State: zk.StateSyncConnected, Path: "/eph/b"}, waitEvent(t, w.b))
	assert.Equal(t, zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/eph"}, waitEvent(t, w.kids))
	kids, st, err := watcher.Children("/eph")
	require.NoError(t, err)
	assert.Empty(t, kids)
	assert.Equal(t, int32(6), st.Cversion, "3 creates and 3 deletes")
	kids, st2, err := watcher.Children("/eph2")
	require.NoError(t, err)
	assert.Empty(t, kids)
	assert.Equal(t, st.Pzxid, st2.Pzxid, "all the session's ephemerals are deleted by one transaction")
}

func TestEphemeralsDeletedOnClose(t *testing.T) {
	srv := servertest.NewServer(t)
	owner, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	watcher, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	w := mustOwnEphemerals(t, owner, watcher)
	owner.Close()
	assertEphemeralsGone(t, watcher, w)
}

func TestEphemeralsDeletedOnExpiry(t *testing.T) {
	srv := servertest.NewServer(t)
	owner, rec := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	watcher, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	w := mustOwnEphemerals(t, owner, watcher)
	mustCreate(t, watcher, "/watched", nil)
	_, _, ownerWatch, err := owner.GetW("/watched")
	require.NoError(t, err)
	id := owner.SessionID()

	require.True(t, srv.ExpireSession(id))
	assertEphemeralsGone(t, watcher, w)

	// The owner learns that its session expired when it reconnects; its
	// watches are dropped, and go-zookeeper goes on with a new session.
	rec.waitState(t, zk.StateExpired)
	ev := waitEvent(t, ownerWatch)
	assert.Equal(t, zk.EventNotWatching, ev.Type)
	assert.ErrorIs(t, ev.Err, zk.ErrSessionExpired)
	rec.waitState(t, zk.StateHasSession)
	assert.NotEqual(t, id, owner.SessionID())
	assert.NotZero(t, owner.SessionID())

	assert.False(t, srv.ExpireSession(id), "already expired")
	assert.False(t, srv.ExpireSession(0x0123456789), "never existed")
	// The watcher's session was not touched.
	_, err = watcher.Sync("/")
	assert.NoError(t, err)
}

// TestSessionExpiresAfterTimeout cuts a client off without closing its
// session (its proxy drops the connection and turns it away afterwards):
// the server expires the session once its negotiated timeout passes without
// a packet, deleting its ephemerals. A connected client that is idle for
// longer than its timeout keeps its session alive with pings.
func TestSessionExpiresAfterTimeout(t *testing.T) {
	const timeout = 400 * time.Millisecond // servertest: 100ms tick, 200ms minimum
	srv := servertest.NewServer(t)
	px := newProxy(t, srv.ConnectString())
	owner, rec := mustConnectRecorded(t, px.addr(), timeout)
	watcher, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	id := owner.SessionID()
	_, err := owner.Create("/mine", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)

	cons, ok := zk.FLWCons([]string{srv.ConnectString()}, waitTimeout)
	require.True(t, ok, "cons: %+v", cons)
	var negotiated int32
	for _, cl := range cons[0].Clients {
		if cl.SessionID == id {
			negotiated = cl.Timeout
		}
	}
	assert.Equal(t, int32(timeout/time.Millisecond), negotiated, "negotiated timeout")

	// Idle but connected for 2.5 timeouts: pings keep the session.
	<-time.After(5 * timeout / 2)
	assert.Equal(t, id, mustStat(t, watcher, "/mine").EphemeralOwner)
	assert.Equal(t, []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateHasSession}, rec.sessionStates())

	_, _, gone, err := watcher.ExistsW("/mine")
	require.NoError(t, err)
	// The owner's last packet reaches the server after cut.
	cut := time.Now()
	_, err = owner.Sync("/")
	require.NoError(t, err)
	px.refuse(true)
	px.sever()
	assert.Equal(t, zk.EventNodeDeleted, waitEvent(t, gone).Type)
	elapsed := time.Since(cut)
	assert.GreaterOrEqual(t, elapsed, timeout, "expired before its timeout")
	t.Logf("session expired %v after the cut", elapsed)

	px.refuse(false)
	rec.waitState(t, zk.StateExpired)
}

// TestSequentialNaming checks sequence suffixes: %010d of the parent's
// create counter, which counts every child ever created (sequential or not)
// and is never lowered or reused after deletes.
func TestSequentialNaming(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	mustCreate(t, c, "/q", nil)

	steps := []struct {
		name string
		do   func() (string, error)
		want string
	}{
		{"first child", func() (string, error) { return c.Create("/q/n-", nil, zk.FlagSequence, openACL) }, "/q/n-0000000000"},
		{"second", func() (string, error) { return c.Create("/q/n-", nil, zk.FlagSequence, openACL) }, "/q/n-0000000001"},
		{"ephemeral shares the counter", func() (string, error) {
			return c.Create("/q/e-", nil, zk.FlagEphemeralSequential, openACL)
		}, "/q/e-0000000002"},
		{"after deleting the last two", func() (string, error) {
			if err := c.Delete("/q/n-0000000001", -1); err != nil {
				return "", err
			}
			if err := c.Delete("/q/e-0000000002", -1); err != nil {
				return "", err
			}
			return c.Create("/q/n-", nil, zk.FlagSequence, openACL)
		}, "/q/n-0000000003"},
		{"a plain child counts", func() (string, error) {
			if _, err := c.Create("/q/plain", nil, zk.FlagPersistent, openACL); err != nil {
				return "", err
			}
			return c.Create("/q/n-", nil, zk.FlagSequence, openACL)
		}, "/q/n-0000000005"},
		{"failed creates do not count", func() (string, error) {
			if _, err := c.Create("/q/plain", nil, zk.FlagPersistent, openACL); err != zk.ErrNodeExists {
				return "", fmt.Errorf("want ErrNodeExists, got %v", err)
			}
			return c.Create("/q/n-", nil, zk.FlagSequence, openACL)
		}, "/q/n-0000000006"},
		{"after deleting every child", func() (string, error) {
			kids, _, err := c.Children("/q")
			if err != nil {
				return "", err
			}
			for _, k := range kids {
				if err := c.Delete("/q/"+k, -1); err != nil {
					return "", err
				}
			}
			return c.Create("/q/n-", nil, zk.FlagSequence, openACL)
		}, "/q/n-0000000007"},
		{"bare sequential name with a trailing slash", func() (string, error) {
			return c.Create("/q/", nil, zk.FlagSequence, openACL)
		}, "/q/0000000008"},
		{"ttl sequential", func() (string, error) {
			return c.CreateTTL("/q/t-", nil, zk.FlagPersistentSequentialWithTTL, openACL, time.Hour)
		}, "/q/t-0000000009"},
		{"protected ephemeral sequential", func() (string, error) {
			p, err := c.CreateProtectedEphemeralSequential("/q/p-", nil, openACL)
			if err != nil {
				return "", err
			}
			return p[len(p)-10:], nil
		}, "0000000010"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, err := s.do()
			require.NoError(t, err)
			assert.Equal(t, s.want, got)
		})
	}

	t.Run("recreated parent starts again at 0", func(t *testing.T) {
		kids, _, err := c.Children("/q")
		require.NoError(t, err)
		for _, k := range kids {
			require.NoError(t, c.Delete("/q/"+k, -1))
		}
		require.NoError(t, c.Delete("/q", -1))
		mustCreate(t, c, "/q", nil)
		p, err := c.Create("/q/n-", nil, zk.FlagSequence, openACL)
		require.NoError(t, err)
		assert.Equal(t, "/q/n-0000000000", p)
	})
}

// TestConcurrentSequentialCreates has several sessions create sequential
// children of one parent at once: every name is unique and the suffixes
// are exactly 0..n-1.
func TestConcurrentSequentialCreates(t *testing.T) {
	const sessions, each = 6, 25
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	setup, _ := mustConnectRecorded(t, addr, 5*time.Second)
	mustCreate(t, setup, "/cs", nil)
	conns := make([]*zk.Conn, sessions)
	for i := range conns {
		conns[i], _ = mustConnectRecorded(t, addr, 5*time.Second)
	}

	var mu sync.Mutex
	var names []string
	errs := make(chan error, sessions*each)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			flag := int32(zk.FlagSequence)
			if i%2 == 1 {
				flag = zk.FlagEphemeralSequential
			}
			for j := 0; j < each; j++ {
				p, err := c.Create("/cs/n-", []byte(fmt.Sprint(i)), flag, openACL)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				names = append(names, p)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	want := make([]string, 0, sessions*each)
	for i := 0; i < sessions*each; i++ {
		want = append(want, fmt.Sprintf("/cs/n-%010d", i))
	}
	sort.Strings(names)
	assert.Equal(t, want, names)
	kids, st, err := setup.Children("/cs")
	require.NoError(t, err)
	assert.Len(t, kids, sessions*each)
	assert.Equal(t, int32(sessions*each), st.Cversion)
}
