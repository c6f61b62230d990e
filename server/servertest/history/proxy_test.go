package history_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/server/servertest/history"
	"github.com/zkraft/zkraft/wire"
)

// plainConn connects a plain go-zookeeper client, one the Recorder knows
// nothing of, to hosts (a connect string such as Proxy returns) and waits
// for its session.
func plainConn(t *testing.T, hosts string, double bool) *zk.Conn {
	t.Helper()
	addrs := strings.Split(hosts, ",")
	if double {
		addrs = append(addrs, addrs...) // go-zookeeper fails queued requests with one address at every reconnect
	}
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			t.Fatalf("no session through %s", hosts)
		}
	}
	servertest.WaitClientSettled(t, conn)
	return conn
}

// client is what the scripted tests call: a *zk.Conn or a *history.Conn.
type client interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error)
	Delete(path string, version int32) error
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Get(path string) ([]byte, *zk.Stat, error)
	Exists(path string) (bool, *zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
	Sync(path string) (string, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

// shape is what an op recorded, without its places in time and its
// client's number.
type shape struct {
	Kind, Path, Data string
	Flags, Version   int32
	Watch            bool
	Outcome          history.Outcome
	Err              string
	Created          string
	Stat             *zk.Stat
	Result           string
	Names            []string
	Sub              []shape
}

// shapeOf takes op's shape; with versionsOnly, of its Stat only the
// versions and counts (which do not depend on the server's clock).
func shapeOf(op *history.Op, versionsOnly bool) shape {
	s := shape{Kind: op.Kind, Path: op.Path, Data: string(op.Data), Flags: op.Flags, Version: op.Version,
		Watch: op.Watch, Outcome: op.Outcome, Created: op.Created, Stat: op.Stat, Result: string(op.Result), Names: op.Names}
	if op.Err != nil {
		s.Err = op.Err.Error()
	}
	if s.Stat != nil && versionsOnly {
		s.Stat = &zk.Stat{Version: op.Stat.Version, Cversion: op.Stat.Cversion, NumChildren: op.Stat.NumChildren,
			DataLength: op.Stat.DataLength}
	}
	for _, sub := range op.Sub {
		s.Sub = append(s.Sub, shapeOf(sub, versionsOnly))
	}
	return s
}

// A plain *zk.Conn through the proxy is recorded call by call as the
// recording client records the same calls, failed ones included, and its
// history checks.
func TestProxy_RecordsAPlainClient(t *testing.T) {
	steps := []struct {
		name    string
		do      func(c client) error
		kind    string
		path    string
		outcome history.Outcome
		err     error
	}{
		{"create", func(c client) error { _, err := c.Create("/p", []byte("a"), 0, openACL); return err },
			"create", "/p", history.OK, nil},
		{"create again", func(c client) error { _, err := c.Create("/p", []byte("x"), 0, openACL); return err },
			"create", "/p", history.Failed, zk.ErrNodeExists},
		{"set", func(c client) error { _, err := c.Set("/p", []byte("b"), 0); return err },
			"set", "/p", history.OK, nil},
		{"set a stale version", func(c client) error { _, err := c.Set("/p", []byte("c"), 0); return err },
			"set", "/p", history.Failed, zk.ErrBadVersion},
		{"get", func(c client) error { _, _, err := c.Get("/p"); return err },
			"get", "/p", history.OK, nil},
		{"get a missing node", func(c client) error { _, _, err := c.Get("/none"); return err },
			"get", "/none", history.Failed, zk.ErrNoNode},
		{"exists", func(c client) error { _, _, err := c.Exists("/p"); return err },
			"exists", "/p", history.OK, nil},
		{"exists of a missing node", func(c client) error { _, _, err := c.Exists("/none"); return err },
			"exists", "/none", history.OK, nil},
		{"create sequential ephemeral", func(c client) error {
			_, err := c.Create("/p/seq-", []byte("s"), zk.FlagEphemeralSequential, openACL)
			return err
		}, "create", "/p/seq-", history.OK, nil},
		{"children", func(c client) error { _, _, err := c.Children("/p"); return err },
			"children", "/p", history.OK, nil},
		{"sync", func(c client) error { _, err := c.Sync("/p"); return err },
			"sync", "/p", history.OK, nil},
		{"multi", func(c client) error {
			_, err := c.Multi(&zk.CreateRequest{Path: "/p/m", Data: []byte("m"), Acl: openACL},
				&zk.SetDataRequest{Path: "/p", Data: []byte("d"), Version: 1})
			return err
		}, "multi", "", history.OK, nil},
		{"multi failing its check", func(c client) error {
			_, err := c.Multi(&zk.CheckVersionRequest{Path: "/p", Version: 99},
				&zk.DeleteRequest{Path: "/p/m", Version: -1})
			return err
		}, "multi", "", history.Failed, zk.ErrBadVersion},
		{"delete a node with children", func(c client) error { return c.Delete("/p", -1) },
			"delete", "/p", history.Failed, zk.ErrNotEmpty},
		{"delete", func(c client) error { return c.Delete("/p/m", -1) },
			"delete", "/p/m", history.OK, nil},
		{"create container", func(c client) error {
			_, err := c.CreateContainer("/box", nil, zk.FlagContainer, openACL)
			return err
		}, "create", "/box", history.OK, nil},
		{"create ttl", func(c client) error {
			_, err := c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, openACL, time.Minute)
			return err
		}, "create", "/ttl", history.OK, nil},
	}
	run := func(c client) {
		for _, s := range steps {
			err := s.do(c)
			if s.err == nil {
				require.NoError(t, err, s.name)
			} else {
				require.ErrorIs(t, err, s.err, s.name)
			}
		}
	}

	proxied := history.New()
	conn := plainConn(t, proxied.Proxy(t, servertest.NewServer(t).ConnectString()), true)
	run(conn)
	wrapped := history.New()
	run(connect(t, wrapped, servertest.NewServer(t).ConnectString()))

	ops := proxied.Ops()
	require.Len(t, ops, len(steps))
	for i, s := range steps {
		op := &ops[i]
		assert.Equal(t, s.kind, op.Kind, s.name)
		assert.Equal(t, s.path, op.Path, s.name)
		assert.Equal(t, s.outcome, op.Outcome, s.name)
		assert.ErrorIs(t, op.Err, s.err, s.name)
		assert.Equal(t, 0, op.Client, s.name)
		assert.Equal(t, conn.SessionID(), op.Session, s.name)
		assert.False(t, op.Pending, s.name)
		assert.Less(t, op.Call, op.Return, s.name)
		if i > 0 {
			assert.Greater(t, op.Call, ops[i-1].Return, "%s: called after the previous call returned", s.name)
		}
	}
	assert.Equal(t, "/p/seq-0000000000", ops[8].Created)
	assert.Equal(t, []string{"seq-0000000000"}, ops[9].Names)
	assert.Nil(t, ops[7].Stat, "exists of a missing node: no Stat")
	require.Len(t, ops[12].Sub, 2)
	assert.ErrorIs(t, ops[12].Sub[0].Err, zk.ErrBadVersion)
	assert.Equal(t, history.Unknown, ops[12].Sub[1].Outcome, "the op after the failing one: runtime inconsistency")

	want := wrapped.Ops()
	require.Len(t, want, len(ops))
	for i := range ops {
		assert.Equal(t, shapeOf(&want[i], true), shapeOf(&ops[i], true), "%s: as the recording client records it", steps[i].name)
	}
	rep := proxied.Verify(t)
	assert.True(t, rep.OK())
	assert.Zero(t, rep.Undecoded)
	wrapped.Verify(t)
}

// Clients the Recorder hands out, connected through a Proxy of another
// Recorder, are recorded by both alike: every op, its results and Stats
// as the client saw them, and its watch events.
func TestProxy_RecordsWhatTheRecordingClientRecords(t *testing.T) {
	srv := servertest.NewServer(t)
	wrapped, proxied := history.New(), history.New()
	hosts := proxied.Proxy(t, srv.ConnectString())
	workload(t, wrapped, []string{hosts}, 4, 100)
	assert.True(t, wrapped.Verify(t).OK())
	rep := proxied.Verify(t)
	t.Log(rep)
	assert.True(t, rep.OK())

	bySession := func(ops []history.Op) map[int64][]shape {
		out := map[int64][]shape{}
		for i := range ops {
			out[ops[i].Session] = append(out[ops[i].Session], shapeOf(&ops[i], false))
		}
		return out
	}
	want, got := bySession(wrapped.Ops()), bySession(proxied.Ops())
	assert.NotContains(t, want, int64(0), "no session changed under a call")
	require.Len(t, got, 5, "the setup client and four more, one client each")
	assert.Equal(t, want, got)

	watchEvents := func(evs []history.Event) map[int64][]string {
		out := map[int64][]string{}
		for _, ev := range evs {
			if ev.Type != zk.EventSession {
				out[ev.Session] = append(out[ev.Session], fmt.Sprint(ev.Type, " ", ev.Path))
			}
		}
		return out
	}
	// The proxy records an event as it forwards it, before the client's
	// callback runs.
	assert.Eventually(t, func() bool {
		return assert.ObjectsAreEqual(watchEvents(proxied.Events()), watchEvents(wrapped.Events()))
	}, 10*time.Second, 5*time.Millisecond)
	assert.NotEmpty(t, watchEvents(proxied.Events()), "the workload's watches fired")
}

// lockrecipe's Mutex on plain go-zookeeper clients through the proxy: its
// sequential ephemeral nodes' creates and deletes are in the history,
// which checks.
func TestProxy_RecordsLockrecipe(t *testing.T) {
	const sessions, rounds = 3, 5
	srv := servertest.NewServer(t)
	rec := history.New()
	hosts := rec.Proxy(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	var (
		wg         sync.WaitGroup
		holders    atomic.Int32
		overlapped atomic.Bool
	)
	errs := make(chan error, sessions*rounds)
	for range sessions {
		m := lockrecipe.NewMutex(plainConn(t, hosts, true), "/lock")
		wg.Go(func() {
			for range rounds {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if holders.Add(1) != 1 {
					overlapped.Store(true)
				}
				runtime.Gosched()
				holders.Add(-1)
				if err := m.Unlock(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.False(t, overlapped.Load(), "the lock was held by one session at a time")

	rep := rec.Verify(t)
	t.Log(rep)
	assert.True(t, rep.OK())
	created, deleted := map[string]bool{}, map[string]bool{}
	clients := map[int]bool{}
	for _, op := range rec.Ops() {
		clients[op.Client] = true
		switch {
		case op.Kind == "create" && op.Flags == zk.FlagEphemeralSequential && op.Outcome == history.OK:
			assert.True(t, strings.HasPrefix(op.Created, "/lock/_c_"), op.Created)
			assert.Contains(t, op.Created, "-lock-")
			created[op.Created] = true
		case op.Kind == "delete" && op.Outcome == history.OK:
			deleted[op.Path] = true
		}
	}
	assert.Len(t, clients, sessions, "one client per session")
	assert.Len(t, created, sessions*rounds, "a node per Lock")
	assert.Equal(t, created, deleted, "each deleted by its Unlock")
}

// A watch set through the proxy, and fired by another client's write,
// is recorded as an event of the watching client, before its next read.
func TestProxy_RecordsWatchEvents(t *testing.T) {
	cases := []struct {
		name  string
		setup bool // /w exists first
		watch func(c *zk.Conn) (<-chan zk.Event, error)
		fire  func(c *zk.Conn) error
		want  zk.EventType
		kind  string
	}{
		{"data", true, func(c *zk.Conn) (<-chan zk.Event, error) { _, _, ch, err := c.GetW("/w"); return ch, err },
			func(c *zk.Conn) error { _, err := c.Set("/w", []byte("2"), -1); return err },
			zk.EventNodeDataChanged, "get"},
		{"created", false, func(c *zk.Conn) (<-chan zk.Event, error) { _, _, ch, err := c.ExistsW("/w"); return ch, err },
			func(c *zk.Conn) error { _, err := c.Create("/w", nil, 0, openACL); return err },
			zk.EventNodeCreated, "exists"},
		{"deleted", true, func(c *zk.Conn) (<-chan zk.Event, error) { _, _, ch, err := c.GetW("/w"); return ch, err },
			func(c *zk.Conn) error { return c.Delete("/w", -1) },
			zk.EventNodeDeleted, "get"},
		{"children", true, func(c *zk.Conn) (<-chan zk.Event, error) { _, _, ch, err := c.ChildrenW("/w"); return ch, err },
			func(c *zk.Conn) error { _, err := c.Create("/w/c", nil, 0, openACL); return err },
			zk.EventNodeChildrenChanged, "children"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := servertest.NewServer(t)
			rec := history.New()
			hosts := rec.Proxy(t, srv.ConnectString())
			a, b := plainConn(t, hosts, true), plainConn(t, hosts, true)
			if tc.setup {
				_, err := b.Create("/w", []byte("1"), 0, openACL)
				require.NoError(t, err)
			}
			ch, err := tc.watch(a)
			require.NoError(t, err)
			require.NoError(t, tc.fire(b))
			select {
			case ev := <-ch:
				require.Equal(t, tc.want, ev.Type)
			case <-time.After(10 * time.Second):
				t.Fatal("the watch did not fire")
			}
			_, _, err = a.Exists("/w")
			require.NoError(t, err)

			var watch, read *history.Op
			for _, op := range rec.Ops() {
				if op.Session == a.SessionID() && op.Watch {
					watch = &op
				} else if op.Session == a.SessionID() {
					read = &op
				}
			}
			require.NotNil(t, watch)
			require.NotNil(t, read)
			assert.Equal(t, tc.kind, watch.Kind)
			var got []history.Event
			for _, ev := range rec.Events() {
				if ev.Client == watch.Client && ev.Type != zk.EventSession {
					got = append(got, ev)
				}
			}
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0].Type)
			assert.Equal(t, "/w", got[0].Path)
			assert.Equal(t, a.SessionID(), got[0].Session)
			assert.Greater(t, got[0].Seq, watch.Return)
			assert.Less(t, got[0].Seq, read.Return, "the event came before the reply to the read after it")
			rep := rec.Verify(t)
			assert.True(t, rep.OK())
		})
	}
}

// A request whose connection is lost before its reply is recorded as a
// client sees it: of unknown outcome, with zk.ErrConnectionClosed, and the
// client's connection lost in between. The client resumes its session
// through the proxy, still the same client, and the history checks
// whether or not the write happened.
func TestProxy_ConnectionLostWithARequestInFlight(t *testing.T) {
	cases := []struct {
		name  string
		fault servertest.Rule
		want  string // /x's data after
	}{
		{"reply lost", servertest.Rule{Fault: servertest.LoseReply}, "1"},
		{"closed before", servertest.Rule{Fault: servertest.CloseBefore}, "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := servertest.NewServer(t)
			rec := history.New()
			conn := plainConn(t, rec.Proxy(t, srv.ConnectString()), true)
			_, err := conn.Create("/x", []byte("0"), 0, openACL)
			require.NoError(t, err)
			rule := tc.fault
			rule.Ops, rule.Path, rule.Session = []wire.Op{wire.OpSetData}, "/x", conn.SessionID()
			srv.Faults().Add(rule)
			_, err = conn.Set("/x", []byte("1"), -1)
			require.ErrorIs(t, err, zk.ErrConnectionClosed)

			var data []byte
			require.Eventually(t, func() bool {
				if _, err := conn.Sync("/x"); err != nil {
					return false
				}
				data, _, err = conn.Get("/x")
				return err == nil
			}, 10*time.Second, 10*time.Millisecond)
			assert.Equal(t, tc.want, string(data))

			ops := rec.Ops()
			var set *history.Op
			for i := range ops {
				assert.Equal(t, 0, ops[i].Client, "one session, one client")
				assert.Equal(t, conn.SessionID(), ops[i].Session)
				if ops[i].Kind == "set" {
					set = &ops[i]
				}
			}
			require.NotNil(t, set)
			assert.False(t, set.Pending)
			assert.Equal(t, history.Unknown, set.Outcome)
			assert.ErrorIs(t, set.Err, zk.ErrConnectionClosed)
			var lost, resumed bool
			for _, ev := range rec.Events() {
				if ev.Type != zk.EventSession || ev.Client != 0 || ev.Seq < set.Call {
					continue
				}
				switch ev.State {
				case zk.StateDisconnected:
					lost = lost || ev.Seq < set.Return
				case zk.StateHasSession:
					resumed = true
				}
			}
			assert.True(t, lost, "the connection was lost while the set was out")
			assert.True(t, resumed, "the session was resumed")
			rep := rec.Verify(t)
			assert.True(t, rep.OK())
		})
	}
}

// A client given the proxies of a cluster's members fails over between
// them as between the members: it resumes its session on another member,
// and is still the same client.
func TestProxy_FailsOverBetweenMembers(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	rec := history.New()
	hosts := rec.Proxy(t, c.Addr(0), c.Addr(1), c.Addr(2))
	proxies := strings.Split(hosts, ",")
	conn := plainConn(t, hosts, false)
	_, err := conn.Create("/f", []byte("0"), 0, openACL)
	require.NoError(t, err)
	before := slices.Index(proxies, conn.Server())
	require.GreaterOrEqual(t, before, 0, "connected through a proxy: %s", conn.Server())

	c.DropClientConnections(before)
	require.Eventually(t, func() bool {
		_, err := conn.Set("/f", []byte("1"), -1)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	after := slices.Index(proxies, conn.Server())
	assert.NotEqual(t, before, after, "moved to another member's proxy")
	_, err = conn.Sync("/f")
	require.NoError(t, err)
	data, _, err := conn.Get("/f")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))

	for _, op := range rec.Ops() {
		assert.Equal(t, 0, op.Client)
		assert.Equal(t, conn.SessionID(), op.Session)
	}
	servers := map[string]bool{}
	for _, ev := range rec.Events() {
		if ev.State == zk.StateHasSession {
			servers[ev.Server] = true
		}
	}
	assert.Equal(t, map[string]bool{c.Addr(before): true, c.Addr(after): true}, servers)
	rep := rec.Verify(t)
	assert.True(t, rep.OK())
}

// As TestRecorder_WrongHistoryFails, through the proxy: a fault rule
// answers the client's synced read of a node it created, and that
// another client set, with NONODE, and the checker must reject the
// history.
func TestProxy_WrongHistoryFails(t *testing.T) {
	srv := servertest.NewServer(t)
	rec := history.New()
	hosts := rec.Proxy(t, srv.ConnectString())
	a, b := plainConn(t, hosts, true), plainConn(t, hosts, true)
	_, err := a.Create("/x", []byte("1"), 0, openACL)
	require.NoError(t, err)
	_, err = b.Set("/x", []byte("2"), 0)
	require.NoError(t, err)
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpGetData}, Path: "/x", Session: a.SessionID(),
		Fault: servertest.FailWith(wire.CodeNoNode)})
	_, err = a.Sync("/x")
	require.NoError(t, err)
	_, _, err = a.Get("/x")
	require.ErrorIs(t, err, zk.ErrNoNode, "the planted fault")

	tb := &fakeTB{TB: t}
	rep := rec.Verify(tb)
	require.False(t, rep.OK())
	assert.Equal(t, "Illegal", rep.Verdict)
	assert.Equal(t, []string{"/x"}, rep.Illegal)
	require.Len(t, rep.Violations, 1)
	assert.Equal(t, "read your writes", rep.Violations[0].Guarantee)
	require.Len(t, tb.errors, 1)
	t.Log(tb.errors[0])
	assert.Contains(t, tb.errors[0], `get(/x) -> zk: node does not exist`)
}

