package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/console"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestConsole_Assets(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	for path, want := range map[string]string{
		"/":          "text/html; charset=utf-8",
		"/app.js":    "text/javascript; charset=utf-8",
		"/style.css": "text/css; charset=utf-8",
	} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, want, resp.Header.Get("Content-Type"), path)
		assert.NotEmpty(t, body, path)
	}
	resp, err := http.Get(base + "/nothing.js")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestConsole_MountedUnderPrefix(t *testing.T) {
	srv := servertest.NewServer(t)
	c, err := console.New(console.FromServer(srv.Server), console.Options{})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/console/", http.StripPrefix("/console", c))
	mux.Handle("/console", http.StripPrefix("/console", c))
	hs := newHTTPServer(t, mux)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(hs + "/console")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	assert.Equal(t, "/console/", resp.Header.Get("Location"))
	var l console.Listing
	assert.Equal(t, http.StatusOK, get(t, hs+"/console/api/children?path=/", &l))
	assert.Equal(t, "/", l.Path)
}

func TestConsole_Children(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	conn := connect(t, srv.ConnectString())
	for _, p := range []string{"/b", "/a", "/a/x", "/a/y"} {
		_, err := conn.Create(p, []byte("v"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	_, err := conn.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create("/secret", nil, 0, zk.DigestACL(zk.PermAll, "alice", "pw"))
	require.NoError(t, err)

	var l console.Listing
	require.Equal(t, http.StatusOK, get(t, base+"/api/children?path=/", &l))
	var names []string
	for _, c := range l.Children {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"a", "b", "e", "secret", "zookeeper"}, names, "children in name order")
	assert.Equal(t, console.Child{Name: "a", Path: "/a", Kind: "persistent", NumChildren: 2, DataLength: 1}, l.Children[0])
	assert.Equal(t, "ephemeral", l.Children[2].Kind)

	require.Equal(t, http.StatusOK, get(t, base+"/api/children?path=/a&limit=1", &l))
	assert.Equal(t, console.Listing{Path: "/a", Total: 2, Truncated: true,
		Children: []console.Child{{Name: "x", Path: "/a/x", Kind: "persistent", DataLength: 1}}}, l)

	for url, want := range map[string]int{
		"/api/children?path=/none":    http.StatusNotFound,
		"/api/children?path=/secret":  http.StatusForbidden,
		"/api/children?path=a":        http.StatusBadRequest,
		"/api/children?path=/a/":      http.StatusBadRequest,
		"/api/children?path=/a//b":    http.StatusBadRequest,
		"/api/children?path=/a/../b":  http.StatusBadRequest,
		"/api/children?path=/&limit=": http.StatusOK,
		"/api/children?limit=x":       http.StatusBadRequest,
		"/api/children?limit=0":       http.StatusBadRequest,
	} {
		var e apiErr
		got := get(t, base+url, &e)
		assert.Equal(t, want, got, url)
		if want != http.StatusOK {
			assert.NotEmpty(t, e.Error, url)
		}
	}
}

func TestConsole_Node(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{Auth: []console.Auth{{Scheme: "digest", Credential: "bob:pw"}}})
	conn := connect(t, srv.ConnectString())
	create := func(p string, data []byte, acl []zk.ACL) {
		t.Helper()
		_, err := conn.Create(p, data, 0, acl)
		require.NoError(t, err)
	}
	create("/json", []byte(`{"a":1,"b":[true,null]}`), zk.WorldACL(zk.PermAll))
	create("/text", []byte("hello\nworld"), zk.WorldACL(zk.PermRead))
	create("/bin", []byte{0, 1, 2, 0xff}, zk.WorldACL(zk.PermAll))
	create("/empty", nil, zk.WorldACL(zk.PermAll))
	create("/alice", []byte("hers"), zk.DigestACL(zk.PermAll, "alice", "pw"))
	create("/bobs", []byte("his"), append(zk.DigestACL(zk.PermRead|zk.PermWrite, "bob", "pw"), zk.DigestACL(zk.PermAll, "carol", "pw")...))

	var n console.Node
	require.Equal(t, http.StatusOK, get(t, base+"/api/node?path=/json", &n))
	assert.Equal(t, "json", n.Data.Format)
	assert.Equal(t, "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}", n.Data.Pretty)
	assert.Equal(t, int32(23), n.Stat.DataLength)
	assert.Equal(t, "0x0", n.Stat.EphemeralOwner)
	assert.Equal(t, []console.ACL{{Scheme: "world", ID: "anyone", Perms: "cdrwa"}}, n.ACL)
	assert.NotEmpty(t, n.Ctime)

	require.Equal(t, http.StatusOK, get(t, base+"/api/node?path=/text", &n))
	assert.Equal(t, "text", n.Data.Format)
	assert.Equal(t, "hello\nworld", n.Data.Text)
	assert.Equal(t, []console.ACL{{Scheme: "world", ID: "anyone", Perms: "r"}}, n.ACL)

	require.Equal(t, http.StatusOK, get(t, base+"/api/node?path=/bin", &n))
	assert.Equal(t, "binary", n.Data.Format)
	assert.Equal(t, "00000000  00 01 02 ff                                       |....|", n.Data.Hex)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), n.Data.Base64)

	require.Equal(t, http.StatusOK, get(t, base+"/api/node?path=/empty", &n))
	assert.Equal(t, "empty", n.Data.Format)

	// No READ for the console's identities: the Stat shows (as exists),
	// data and ACL do not.
	n = console.Node{}
	require.Equal(t, http.StatusOK, get(t, base+"/api/node?path=/alice", &n))
	assert.Nil(t, n.Data)
	assert.Contains(t, n.DataError, "READ")
	assert.Contains(t, n.ACLError, "READ or ADMIN")
	assert.Equal(t, int32(4), n.Stat.DataLength)

	// READ without ADMIN: the ACL's digests are masked, as for a client.
	require.Equal(t, http.StatusOK, get(t, base+"/api/node?path=/bobs", &n))
	assert.Equal(t, "his", n.Data.Text)
	assert.Equal(t, []console.ACL{{Scheme: "digest", ID: "bob:x", Perms: "rw"}, {Scheme: "digest", ID: "carol:x", Perms: "cdrwa"}}, n.ACL)

	var e apiErr
	assert.Equal(t, http.StatusNotFound, get(t, base+"/api/node?path=/none", &e))
	assert.Equal(t, "NONODE", e.Code)
	assert.Equal(t, http.StatusBadRequest, get(t, base+"/api/node?path=none", &e))
}

