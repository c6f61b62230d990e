package servertest_test

import (
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// A namespace's clients see its root as "/": what they create, list,
// watch and get back is relative to it, whatever the op.
func TestShared_ClientsSeeTheNamespaceAsRoot(t *testing.T) {
	ns := servertest.Shared(t)
	conn := session(t, ns.ConnectString())

	p, err := conn.Create("/app", []byte("v1"), 0, openACL)
	require.NoError(t, err)
	assert.Equal(t, "/app", p)
	seq, err := conn.Create("/app/item-", nil, zk.FlagSequence|zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	assert.Equal(t, "/app/item-0000000000", seq, "a created path comes back without the root")
	children, _, err := conn.Children("/")
	require.NoError(t, err)
	assert.Equal(t, []string{"app"}, children, "the root holds this namespace's nodes only")
	data, _, err := conn.Get("/app")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data))
	_, err = conn.Sync("/app")
	require.NoError(t, err)
	res, err := conn.Multi(&zk.CreateRequest{Path: "/app/m", Data: []byte("x"), Acl: openACL},
		&zk.SetDataRequest{Path: "/app", Data: []byte("v2"), Version: -1})
	require.NoError(t, err)
	assert.Equal(t, "/app/m", res[0].String, "a multi's created path too")
	p, err = conn.CreateContainer("/box", nil, zk.FlagContainer, openACL)
	require.NoError(t, err)
	assert.Equal(t, "/box", p, "createContainer's (create2's) reply")
	p, err = conn.CreateTTL("/ttl", nil, zk.FlagTTL, openACL, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, "/ttl", p, "createTTL's")
	_, err = conn.Create("bad", nil, 0, openACL)
	assert.ErrorIs(t, err, zk.ErrInvalidPath, "a relative path stays invalid")

	// On the server, it all lives under the namespace's root.
	srvConn := session(t, ns.ServerAddr())
	data, _, err = srvConn.Get(ns.Chroot() + "/app")
	require.NoError(t, err)
	assert.Equal(t, "v2", string(data))
	exists, _, err := srvConn.Exists("/app")
	require.NoError(t, err)
	assert.False(t, exists, "nothing at the server's own /app")

	in := ns.Inspect()
	assert.Equal(t, []string{"/", "/app", "/app/item-0000000000", "/app/m", "/box", "/ttl"}, in.Tree("/").Paths())
	sessions := in.Sessions()
	require.Len(t, sessions, 1, "the namespace's own session; not the server-side one")
	assert.Equal(t, conn.SessionID(), sessions[0].ID)
	assert.Equal(t, []string{"/app/item-0000000000"}, sessions[0].Ephemerals)
}

// Watch events carry paths without the root, and survive a reconnection:
// the client's setWatches paths are rooted on the way in too.
func TestShared_WatchesAcrossAReconnection(t *testing.T) {
	if raceEnabled {
		t.Skip("go-zookeeper v1.0.4 races with itself when a connection with watches reconnects (go-zookeeper/zk#35)")
	}
	ns := servertest.Shared(t)
	conn := session(t, ns.ConnectString())
	_, err := conn.Create("/w", nil, 0, openACL)
	require.NoError(t, err)
	_, _, data, err := conn.GetW("/w")
	require.NoError(t, err)
	_, _, root, err := conn.ChildrenW("/")
	require.NoError(t, err)
	in := ns.Inspect()
	assert.Equal(t, []server.Watch{
		{Session: conn.SessionID(), Path: "/", Kind: server.ChildWatch},
		{Session: conn.SessionID(), Path: "/w", Kind: server.DataWatch},
	}, in.Watches())

	_, err = conn.Create("/x", nil, 0, openACL)
	require.NoError(t, err)
	ev := receive(t, root)
	assert.Equal(t, zk.EventNodeChildrenChanged, ev.Type)
	assert.Equal(t, "/", ev.Path, "the namespace's root is its clients' /")

	// Drop the client's connection: go-zookeeper reconnects through the
	// namespace and sets its watches again; a change made while it was
	// away fires the watch with the namespace's path.
	other := session(t, ns.ConnectString())
	_, _, otherWatch, err := other.GetW("/w")
	require.NoError(t, err)
	ns.DropClientConnections()
	// other's connection went too: its set is tried again until it is
	// through (setting the same data twice changes nothing it checks).
	require.Eventually(t, func() bool {
		_, err = other.Set("/w", []byte("changed"), -1)
		return err == nil
	}, 10*time.Second, time.Millisecond)
	for _, ch := range []<-chan zk.Event{data, otherWatch} {
		ev = receive(t, ch)
		assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
		assert.Equal(t, "/w", ev.Path)
	}
	assert.Equal(t, []int64{conn.SessionID(), other.SessionID()}, ns.Sessions(), "both sessions resumed")
}

func receive(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return zk.Event{}
	}
}

// TestShared_ParallelTestsAreIsolated runs 200 parallel tests on the one
// shared server, each with its own namespace: each creates the same paths
// with its own data, an ephemeral and a watch, and must see only its own.
func TestShared_ParallelTestsAreIsolated(t *testing.T) {
	start := time.Now()
	t.Run("200", func(t *testing.T) { // returns once its parallel tests are done
		for i := range 200 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				isolatedWorkload(t, servertest.Shared(t), i)
			})
		}
	})
	t.Logf("200 parallel tests on one shared server: %v", time.Since(start))
}