// What is not ZooKeeper's protocol goes through unchanged and unrecorded:
// a four-letter word is answered.
func TestProxy_ForwardsAFourLetterWord(t *testing.T) {
	srv := servertest.NewServer(t)
	rec := history.New()
	c, err := net.Dial("tcp", rec.Proxy(t, srv.ConnectString()))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Write([]byte("ruok"))
	require.NoError(t, err)
	answer, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "imok", string(answer))

	rec.AllowEmpty()
	rep := rec.Verify(t)
	assert.Zero(t, rep.Ops)
	assert.Positive(t, rep.Undecoded)
	assert.Contains(t, rep.String(), "could not be decoded")
}

// The proxy forwards any bytes unchanged, whatever it makes of them:
// in front of an echo server, a stream of requests, garbage frames and
// finally a length no frame has comes back as it was sent, in chunks of
// any size, and the recorder copes with what it read.
func TestProxy_ForwardsBytesUnchanged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var echoes sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		echoes.Wait()
	})
	echoes.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			echoes.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})

	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rec := history.New()
			stream := randomStream(rand.New(rand.NewPCG(seed, 1)))
			c, err := net.Dial("tcp", rec.Proxy(t, ln.Addr().String()))
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(c, int64(len(stream))))
				got <- b
			}()
			rnd := rand.New(rand.NewPCG(seed, 2))
			for rest := stream; len(rest) > 0; {
				n := min(len(rest), 1+rnd.IntN(300))
				_, err := c.Write(rest[:n])
				require.NoError(t, err)
				rest = rest[n:]
			}
			assert.True(t, bytes.Equal(stream, <-got), "the bytes came back unchanged")
			rep := rec.Check()
			assert.Positive(t, rep.Undecoded, "the garbage was counted")
		})
	}
}

