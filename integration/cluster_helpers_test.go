package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// fixedOrderHosts is a go-zookeeper HostProvider that tries its servers in
// the order given instead of a shuffled one, so that a test knows which
// member a client reaches first. Otherwise it behaves as go-zookeeper's
// DNSHostProvider: after a connection ends it moves on to the next server,
// and it reports retryStart (go-zookeeper then fails its unsent requests
// with ErrNoServer and pauses for a second) when it comes back round to the
// server it was last connected to.
type fixedOrderHosts struct {
	mu         sync.Mutex // guards curr, last
	servers    []string
	curr, last int
}

func newFixedOrderHosts(servers []string) *fixedOrderHosts {
	return &fixedOrderHosts{servers: servers, curr: -1, last: -1}
}

// Init ignores the list go-zookeeper passes, which it has shuffled.
func (h *fixedOrderHosts) Init([]string) error { return nil }

func (h *fixedOrderHosts) Len() int { return len(h.servers) }

func (h *fixedOrderHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *fixedOrderHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

// mustConnectInOrder connects a go-zookeeper client that tries hosts in the
// order given (the first one first), records all its events, and waits for
// its session. The client is closed by t.Cleanup.
func mustConnectInOrder(t testing.TB, hosts []string, timeout time.Duration) (*zk.Conn, *recorder) {
	t.Helper()
	rec := newRecorder()
	c, _, err := zk.Connect(hosts, timeout, zk.WithLogInfo(false), zk.WithLogger(discardLogger{}),
		zk.WithEventCallback(rec.add), zk.WithHostProvider(newFixedOrderHosts(hosts)))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	rec.waitState(t, zk.StateHasSession)
	waitLoopSettled(t, c)
	return c, rec
}

// addrsFrom returns the members' client addresses, starting with member
// first and going round.
func addrsFrom(c *servertest.Cluster, n, first int) []string {
	out := make([]string, n)
	for k := range n {
		out[k] = c.Addr((first + k) % n)
	}
	return out
}

// mustConnectEach connects one recorded client to each of the n members, in
// member order, each knowing only its member.
func mustConnectEach(t testing.TB, c *servertest.Cluster, n int, timeout time.Duration) ([]*zk.Conn, []*recorder) {
	t.Helper()
	conns, recs := make([]*zk.Conn, n), make([]*recorder, n)
	for i := range n {
		conns[i], recs[i] = mustConnectInOrder(t, []string{c.Addr(i)}, timeout)
	}
	return conns, recs
}

// lostConnection reports whether err says that a request's connection was
// lost before its reply came (whether or not the request took effect):
// go-zookeeper fails requests in flight with ErrConnectionClosed, unsent
// ones with ErrNoServer after a round of failed connects, and a request
// whose own write fails with that network error.
func lostConnection(err error) bool {
	if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// retryLost runs op until it ends with something other than a lost
// connection, for at most waitTimeout, and returns whether an attempt was
// lost on the way, and the last error.
func retryLost(op func() error) (lost bool, err error) {
	deadline := time.Now().Add(waitTimeout)
	for {
		err = op()
		if !lostConnection(err) || time.Now().After(deadline) {
			return lost, err
		}
		lost = true
	}
}

// mustCreateRetried creates a persistent node, retrying after lost
// connections. A retry may find the node made by an attempt whose reply was
// lost; then its data must be ours.
func mustCreateRetried(t testing.TB, c *zk.Conn, path string, data []byte) {
	t.Helper()
	lost, err := retryLost(func() error {
		_, err := c.Create(path, data, 0, openACL)
		return err
	})
	if lost && errors.Is(err, zk.ErrNodeExists) {
		err = nil
	}
	require.NoError(t, err, "create %s", path)
	var got []byte
	_, err = retryLost(func() (err error) {
		got, _, err = c.Get(path)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, string(data), string(got), "data of %s", path)
}

// mustSyncedChildren syncs c's member with the leader and lists path's children.
func mustSyncedChildren(t testing.TB, c *zk.Conn, path string) []string {
	t.Helper()
	_, err := c.Sync(path)
	require.NoError(t, err, "sync %s", path)
	kids, _, err := c.Children(path)
	require.NoError(t, err, "children of %s", path)
	return kids
}

// nodeEvents returns the node events (watch notifications) a recorder holds,
// without session events.
func nodeEvents(r *recorder) []zk.Event {
	var out []zk.Event
	for _, ev := range r.all() {
		if ev.Type != zk.EventSession {
			out = append(out, ev)
		}
	}
	return out
}

// nodeEvent is a watch notification as go-zookeeper delivers it.
func nodeEvent(typ zk.EventType, path string) zk.Event {
	return zk.Event{Type: typ, State: zk.StateSyncConnected, Path: path}
}

// waitCaughtUp waits until member i has applied as far as the leader and
// has the same tree.
func waitCaughtUp(t testing.TB, c *servertest.Cluster, i int) {
	t.Helper()
	waitCondition(t, fmt.Sprintf("member %d catches up with the leader", i), func() error {
		leader := c.Leader()
		if leader < 0 {
			return errors.New("no leader")
		}
		want, got := c.Server(leader).FSM(), c.Server(i).FSM()
		if wz, gz := want.LastZxid(), got.LastZxid(); wz != gz {
			return fmt.Errorf("at zxid %#x, the leader at %#x", gz, wz)
		}
		if want.Digest() != got.Digest() {
			return errors.New("same zxid as the leader, different tree")
		}
		return nil
	})
}

// countStates counts how often a recorder has seen a session state.
func countStates(r *recorder, state zk.State) int {
	n := 0
	for _, s := range r.sessionStates() {
		if s == state {
			n++
		}
	}
	return n
}

// mustKill kills member i. A member whose Close never returns would hang
// the test, and then its cleanup, until go test's -timeout; instead, if the
// kill takes longer than waitTimeout, the test binary stops at once with
// the goroutines that hold the member up.
func mustKill(t testing.TB, c *servertest.Cluster, i int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(waitTimeout):
			panic(fmt.Sprintf("%s: Kill(%d) did not return within %v; goroutines waiting on Raft or on the close:\n%s",
				t.Name(), i, waitTimeout, stacksMatching("raft.(*deferError).Error", "servertest.(*Cluster).Kill",
					"server.(*Server).Close")))
		}
	}()
	c.Kill(i)
	close(done)
}

// stacksMatching returns the stacks of the goroutines that mention any of
// the given strings.
func stacksMatching(subs ...string) string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, sub := range subs {
			if strings.Contains(g, sub) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}