// isolatedWorkload is one test of TestShared_ParallelTestsAreIsolated.
func isolatedWorkload(t *testing.T, ns interface {
	ConnectString() string
	Inspect() *servertest.Inspector
}, i int) {
	conn, _, err := zk.Connect([]string{ns.ConnectString(), ns.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	servertest.WaitClientSettled(t, conn) // before its watch: go-zookeeper's own race
	mine := []byte(fmt.Sprint("test ", i))
	_, err = conn.Create("/config", mine, 0, openACL)
	require.NoError(t, err, "the same path in every test")
	_, err = conn.Create("/owner", mine, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	_, _, watch, err := conn.GetW("/config")
	require.NoError(t, err)
	for j := range 5 {
		_, err = conn.Create(fmt.Sprint("/config/", j), mine, 0, openACL)
		require.NoError(t, err)
	}
	_, err = conn.Set("/config", append(mine, " again"...), 0)
	require.NoError(t, err)
	ev := receive(t, watch)
	assert.Equal(t, "/config", ev.Path)
	children, _, err := conn.Children("/")
	require.NoError(t, err)
	slices.Sort(children)
	assert.Equal(t, []string{"config", "owner"}, children)
	data, _, err := conn.Get("/config/4")
	require.NoError(t, err)
	assert.Equal(t, mine, data, "its own data, not another test's")

	in := ns.Inspect()
	assert.Len(t, in.Tree("/").Paths(), 8, "/, /config and its five children, /owner")
	sessions := in.Sessions()
	if assert.Len(t, sessions, 1) {
		assert.Equal(t, []string{"/owner"}, sessions[0].Ephemerals)
	}
	assert.Empty(t, in.Watches(), "the one-shot watch fired")
}

// TestOwnServers_ParallelTests is TestShared_ParallelTestsAreIsolated with
// a server per test, to compare the time the two take (README, servertest
// figures); it runs only with ZKRAFT_COMPARE_SHARED=1.
func TestOwnServers_ParallelTests(t *testing.T) {
	if os.Getenv("ZKRAFT_COMPARE_SHARED") == "" {
		t.Skip("set ZKRAFT_COMPARE_SHARED=1 to compare with TestShared_ParallelTestsAreIsolated")
	}
	start := time.Now()
	t.Run("200", func(t *testing.T) {
		for i := range 200 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				isolatedWorkload(t, servertest.NewServer(t), i)
			})
		}
	})
	t.Logf("200 parallel tests, a server each: %v", time.Since(start))
}

// When a test ends, its namespace goes: its sessions expired, its subtree
// deleted (whatever its ACLs), its address closed.
func TestShared_CleanedUpWhenTheTestEnds(t *testing.T) {
	outer := servertest.Shared(t) // holds the shared server beyond the subtest
	var root, addr string
	var id int64
	// A client that takes the namespace as a chroot (here: its paths
	// spelled out), and outlives the test that made it.
	chrooted, events := connect(t, outer.ServerAddr(), 10*time.Second)
	waitState(t, events, zk.StateHasSession)
	t.Run("user", func(t *testing.T) {
		ns := servertest.Shared(t)
		root, addr = ns.Chroot(), ns.ConnectString()
		_, err := chrooted.Create(root+"/mine", nil, zk.FlagEphemeral, openACL)
		require.NoError(t, err)
		assert.Contains(t, ns.Sessions(), chrooted.SessionID(), "a chroot client's session is the namespace's")
		conn := session(t, ns.ConnectString())
		id = conn.SessionID()
		_, err = conn.Create("/locked", nil, 0, openACL)
		require.NoError(t, err)
		_, err = conn.Create("/locked/child", nil, 0, openACL)
		require.NoError(t, err)
		_, err = conn.SetACL("/locked", zk.DigestACL(zk.PermRead, "someone", "secret"), -1)
		require.NoError(t, err, "now only a superuser may delete /locked/child")
		_, err = conn.Create("/e", nil, zk.FlagEphemeral, openACL)
		require.NoError(t, err)
	})
	srvConn := session(t, outer.ServerAddr())
	exists, _, err := srvConn.Exists(root)
	require.NoError(t, err)
	assert.False(t, exists, "the namespace's subtree is gone")
	assert.False(t, outer.ExpireSession(id), "not this namespace's session")
	for _, s := range outer.Inspect().Sessions() {
		assert.NotEqual(t, id, s.ID)
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the namespace's address is closed")
	waitState(t, events, zk.StateExpired) // the chroot client's session went with the namespace
}

// Any test name gives a valid namespace, whatever ZooKeeper refuses in a
// znode's name.
func TestShared_AnyTestName(t *testing.T) {
	for _, name := range []string{"smile 🙂", "dots..and/slashes", "ctrl\x01\x7f\u0085", "private \ue000", "\xff bad utf-8"} {
		t.Run(name, func(t *testing.T) {
			ns := servertest.Shared(t)
			conn := session(t, ns.ConnectString())
			_, err := conn.Create("/x", nil, 0, openACL)
			require.NoError(t, err, ns.Chroot())
		})
	}
}