// randomStream returns a client's stream as a fuzzer would write it: a
// connect request, then requests the proxy records, garbage frames, and
// at the end a length prefix out of range and bytes after it.
func randomStream(rnd *rand.Rand) []byte {
	frame := func(dst []byte, body func([]byte) []byte) []byte {
		dst, at := wire.StartFrame(dst)
		return wire.EndFrame(body(dst), at)
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.IntN(256))
		}
		return b
	}
	out := frame(nil, (&wire.ConnectRequest{TimeOut: 10000, SessionID: rnd.Int64(), Passwd: random(16)}).Append)
	for i := range 200 {
		xid := int32(rnd.IntN(8)) - 2
		path := fmt.Sprint("/r", i) // a znode each: the check stays small, whatever the outcomes read
		var rec wire.Record
		var op wire.Op
		switch rnd.IntN(6) {
		case 0:
			op, rec = wire.OpCreate, &wire.CreateRequest{Path: path, Data: random(rnd.IntN(20)), ACL: wire.OpenACLUnsafe}
		case 1:
			op, rec = wire.OpSetData, &wire.SetDataRequest{Path: path, Data: random(rnd.IntN(20)), Version: -1}
		case 2:
			op, rec = wire.OpGetData, &wire.PathWatchRequest{Path: path, Watch: rnd.IntN(2) == 0}
		case 3:
			op, rec = wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
				{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: path, Version: -1}}}}
		case 4:
			out = frame(out, func(dst []byte) []byte { return append(dst, random(rnd.IntN(40))...) })
			continue
		default:
			op, rec = wire.Op(rnd.IntN(120)-12), &wire.PathRequest{Path: path}
		}
		out = frame(out, func(dst []byte) []byte {
			dst = wire.RequestHeader{Xid: xid, OpCode: op}.Append(dst)
			return rec.Append(dst)
		})
	}
	out = append(out, 0xff, 0xff, 0xff, 0x00)
	return append(out, random(1000)...)
}
