package cli

import (
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
	waitState(t, s, StateNotConnected)
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
	waitState(t, s, StateNotConnected)
	s.execLine("ls /")
	s.execLine("ls /")
	assert.Equal(t, connected+"\nWATCHER::\n\nWatchedEvent state:Disconnected type:None path:null\n"+
		"\nWATCHER::\n\nWatchedEvent state:Expired type:None path:null\n"+
		"KeeperErrorCode = Session expired for /\nNot connected\n", out.String())
	assert.Equal(t, StateClosed, s.c.State())
}
