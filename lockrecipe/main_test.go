package lockrecipe_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
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
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).sendSetWatches"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).resendZkAuth"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("time.Sleep"),
	)
}

// waitTimeout bounds every wait in these tests.
const waitTimeout = 20 * time.Second

// session is a go-zookeeper client that records every event it gets: the
// callback is called for each one, in order, where the event channel
// would drop them.
type session struct {
	*zk.Conn
	ready chan struct{} // closed at the first StateHasSession

	mu     sync.Mutex // guards events, once
	events []zk.Event
	once   bool
}

// newSession connects to addr with a 10s session, waits for the session,
// and closes the client at the end of the test.
func newSession(t testing.TB, addr string) *session {
	t.Helper()
	s := &session{ready: make(chan struct{})}
	// Each server is listed twice: go-zookeeper pauses a second before
	// trying a server again once it has tried them all, which a reconnect
	// to a single server would always do.
	servers := strings.Split(addr, ",")
	conn, _, err := zk.Connect(append(servers, servers...), 10*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(discard{}), zk.WithEventCallback(s.record))
	require.NoError(t, err)
	s.Conn = conn
	t.Cleanup(conn.Close)
	select {
	case <-s.ready:
	case <-time.After(waitTimeout):
		t.Fatalf("no session with %s within %v", addr, waitTimeout)
	}
	return s
}

func (s *session) record(ev zk.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	if ev.Type == zk.EventSession && ev.State == zk.StateHasSession && !s.once {
		s.once = true
		close(s.ready)
	}
}

// notifications returns the watch notifications the session got: node
// events, without session states and the EventNotWatching of a lost watch.
func (s *session) notifications() []zk.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.events), func(ev zk.Event) bool {
		return ev.Type == zk.EventSession || ev.Type == zk.EventNotWatching
	})
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// testContext returns a context that ends with the test or after
// waitTimeout.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// children lists the lock path's children, sorted; none if it is gone.
func children(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	names, _, err := conn.Children(path)
	if err == zk.ErrNoNode {
		return nil
	}
	require.NoError(t, err)
	slices.Sort(names)
	return names
}

// waitChildren waits until path has n children.
func waitChildren(t testing.TB, conn *zk.Conn, path string, n int) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		names, _, err := conn.Children(path)
		if err == zk.ErrNoNode {
			names, err = nil, nil
		}
		if err == nil && len(names) != n {
			c.Errorf("%s has %d children, want %d: %v", path, len(names), n, names)
		} else if err != nil {
			c.Errorf("children of %s: %v", path, err)
		}
	}, waitTimeout, 2*time.Millisecond)
}

// waitWatchers waits until the first server of addr reports, in its wchp
// four-letter word, at least n sessions watching path.
func waitWatchers(t testing.TB, addr, path string, n int) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		text, err := fourLetterWord(strings.Split(addr, ",")[0], "wchp")
		if err != nil {
			c.Errorf("wchp: %v", err)
			return
		}
		if got := watchersOf(text, path); got < n {
			c.Errorf("%s has %d watching sessions, want %d", path, got, n)
		}
	}, waitTimeout, 2*time.Millisecond)
}

// watchersOf counts the sessions wchp's text lists under path: a path's
// line is followed by one indented line per session watching it.
func watchersOf(wchp, path string) int {
	count, in := 0, false
	for line := range strings.Lines(wchp) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "\t"):
			if in {
				count++
			}
		default:
			in = line == path
		}
	}
	return count
}

// fourLetterWord sends a four-letter word to addr and returns the answer.
func fourLetterWord(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// wait waits for ch to close or receive.
func wait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("%s: not within %v", what, waitTimeout)
		var zero T
		return zero
	}
}

// uniquePath returns a lock path of its own for a test.
// It is unique across runs too, for a shared reference server.
func uniquePath(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "_", "=", "-").Replace(t.Name())
	return fmt.Sprintf("/lockrecipe-test/%s-%x", name, time.Now().UnixNano())
}
