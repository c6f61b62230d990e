package chroot

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startServer(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0", FourLetterWords: []string{"*"}})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	return srv
}

func startProxy(t *testing.T, srv *server.Server, root string) *Proxy {
	t.Helper()
	admin := NewAdmin(srv.ConnectString(), "")
	defer admin.Close()
	require.NoError(t, admin.Create(root))
	p, err := Listen(root, srv.ConnectString(), wire.MaxBuffer)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func mustCall(t *testing.T, c *client, op wire.Op, req, resp wire.Record) {
	t.Helper()
	code, err := c.call(c.next(), op, req, resp)
	require.NoError(t, err)
	require.Equal(t, wire.CodeOK, code, "%v", op)
}

// The replies whose paths go-zookeeper never asks for: create2's,
// getEphemerals', a persistent recursive watch's events, and an event on
// the root itself.
func TestProxy_PathsInEveryReply(t *testing.T) {
	srv := startServer(t)
	p := startProxy(t, srv, "/ns/a")
	c, err := dial(p.Addr(), "")
	require.NoError(t, err)
	defer c.close()

	mustCall(t, c, wire.OpAddWatch, &wire.AddWatchRequest{Path: "/", Mode: 1}, nil) // persistent recursive
	var created wire.Create2Response
	mustCall(t, c, wire.OpCreate2, &wire.CreateRequest{Path: "/e", Data: []byte{}, ACL: wire.OpenACLUnsafe,
		Flags: wire.FlagEphemeral}, &created)
	assert.Equal(t, "/e", created.Path)
	var eph wire.GetChildrenResponse
	mustCall(t, c, wire.OpGetEphemerals, &wire.PathRequest{Path: "/"}, &eph)
	assert.Equal(t, []string{"/e"}, eph.Children)
	mustCall(t, c, wire.OpSetData, &wire.SetDataRequest{Path: "/", Data: []byte("root"), Version: -1}, &wire.StatResponse{})
	var sync wire.SyncResponse
	mustCall(t, c, wire.OpSync, &wire.PathRequest{Path: "/"}, &sync)
	assert.Equal(t, "/", sync.Path)
	require.Len(t, c.events, 2)
	assert.Equal(t, wire.WatcherEvent{Type: wire.EventNodeCreated, State: wire.StateSyncConnected, Path: "/e"}, c.events[0])
	assert.Equal(t, "/", c.events[1].Path, "the root is the client's /")

	var config wire.GetDataResponse
	mustCall(t, c, wire.OpGetData, &wire.PathWatchRequest{Path: "/zookeeper/config"}, &config)
	assert.Zero(t, config.Stat.Mzxid, "the server's own configuration node, as Java's getConfig reads it")

	data, _, code := readNode(srv, "/ns/a")
	require.Equal(t, wire.CodeOK, code)
	assert.Equal(t, "root", string(data))
	assert.Equal(t, []int64{p.Sessions()[0]}, p.Sessions())
}

func readNode(srv *server.Server, path string) (data []byte, st wire.Stat, code wire.Code) {
	srv.FSM().Read(func(t *tree.Tree) { data, st, code = t.Get(path, nil) })
	return
}

// A four-letter word goes to the server untouched, as does its answer.
func TestProxy_FourLetterWords(t *testing.T) {
	srv := startServer(t)
	p := startProxy(t, srv, "/ns")
	conn, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Write([]byte("ruok"))
	require.NoError(t, err)
	out, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Equal(t, "imok", string(out))
}

// A malformed request reaches the server as it was sent, and is answered
// as the server answers it.
func TestProxy_MalformedRequestsPassThrough(t *testing.T) {
	srv := startServer(t)
	p := startProxy(t, srv, "/ns")
	c, err := dial(p.Addr(), "")
	require.NoError(t, err)
	defer c.close()
	code, err := c.call(c.next(), wire.OpGetData, rawBody{0, 0}, nil) // a string cut short
	require.NoError(t, err)
	assert.Equal(t, wire.CodeMarshallingError, code)
	code, err = c.call(c.next(), wire.OpCreate, &wire.CreateRequest{Path: "rel", ACL: wire.OpenACLUnsafe}, nil)
	require.NoError(t, err)
	assert.Equal(t, wire.CodeBadArguments, code, "a relative path stays invalid")
	mustCall(t, c, wire.OpExists, &wire.PathWatchRequest{Path: "/"}, &wire.StatResponse{})
}

type rawBody []byte

func (b rawBody) Append(dst []byte) []byte       { return append(dst, b...) }
func (b rawBody) Decode(src []byte) (int, error) { return len(src), nil }

func TestListen_RefusesBadRoots(t *testing.T) {
	for _, root := range []string{"", "/", "ns", "/ns/"} {
		_, err := Listen(root, "127.0.0.1:1", wire.MaxBuffer)
		assert.Error(t, err, "%q", root)
	}
}

// Remove takes the listed paths in a multi, and falls back to node by node
// when the list is out of date.
func TestAdmin_Remove(t *testing.T) {
	srv := startServer(t)
	admin := NewAdmin(srv.ConnectString(), "")
	defer admin.Close()
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"listed", []string{"/r/a/b", "/r/a", "/r/c", "/r"}},
		{"stale list", []string{"/r/gone", "/r/a", "/r"}},
		{"no list", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []string{"/r/a/b", "/r/c"} {
				require.NoError(t, admin.Create(p))
			}
			require.NoError(t, admin.Remove("/r", tc.paths))
			_, _, code := readNode(srv, "/r")
			assert.Equal(t, wire.CodeNoNode, code)
		})
	}
}
