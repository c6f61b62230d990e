package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// newSession is a shell on a session with the server at addr, as Run makes
// it, driven a line at a time by the test.
func newSession(t *testing.T, addr string) (*shell, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	s := newShell(&out, &out)
	s.connectString = addr
	s.open(addr)
	t.Cleanup(s.closeQuietly)
	return s, &out
}

func waitState(t *testing.T, s *shell, want State) {
	t.Helper()
	require.Eventually(t, func() bool { return s.c.State() == want }, 10*time.Second, 5*time.Millisecond)
}

func TestShell_ResumesSessionWithItsWatches(t *testing.T) {
	srv := servertest.NewServer(t)
	s, out := newSession(t, srv.Addr().String())
	for _, line := range []string{"create /a x", "create -e /e", "get -w /a", "ls -w /", "stat -w /b", "addWatch -m PERSISTENT /p"} {
		s.execLine(line)
	}
	srv.DropClientConnections()
	// The shell gets its session a new connection at once, in the
	// background, as zkCli's does: not at the next command.
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "state:Disconnected") && s.c.State() == StateConnected
	}, 10*time.Second, 5*time.Millisecond)
	for _, line := range []string{"set /a y", "create /b", "create /p", "stat /e"} {
		s.execLine(line)
	}
	assert.Equal(t, connected+"Created /a\nCreated /e\nx\n[a, e, zookeeper]\nNode does not exist: /b\n"+
		"\nWATCHER::\n\nWatchedEvent state:Disconnected type:None path:null\n"+connected+
		watched("NodeDataChanged", "/a")+
		watched("NodeCreated", "/b")+watched("NodeChildrenChanged", "/")+"Created /b\n"+
		watched("NodeCreated", "/p")+"Created /p\n"+
		stat(0, 0, 0, true, 0, 0), mask(out.String()), "the session, its ephemeral and its watches survive the new connection")
}

func TestShell_ReportsExpiry(t *testing.T) {
	srv := servertest.NewServer(t)
	s, out := newSession(t, srv.Addr().String())
	require.True(t, srv.ExpireSession(s.c.SessionID()))
	// Reconnecting at once, the client learns of the expiry at once.
	waitState(t, s, StateClosed)
	s.execLine("ls /")
	s.execLine("ls /")
	assert.Equal(t, connected+"\nWATCHER::\n\nWatchedEvent state:Disconnected type:None path:null\n"+
		"\nWATCHER::\n\nWatchedEvent state:Expired type:None path:null\n"+
		"Not connected\nNot connected\n", out.String())
	assert.Equal(t, StateClosed, s.c.State())
}

// Killing the member a shell is connected to costs it nothing: it moves to
// another member of its connect string at once, with its session and the
// session's ephemeral, as zkCli.sh does.
func TestShell_KeepsItsSessionWhenItsMemberDies(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	connect := c.Addr(0) + "," + c.Addr(1) + "," + c.Addr(2)
	s, out := newSession(t, connect)
	require.Equal(t, StateConnected, s.c.State())
	id := s.c.SessionID()
	s.execLine("create -e /eph mine")
	require.Contains(t, out.String(), "Created /eph")

	c.Kill(0) // the first member of the connect string, where the shell went
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "state:Disconnected") && s.c.State() == StateConnected
	}, 10*time.Second, 5*time.Millisecond, "reconnected in the background")
	assert.Equal(t, id, s.c.SessionID(), "the same session")
	s.execLine("get /eph")
	assert.True(t, strings.HasSuffix(out.String(), "mine\n"), "the ephemeral lives: %q", out.String())
	assert.NotContains(t, out.String(), "Expired")
}

// The prompt says what the connection is now: redrawn when it is lost and
// again when it is back, not only at the next line.
func TestEditLines_PromptFollowsTheConnection(t *testing.T) {
	srv := servertest.NewServer(t)
	_, out, typing, done := editing(srv.Addr().String(), nil)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "(CONNECTED) 0] ") }, 10*time.Second, time.Millisecond)

	srv.DropClientConnections()
	require.Eventually(t, func() bool {
		got := out.String()
		i := strings.Index(got, "state:Disconnected")
		return i >= 0 && strings.Contains(got[i:], "(CONNECTING) 0] ") && strings.Contains(got[i:], "state:SyncConnected") &&
			strings.HasSuffix(got, "(CONNECTED) 0] ")
	}, 10*time.Second, time.Millisecond, "the prompt redrawn with each state: %q", out.String())
	typing.Close()
	<-done
}

// quit while the connection is lost closes the session once a server takes
// it back: its ephemerals go at once, not when the session times out.
func TestShell_QuitWhileDisconnectedClosesTheSession(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.Addr().String()
	s, _ := newSession(t, addr)
	s.execLine("create -e /eph")
	srv.DropClientConnections()
	s.execLine("quit")
	require.True(t, s.quitted)

	other, out := newSession(t, addr)
	other.execLine("stat /eph")
	assert.Contains(t, out.String(), "Node does not exist: /eph")
}