func TestConsole_Sessions(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	conn := connect(t, srv.ConnectString())
	for _, p := range []string{"/e2", "/e1"} {
		_, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	_, _, _, err := conn.GetW("/e1")
	require.NoError(t, err)
	_, _, _, err = conn.ChildrenW("/")
	require.NoError(t, err)

	var raw []map[string]any
	require.Equal(t, http.StatusOK, get(t, base+"/api/sessions", &raw))
	for _, s := range raw {
		assert.NotNil(t, s["ephemerals"], "a list, never null: %v", s)
		assert.NotNil(t, s["watches"], "a list, never null: %v", s)
	}
	// A session without ephemerals or watches of its own.
	connect(t, srv.ConnectString())
	var sessions []console.Session
	require.Equal(t, http.StatusOK, get(t, base+"/api/sessions", &sessions))
	require.Len(t, sessions, 2)
	i := slices.IndexFunc(sessions, func(s console.Session) bool { return s.ID == hexID(conn.SessionID()) })
	require.GreaterOrEqual(t, i, 0, "session %s in %v", hexID(conn.SessionID()), sessions)
	s := sessions[i]
	assert.Equal(t, []string{"/e1", "/e2"}, s.Ephemerals)
	assert.Equal(t, []console.Watch{{Path: "/", Kind: "child", Mode: "one-shot"}, {Path: "/e1", Kind: "data", Mode: "one-shot"}}, s.Watches)
	assert.Positive(t, s.TimeoutMs)
}

func hexID(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }

func TestConsole_Locks(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	holder := lockrecipe.NewMutex(connect(t, srv.ConnectString()), "/locks/job")
	require.NoError(t, holder.Lock(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sessions []int64
	for range 3 {
		conn := connect(t, srv.ConnectString())
		sessions = append(sessions, conn.SessionID())
		go lockrecipe.NewMutex(conn, "/locks/job").Lock(ctx) // ends with ctx
		// One at a time, so that the queue's order is known.
		srv.Inspect().WaitForChildren("/locks/job", len(sessions)+1)
	}
	var locks []console.LockQueue
	require.Equal(t, http.StatusOK, get(t, base+"/api/locks", &locks))
	require.Len(t, locks, 1)
	q := locks[0]
	assert.Equal(t, "/locks/job", q.Path)
	assert.Equal(t, "mutex", q.Recipe)
	require.Len(t, q.Nodes, 4)
	assert.True(t, q.Nodes[0].Holds)
	for i, n := range q.Nodes[1:] {
		assert.False(t, n.Holds)
		assert.Equal(t, hexID(sessions[i]), n.Session, "waiter %d in order of arrival", i)
		assert.Equal(t, q.Nodes[i].Name, n.Waits, "waiter %d waits for the node before it", i)
		assert.Contains(t, n.Name, "-lock-")
	}
}

// TestConsole_SemaphoreSaysWhoHoldsAndWhoWaits: a semaphore of one lease,
// held by one session; a second taker holds the semaphore's mutex and has
// its lease node, waiting for the lease to be released; a third waits for
// the mutex. Each node shows its data and where its session's client is.
func TestConsole_SemaphoreSaysWhoHoldsAndWhoWaits(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sessions []int64
	for i, name := range []string{"holder", "taker", "next"} {
		conn := connect(t, srv.ConnectString())
		sessions = append(sessions, conn.SessionID())
		sem := lockrecipe.NewSemaphore(conn, "/sem", 1, lockrecipe.WithData([]byte(name)))
		if i == 0 {
			_, err := sem.Acquire(ctx)
			require.NoError(t, err)
			continue
		}
		go sem.Acquire(ctx) // ends with ctx
		if i == 1 {
			srv.Inspect().WaitForChildren("/sem/leases", 2)
		} else {
			srv.Inspect().WaitForChildren("/sem/locks", 2)
		}
	}
	var locks []console.LockQueue
	require.Equal(t, http.StatusOK, get(t, base+"/api/locks", &locks))
	require.Len(t, locks, 2)
	byPath := map[string]console.LockQueue{locks[0].Path: locks[0], locks[1].Path: locks[1]}

	leases := byPath["/sem/leases"]
	assert.Equal(t, "semaphore leases", leases.Recipe)
	require.Len(t, leases.Nodes, 2)
	held, taking := leases.Nodes[0], leases.Nodes[1]
	assert.Equal(t, hexID(sessions[0]), held.Session)
	assert.True(t, held.Holds)
	assert.False(t, held.Taking)
	assert.Equal(t, "holder", held.Data)
	assert.Equal(t, hexID(sessions[1]), taking.Session)
	assert.False(t, taking.Holds, "the taker waits for a lease")
	assert.True(t, taking.Taking)
	assert.Equal(t, "taker", taking.Data)
	for _, n := range leases.Nodes {
		assert.Equal(t, 1, n.Member, "a standalone server is member 1")
		assert.Contains(t, n.Client, "127.0.0.1:")
	}

	mutex := byPath["/sem/locks"]
	assert.Equal(t, "mutex", mutex.Recipe)
	require.Len(t, mutex.Nodes, 2)
	assert.Equal(t, hexID(sessions[1]), mutex.Nodes[0].Session, "the taker holds the mutex")
	assert.True(t, mutex.Nodes[0].Holds)
	assert.Equal(t, hexID(sessions[2]), mutex.Nodes[1].Session)
	assert.False(t, mutex.Nodes[1].Holds)
	assert.Equal(t, "next", mutex.Nodes[1].Data)
}

func TestConsole_Cluster(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.Leader()
	require.GreaterOrEqual(t, leader, 0)
	follower := (leader + 1) % 3
	conn := connect(t, c.Addr(leader))
	_, err := conn.Create("/x", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	created := c.Server(leader).FSM().LastZxid()
	c.Inspect(follower).WaitForNode("/x")

	base := serve(t, c.Server(leader), console.Options{})
	var view console.Cluster
	// The followers report what they applied twice a tick, which changes
	// nothing the server could signal: poll until the leader has heard
	// that both applied the create.
	poll(t, "reports of the create from both followers", func() bool {
		require.Equal(t, http.StatusOK, get(t, base+"/api/cluster", &view))
		for _, m := range view.Members {
			if m.Applied < created {
				return false
			}
		}
		return true
	})
	assert.Equal(t, leader+1, view.Self)
	assert.Equal(t, leader+1, view.Leader)
	require.Len(t, view.Members, 3)
	for i, m := range view.Members {
		assert.Equal(t, i+1, m.ID)
		want := "follower"
		if i == leader {
			want = "leader"
		}
		assert.Equal(t, want, m.Role, "member %d", m.ID)
		assert.Equal(t, i == leader, m.Self)
		assert.GreaterOrEqual(t, m.Lag, int64(0))
	}
	assert.Equal(t, c.Addr(leader), view.Members[leader].Client)
	assert.Positive(t, view.Holds.Znodes)
	assert.Equal(t, 1, view.Holds.Sessions)

	// A follower shows every member as the leader sees it, with the
	// consoles the members said they have.
	c.Server(leader).SetConsoleURL("http://leader.example/console/")
	fbase := serve(t, c.Server(follower), console.Options{})
	c.Server(follower).SetConsoleURL(fbase + "/")
	require.Equal(t, http.StatusOK, get(t, fbase+"/api/cluster", &view))
	assert.Equal(t, follower+1, view.Self)
	assert.Equal(t, leader+1, view.Leader)
	assert.Equal(t, "leader", view.Members[leader].Role)
	for _, m := range view.Members {
		assert.GreaterOrEqual(t, m.Applied, created, "member %d", m.ID)
		assert.GreaterOrEqual(t, m.Lag, int64(0), "member %d", m.ID)
	}
	assert.Equal(t, "http://leader.example/console/", view.Members[leader].Console)
	assert.Equal(t, fbase+"/", view.Members[follower].Console)

	// Its sessions tab says where each client is connected: the session on
	// the leader, told by the leader.
	var sessions []console.Session
	require.Equal(t, http.StatusOK, get(t, fbase+"/api/sessions", &sessions))
	require.Len(t, sessions, 1)
	s := sessions[0]
	assert.Equal(t, hexID(conn.SessionID()), s.ID)
	assert.Equal(t, leader+1, s.Member)
	assert.Equal(t, conn.Server(), c.Addr(leader))
	assert.NotEmpty(t, s.Client)
	assert.GreaterOrEqual(t, s.ConnectedMsAgo, int64(0))
	assert.GreaterOrEqual(t, s.HeardMsAgo, int64(0))
	assert.Positive(t, s.ExpiresInMs)
	assert.LessOrEqual(t, s.ExpiresInMs, int64(s.TimeoutMs)+c.Server(leader).Config().TickTime.Milliseconds())
}

func TestConsole_EventsAfterCreate(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	ch := events(t, base)
	waitEvent(t, ch, "hello", func(name string, _ console.Event) bool { return name == "hello" })
	conn := connect(t, srv.ConnectString())
	waitEvent(t, ch, "the session", func(name string, e console.Event) bool { return name == "change" && e.Sessions })
	_, err := conn.Create("/fresh", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	waitEvent(t, ch, "the create of /fresh", func(name string, e console.Event) bool {
		return name == "change" && slices.Contains(e.Paths, "/fresh") && slices.Contains(e.Paths, "/")
	})
	_, err = conn.SetACL("/fresh", zk.WorldACL(zk.PermRead), -1)
	require.NoError(t, err)
	waitEvent(t, ch, "the setACL of /fresh", func(name string, e console.Event) bool {
		return name == "change" && slices.Equal(e.Paths, []string{"/fresh"})
	})
	_, _, _, err = conn.GetW("/fresh")
	require.NoError(t, err)
	waitEvent(t, ch, "the watch", func(name string, e console.Event) bool { return name == "change" && e.Watches })
}

func TestConsole_WritesRefusedWhenReadOnly(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{})
	var e apiErr
	assert.Equal(t, http.StatusForbidden, do(t, http.MethodPost, base+"/api/node", "application/json", `{"path":"/n"}`, &e))
	assert.Contains(t, e.Error, "read-only")
	assert.Equal(t, http.StatusForbidden, do(t, http.MethodPut, base+"/api/node?path=/", "application/json", `{"data":"x"}`, &e))
	assert.Equal(t, http.StatusForbidden, do(t, http.MethodDelete, base+"/api/node?path=/zookeeper", "", "", &e))
	assert.Nil(t, srv.Inspect().Node("/n"))
}

func TestConsole_WritesHonourACL(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := connect(t, srv.ConnectString())
	_, err := conn.Create("/alice", nil, 0, zk.DigestACL(zk.PermAll, "alice", "pw"))
	require.NoError(t, err)
	_, err = conn.Create("/open", []byte("v0"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	anon := serve(t, srv.Server, console.Options{Writes: true})
	alice := serve(t, srv.Server, console.Options{Writes: true, Auth: []console.Auth{{Scheme: "digest", Credential: "alice:pw"}}})

	var e apiErr
	assert.Equal(t, http.StatusForbidden, do(t, http.MethodPost, anon+"/api/node", "application/json", `{"path":"/alice/kid"}`, &e))
	assert.Contains(t, e.Error, "not authenticated")
	assert.Nil(t, srv.Inspect().Node("/alice/kid"))

	var created map[string]string
	require.Equal(t, http.StatusOK, do(t, http.MethodPost, alice+"/api/node", "application/json",
		`{"path":"/alice/kid","data":"aGk=","encoding":"base64","acl":[{"scheme":"digest","id":"alice:`+digest("alice:pw")+`","perms":"cdrwa"}]}`, &created))
	assert.Equal(t, "/alice/kid", created["path"])
	kid := srv.Inspect().Node("/alice/kid")
	require.NotNil(t, kid)
	assert.Equal(t, []byte("hi"), kid.Data)

	assert.Equal(t, http.StatusForbidden, do(t, http.MethodPut, anon+"/api/node?path=/alice/kid", "application/json", `{"data":"x"}`, &e))
	assert.Equal(t, http.StatusForbidden, do(t, http.MethodDelete, anon+"/api/node?path=/alice/kid", "", "", &e))
	require.Equal(t, http.StatusOK, do(t, http.MethodPut, alice+"/api/node?path=/alice/kid", "application/json", `{"data":"new","version":0}`, nil))
	assert.Equal(t, []byte("new"), srv.Inspect().Node("/alice/kid").Data)
	assert.Equal(t, http.StatusConflict, do(t, http.MethodPut, alice+"/api/node?path=/alice/kid", "application/json", `{"data":"x","version":0}`, &e))
	require.Equal(t, http.StatusOK, do(t, http.MethodDelete, alice+"/api/node?path=/alice/kid&version=1", "", "", nil))
	assert.Nil(t, srv.Inspect().Node("/alice/kid"))

	// An open node takes anyone's writes; a sequential create answers the
	// name the server gave.
	require.Equal(t, http.StatusOK, do(t, http.MethodPost, anon+"/api/node", "application/json", `{"path":"/open/s-","mode":"persistent_sequential"}`, &created))
	assert.Equal(t, "/open/s-0000000000", created["path"])
	assert.Equal(t, http.StatusNotFound, do(t, http.MethodDelete, anon+"/api/node?path=/none", "", "", &e))
	assert.Equal(t, http.StatusConflict, do(t, http.MethodPost, anon+"/api/node", "application/json", `{"path":"/open"}`, &e))
	assert.Equal(t, http.StatusConflict, do(t, http.MethodDelete, anon+"/api/node?path=/open", "", "", &e))
}

func TestConsole_WritesBadInput(t *testing.T) {
	srv := servertest.NewServer(t)
	base := serve(t, srv.Server, console.Options{Writes: true})
	for _, tc := range []struct {
		method, url, ctype, body string
		want                     int
	}{
		{"POST", "/api/node", "text/plain", `{"path":"/n"}`, http.StatusUnsupportedMediaType},
		{"POST", "/api/node", "application/json", `{"path":`, http.StatusBadRequest},
		{"POST", "/api/node", "application/json", `{"path":"/n","nope":1}`, http.StatusBadRequest},
		{"POST", "/api/node", "application/json", `{"path":"n"}`, http.StatusBadRequest},
		{"POST", "/api/node", "application/json", `{"path":"/n","mode":"ephemeral"}`, http.StatusBadRequest},
		{"POST", "/api/node", "application/json", `{"path":"/n","encoding":"rot13"}`, http.StatusBadRequest},
		{"POST", "/api/node", "application/json", `{"path":"/n","encoding":"base64","data":"!!"}`, http.StatusBadRequest},
		{"POST", "/api/node", "application/json", `{"path":"/n","acl":[{"scheme":"world","id":"anyone","perms":"rx"}]}`, http.StatusBadRequest},
		{"PUT", "/api/node?path=", "application/json", `{}`, http.StatusBadRequest},
		{"DELETE", "/api/node?path=/zookeeper&version=x", "", "", http.StatusBadRequest},
		{"PATCH", "/api/node?path=/", "application/json", `{}`, http.StatusMethodNotAllowed},
	} {
		req, err := http.NewRequest(tc.method, base+tc.url, strings.NewReader(tc.body))
		require.NoError(t, err)
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, "%s %s %s", tc.method, tc.url, tc.body)
	}
	assert.Nil(t, srv.Inspect().Node("/n"))
}

func TestConsole_NewRefusesBadAuth(t *testing.T) {
	srv := servertest.NewServer(t)
	_, err := console.New(console.FromServer(srv.Server), console.Options{Auth: []console.Auth{{Scheme: "ip", Credential: "1.2.3.4"}}})
	assert.ErrorIs(t, err, console.ErrBadAuth)
	_, err = console.ParseAuth("digest:nopassword")
	assert.ErrorIs(t, err, console.ErrBadAuth)
	a, err := console.ParseAuth("digest:bob:pw")
	require.NoError(t, err)
	assert.Equal(t, console.Auth{Scheme: "digest", Credential: "bob:pw"}, a)
}
