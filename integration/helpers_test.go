package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
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

// waitLoopSettled is servertest.WaitClientSettled: see there why.
func waitLoopSettled(t testing.TB, c *zk.Conn) {
	t.Helper()
	servertest.WaitClientSettled(t, c)
}
