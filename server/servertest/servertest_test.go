package servertest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkraft/zkraft/server/servertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-zookeeper's Conn.Close does not wait for its goroutines.
		// Its loop can also block for good sending a second error to a
		// request whose first no one read: Close gives up waiting for its
		// close request after a second, and a write that failed then
		// answers it before flushRequests does again.
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("time.Sleep"),
	)
}

func TestNewServer_ReadyAndExpiresSessions(t *testing.T) {
	srv := servertest.NewServer(t)
	conn, events, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, "the server is ready when NewServer returns")

	assert.True(t, srv.ExpireSession(conn.SessionID()))
	// go-zookeeper reports the expiry, then reconnects with a new session;
	// requests made in between fail with ErrNoServer, so wait for both.
	deadline := time.After(10 * time.Second)
	for _, want := range []zk.State{zk.StateExpired, zk.StateHasSession} {
		for seen := false; !seen; {
			select {
			case ev := <-events:
				seen = ev.State == want
			case <-deadline:
				t.Fatalf("the client never reached %v", want)
			}
		}
	}
	exists, _, err := conn.Exists("/e")
	require.NoError(t, err, "go-zookeeper reconnects with a new session")
	assert.False(t, exists, "the expired session's ephemeral is gone")
	assert.False(t, srv.ExpireSession(12345), "unknown session")
}

func TestNewServer_Options(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithTickTime(50*time.Millisecond))
	stats, ok := zk.FLWSrvr([]string{srv.ConnectString()}, 5*time.Second)
	require.True(t, ok, "%+v", stats[0])
	assert.Equal(t, zk.ModeStandalone, stats[0].Mode)
}
