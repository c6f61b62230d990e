package servertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestInspector_TreeAsValues(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	_, err := conn.Create("/app", []byte("config"), 0, openACL)
	require.NoError(t, err)
	_, err = conn.Create("/app/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "alice", "pw"))
	require.NoError(t, err)
	_, err = conn.Create("/app/e", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	_, err = conn.CreateTTL("/app/t", nil, zk.FlagTTL, openACL, time.Hour)
	require.NoError(t, err)
	_, err = conn.Set("/app", []byte("config v2"), 0)
	require.NoError(t, err)

	in := srv.Inspect()
	app := in.Tree("/app")
	require.NotNil(t, app)
	assert.Equal(t, "config v2", string(app.Data))
	assert.Equal(t, int32(1), app.Stat.Version)
	assert.Equal(t, int32(3), app.Stat.NumChildren)
	assert.Equal(t, openACL, app.ACL)
	assert.Equal(t, []string{"/app", "/app/e", "/app/secret", "/app/t"}, app.Paths())
	secret := app.Children[1]
	assert.Equal(t, "s", string(secret.Data), "the Inspector reads past ACLs")
	assert.Equal(t, "digest", secret.ACL[0].Scheme)
	assert.Equal(t, conn.SessionID(), app.Children[0].Stat.EphemeralOwner)
	assert.Equal(t, servertest.TTLNode, app.Children[2].Kind)
	assert.Equal(t, time.Hour, app.Children[2].TTL)
	assert.Nil(t, in.Tree("/missing"))

	node := in.Node("/app")
	assert.Equal(t, "/app/e", node.Children[0].Path)
	assert.Nil(t, node.Children[0].Data, "Node fills the children's paths only")

	// Text leaves out what differs between runs: a golden file's form.
	assert.Equal(t, `/app "config v2" v1 cv3 av0
/app/e "" v0 cv0 av0 ephemeral
/app/secret "s" v0 cv0 av0
/app/t "" v0 cv0 av0 ttl
`, app.Text())
}

func TestInspector_SessionsAndWatches(t *testing.T) {
	srv := servertest.NewServer(t)
	a, b := session(t, srv.ConnectString()), session(t, srv.ConnectString())
	_, err := a.Create("/a", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	_, _, _, err = b.GetW("/a")
	require.NoError(t, err)
	_, _, _, err = b.ChildrenW("/")
	require.NoError(t, err)
	_, _, _, err = a.ExistsW("/nothing")
	require.NoError(t, err)

	in := srv.Inspect()
	sessions := in.Sessions()
	require.Len(t, sessions, 2)
	assert.Equal(t, servertest.Session{ID: a.SessionID(), Timeout: sessionTimeout, Ephemerals: []string{"/a"},
		Watches: []server.Watch{{Session: a.SessionID(), Path: "/nothing", Kind: server.DataWatch}}}, sessions[0])
	assert.Equal(t, []server.Watch{
		{Session: b.SessionID(), Path: "/", Kind: server.ChildWatch},
		{Session: b.SessionID(), Path: "/a", Kind: server.DataWatch},
	}, sessions[1].Watches)
	assert.Len(t, in.Watches(), 3)
	assert.Contains(t, in.Dump(), "/a \"\" v0 cv0 ephemeral owner=")
}

// The lock queues of lockrecipe's mutex and read-write lock, and of
// Curator's and kazoo's names, with holders and waiters in order.
func TestInspector_Locks(t *testing.T) {
	srv := servertest.NewServer(t)
	in := srv.Inspect()
	ctx := context.Background()
	holder, waiter := session(t, srv.ConnectString()), session(t, srv.ConnectString())
	held := lockrecipe.NewMutex(holder, "/locks/m")
	require.NoError(t, held.Lock(ctx))
	waiting := make(chan error, 1)
	go func() { waiting <- lockrecipe.NewMutex(waiter, "/locks/m").Lock(ctx) }()
	in.WaitForChildren("/locks/m", 2)

	rw := session(t, srv.ConnectString())
	require.NoError(t, lockrecipe.NewRWMutex(rw, "/locks/rw").RLock(ctx))
	require.NoError(t, lockrecipe.NewRWMutex(holder, "/locks/rw").RLock(ctx))
	// kazoo's names, made by hand: a reader, a writer, a reader behind it.
	for _, name := range []string{"a__rlock__", "b__lock__", "c__rlock__"} {
		_, err := rw.Create("/locks/kazoo/"+name, nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
		if err == zk.ErrNoNode {
			_, err = rw.Create("/locks/kazoo", nil, 0, openACL)
			require.NoError(t, err)
			_, err = rw.Create("/locks/kazoo/"+name, nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
		}
		require.NoError(t, err)
	}

	locks := in.Locks()
	require.Len(t, locks, 3)
	kazoo, m, rws := locks[0], locks[1], locks[2]
	assert.Equal(t, "/locks/m", m.Path)
	assert.Equal(t, servertest.Mutex, m.Kind)
	h, ok := m.Holder()
	require.True(t, ok)
	assert.Equal(t, holder.SessionID(), h.Session)
	require.Len(t, m.Waiters(), 1)
	assert.Equal(t, waiter.SessionID(), m.Waiters()[0].Session)

	assert.Equal(t, servertest.ReadWrite, rws.Kind)
	assert.Empty(t, rws.Waiters(), "two readers hold together")

	assert.Equal(t, servertest.Kazoo, kazoo.Kind)
	assert.Equal(t, []bool{true, false, false}, []bool{kazoo.Nodes[0].Holds, kazoo.Nodes[1].Holds, kazoo.Nodes[2].Holds},
		"the writer waits for the reader ahead; the reader behind the writer waits")

	require.NoError(t, held.Unlock())
	require.NoError(t, <-waiting)
}

// WaitFor wakes on the server's changes, writes and watches alike.
func TestInspector_WaitFor(t *testing.T) {
	srv := servertest.NewServer(t)
	in := srv.Inspect()
	conn := session(t, srv.ConnectString())
	// The client deletes /later only once the test has seen it: on a loaded
	// machine its create, exists and delete can all be done before the
	// waiting goroutine runs again, and a node that came and went is not
	// there to be seen.
	seen := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := conn.Create("/later", nil, 0, openACL)
		if err == nil {
			_, _, _, err = conn.ExistsW("/later")
		}
		if err == nil {
			<-seen
			err = conn.Delete("/later", -1)
		}
		if err != nil { // now, not after a WaitFor gives up
			t.Errorf("the client: %v", err)
		}
		done <- err
	}()
	t.Cleanup(func() { // the goroutine ends within the test, or is reported
		select {
		case <-seen:
		default:
			close(seen)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the client's create, exists and delete did not return")
		}
	})
	in.WaitForNode("/later")
	in.WaitForWatches("/later", 1)
	close(seen)
	in.WaitForGone("/later")
	in.WaitFor("no watch left", func(in *servertest.Inspector) bool { return len(in.Watches()) == 0 })

	// The same session sets the next watch: a session that sets one just
	// after it connects can race go-zookeeper's resending of its watches
	// (it reads the last zxid as its receiver writes it).
	watched := make(chan error, 1)
	go func() {
		_, _, _, err := conn.ExistsW("/w")
		watched <- err
	}()
	in.WaitForWatches("/w", 1)
	require.NoError(t, <-watched)
}

// A cluster member's Inspector sees that member's copy and its own
// clients' watches.
func TestInspector_ClusterMember(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	f := (c.Leader() + 1) % 3
	conn := session(t, c.Addr(f))
	_, err := conn.Create("/x", []byte("1"), 0, openACL)
	require.NoError(t, err)
	_, _, _, err = conn.GetW("/x")
	require.NoError(t, err)
	for i := range 3 {
		c.Inspect(i).WaitForNode("/x")
	}
	assert.Len(t, c.Inspect(f).Watches(), 1)
	assert.Empty(t, c.Inspect(c.Leader()).Watches(), "the watch lives where the client is")
}
