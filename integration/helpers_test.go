package integration

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// waitTimeout bounds every wait for an event in these tests.
const waitTimeout = 10 * time.Second

// mustConnect connects a go-zookeeper client with a 5s session and waits
// until it has a session. The connection is closed by t.Cleanup.
func mustConnect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, events := mustConnectEvents(t, addr, 5*time.Second)
	go func() {
		for range events { // keep go-zookeeper's event channel drained
		}
	}()
	return c
}

// mustConnectEvents connects to addr (one address, or a comma-separated
// list) with the given session timeout and returns the session event
// channel, after the session is established.
func mustConnectEvents(t testing.TB, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect(strings.Split(addr, ","), timeout, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession)
	waitLoopSettled(t, c)
	return c, events
}

// waitState waits for a session state on a go-zookeeper event channel.
func waitState(t testing.TB, events <-chan zk.Event, want zk.State) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "event channel closed before %v", want)
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, waitTimeout)
		}
	}
}

// waitEvent waits for a watch event on ch.
func waitEvent(t testing.TB, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(waitTimeout):
		t.Fatal("no watch event within", waitTimeout)
		return zk.Event{}
	}
}

// waitLoopSettled waits until c's go-zookeeper loop has passed its
// re-sending of watches after the connect that gave it its session (it
// then waits in sync.(*WaitGroup).Wait until the connection ends), or has
// stopped. go-zookeeper v1.0.4 reads Conn.lastZxid there without the lock
// its receiver writes it under (go-zookeeper/zk#35, unfixed upstream): a
// test that sets a watch and gets a reply before the loop gets there
// makes -race report the client's own race (TestWatches_OnlyForReadersOfTheNode
// and TestContainersAndTTLNodesAreReaped each did once in a soak, about
// once in 300 runs). The loop's goroutine is found by its receiver in the
// stacks of all goroutines, as goleak reads them.
func waitLoopSettled(t testing.TB, c *zk.Conn) {
	t.Helper()
	frame := fmt.Sprintf("github.com/go-zookeeper/zk.(*Conn).loop(%p,", c)
	require.Eventually(t, func() bool { return loopSettled(frame) }, waitTimeout, time.Millisecond,
		"go-zookeeper's loop did not settle after connecting")
}

// loopSettled reports whether the goroutine with the given loop frame
// waits in sync.(*WaitGroup).Wait called by that frame, or is gone.
func loopSettled(frame string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if i := strings.Index(g, frame); i >= 0 {
			return strings.Contains(g[:i], "sync.(*WaitGroup).Wait(")
		}
	}
	return true
}
