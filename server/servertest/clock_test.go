package servertest_test

import (
	"log"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// connect opens a go-zookeeper session with the given timeout, closed
// with the test.
func connect(t *testing.T, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return dial(t, []string{addr}, timeout)
}

func dial(t *testing.T, addrs []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	// go-zookeeper's own lines (a reconnect, a failed SetWatches) name the
	// test whose client printed them: they may come after it ended.
	logger := log.New(os.Stderr, t.Name()+": ", log.LstdFlags|log.Lmicroseconds)
	conn, events, err := zk.Connect(addrs, timeout, zk.WithLogInfo(false), zk.WithLogger(logger))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	return conn, events
}

func TestFakeClock_ExpiresSessionAtOnce(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithFakeClock())
	owner, _ := connect(t, srv.ConnectString(), 10*time.Second)
	watcher, _ := connect(t, srv.ConnectString(), 10*time.Second)
	_, err := owner.Create("/owned", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, _, deleted, err := watcher.ExistsW("/owned")
	require.NoError(t, err)

	srv.Advance(9 * time.Second)
	exists, _, err := watcher.Exists("/owned")
	require.NoError(t, err)
	assert.True(t, exists, "9s of a 10s session: alive")

	srv.Advance(2 * time.Second)
	exists, _, err = watcher.Exists("/owned")
	require.NoError(t, err)
	assert.False(t, exists, "11s without a word from the owner: expired when Advance returns")
	select {
	case ev := <-deleted:
		assert.Equal(t, zk.EventNodeDeleted, ev.Type)
	default:
		t.Error("the watcher was told before its next reply") // notifications precede later replies
	}
}

// A client that keeps talking keeps its session, as far as the clock has
// moved between its words: each Advance here is less than the timeout.
func TestFakeClock_ActiveSessionLives(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithFakeClock())
	conn, _ := connect(t, srv.ConnectString(), 4*time.Second)
	_, err := conn.Create("/alive", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for range 5 {
		srv.Advance(3 * time.Second)
		_, _, err := conn.Exists("/alive") // a word from the client
		require.NoError(t, err)
	}
	exists, _, err := conn.Exists("/alive")
	require.NoError(t, err)
	assert.True(t, exists, "15s of virtual time, never 4s of silence")
}

// TTL nodes and containers are reaped when the clock says so, not on the
// real container check (set here to an hour).
func TestFakeClock_ReapsTTLNodesAndContainers(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithFakeClock(),
		servertest.WithConfig(func(c *server.Config) { c.ContainerCheckInterval = time.Hour }))
	conn, _ := connect(t, srv.ConnectString(), 10*time.Second)
	_, err := conn.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), 5*time.Second)
	require.NoError(t, err)
	_, err = conn.CreateContainer("/box", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create("/box/item", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.NoError(t, conn.Delete("/box/item", -1))

	srv.Advance(time.Millisecond)
	assertGone(t, conn, "/box", "an emptied container, at the next Advance")
	srv.Advance(4 * time.Second)
	assertThere(t, conn, "/ttl", "a TTL node before its TTL")
	srv.Advance(2 * time.Second) // 6s: the TTL has passed, the 10s session lives
	assertGone(t, conn, "/ttl", "a TTL node past its TTL")
}

func assertGone(t *testing.T, conn *zk.Conn, path, what string) {
	t.Helper()
	exists, _, err := conn.Exists(path)
	require.NoError(t, err)
	assert.False(t, exists, what)
}

func assertThere(t *testing.T, conn *zk.Conn, path, what string) {
	t.Helper()
	exists, _, err := conn.Exists(path)
	require.NoError(t, err)
	assert.True(t, exists, what)
}

// In a cluster the leader expires the session, whichever member its client
// is on; the other members apply the expiry as any write.
func TestFakeClock_Cluster(t *testing.T) {
	c := servertest.NewCluster(t, 3, servertest.WithFakeClock())
	follower := (c.Leader() + 1) % 3
	owner, _ := connect(t, c.Addr(follower), 10*time.Second)
	_, err := owner.Create("/owned", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	c.Advance(11 * time.Second)
	reader, _ := connect(t, c.Addr(c.Leader()), 10*time.Second)
	assertGone(t, reader, "/owned", "expired when Advance returns, on the leader")
}

// The client's side: go-zookeeper's connection is closed, and on
// reconnecting it is told the session expired.
func TestFakeClock_ClientSeesExpiry(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithFakeClock())
	_, events := connect(t, srv.ConnectString(), 10*time.Second)
	waitState(t, events, zk.StateHasSession) // zk.Connect returns before the session is there
	srv.Advance(time.Minute)
	waitState(t, events, zk.StateExpired)
}

// waitState waits for the client to reach state.
func waitState(t *testing.T, events <-chan zk.Event, state zk.State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == state {
				return
			}
		case <-deadline:
			t.Fatalf("the client never reached %v", state)
		}
	}
}
