package integration

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// Limits and abuse (issue 10, point 3): each test abuses one server in one
// way, checks that the server answers as ZooKeeper 3.8 does, that a
// healthy go-zookeeper client keeps being served meanwhile, and, where it
// matters, that the memory the abuse costs stays bounded.

// healthyDeadline bounds one create/get/delete round-trip of the healthy
// client while the server is being abused. A stalled server never
// answers; a busy one (a multi of 30000 ops holds the tree for its whole
// apply, as it must to apply it at once) may take seconds under -race on a
// loaded two-core machine.
const healthyDeadline = 10 * time.Second

// healthySessionTimeout is the healthy client's session timeout.
// go-zookeeper drops a connection that sends nothing for two thirds of it,
// so it is long enough for a busy server's pause (healthyDeadline).
const healthySessionTimeout = 15 * time.Second

// mustConnectPatient connects a go-zookeeper client with a session of
// healthySessionTimeout, as mustConnect does.
func mustConnectPatient(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, events := mustConnectEvents(t, addr, healthySessionTimeout)
	go func() {
		for range events { // keep go-zookeeper's event channel drained
		}
	}()
	return c
}

// healthyClient is a go-zookeeper session that does create/get/delete
// round-trips under /healthy, one every few milliseconds, for as long as a
// test runs. It records the first failure and the slowest round-trip.
type healthyClient struct {
	t      testing.TB
	conn   *zk.Conn
	stop   chan struct{}
	done   chan struct{}
	halt   sync.Once
	rounds atomic.Int64

	mu      sync.Mutex // guards err, slowest
	err     error
	slowest time.Duration
}

// startHealthyClient connects a healthy client to addr and starts its
// round-trips. The test ends with finish; t.Cleanup stops it anyway.
func startHealthyClient(t testing.TB, addr string) *healthyClient {
	t.Helper()
	h := &healthyClient{t: t, conn: mustConnectPatient(t, addr), stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := h.conn.Create("/healthy", nil, 0, openACL); err != nil && err != zk.ErrNodeExists {
		t.Fatalf("create /healthy: %v", err)
	}
	go h.run()
	t.Cleanup(h.stopNow)
	return h
}

func (h *healthyClient) run() {
	defer close(h.done)
	pace := time.NewTicker(5 * time.Millisecond)
	defer pace.Stop()
	for i := 0; ; i++ {
		select {
		case <-h.stop:
			return
		case <-pace.C:
		}
		start := time.Now()
		err := h.roundTrip(i)
		h.mu.Lock()
		h.slowest = max(h.slowest, time.Since(start))
		if err != nil {
			h.err = err
		}
		h.mu.Unlock()
		if err != nil {
			return
		}
		h.rounds.Add(1)
	}
}

func (h *healthyClient) roundTrip(i int) error {
	path := fmt.Sprintf("/healthy/n-%d", i)
	if _, err := h.conn.Create(path, []byte(path), 0, openACL); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	data, _, err := h.conn.Get(path)
	if err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	if string(data) != path {
		return fmt.Errorf("get %s: read %q", path, data)
	}
	if err := h.conn.Delete(path, -1); err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

func (h *healthyClient) failure() (error, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err, h.slowest
}

// mustProgress waits until the client has done two more round-trips: the
// server serves it now, while the test's abuse goes on.
func (h *healthyClient) mustProgress() {
	h.t.Helper()
	want := h.rounds.Load() + 2
	waitCondition(h.t, "the healthy client is served", func() error {
		if err, _ := h.failure(); err != nil {
			h.t.Fatalf("healthy client: %v", err)
		}
		if n := h.rounds.Load(); n < want {
			return fmt.Errorf("%d round-trips, want %d", n, want)
		}
		return nil
	})
}

func (h *healthyClient) stopNow() {
	h.halt.Do(func() { close(h.stop) })
	select {
	case <-h.done:
	case <-time.After(waitTimeout):
		h.t.Errorf("healthy client: a round-trip still hangs after %v", waitTimeout)
	}
}

// finish stops the client and checks that every round-trip succeeded
// within healthyDeadline.
func (h *healthyClient) finish() {
	h.t.Helper()
	h.mustProgress()
	h.stopNow()
	err, slowest := h.failure()
	assert.NoError(h.t, err, "healthy client")
	assert.Less(h.t, slowest, healthyDeadline, "the healthy client's slowest round-trip")
	h.t.Logf("healthy client: %d round-trips, slowest %v", h.rounds.Load(), slowest)
}

// liveMemory returns the bytes of live heap after a full collection, plus
// the goroutine stacks. The servers run in the test's process, so this is
// the server's memory plus the test's own.
func liveMemory() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// mntrValue returns one numeric value of a server's mntr output.
func mntrValue(t testing.TB, addr, key string) int64 {
	t.Helper()
	for line := range strings.Lines(mntr(t, addr)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "\t")
		if k == "zk_"+key {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err, "mntr %s", key)
			return n
		}
	}
	t.Fatalf("mntr has no zk_%s", key)
	return 0
}

// waitMntr waits until a server's mntr value key is want.
func waitMntr(t testing.TB, addr, key string, want int64) {
	t.Helper()
	waitCondition(t, fmt.Sprintf("mntr %s = %d", key, want), func() error {
		if n := mntrValue(t, addr, key); n != want {
			return fmt.Errorf("%s = %d", key, n)
		}
		return nil
	})
}

// createOp is a multi sub-op that creates a persistent node with an open ACL.
func createOp(path string, data []byte) wire.MultiOp {
	return wire.MultiOp{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe}}
}

// multiChunks splits ops into multis whose request frames fit in limit bytes.
func multiChunks(ops []wire.MultiOp, limit int) []*wire.MultiRequest {
	var out []*wire.MultiRequest
	size := limit // start a new multi at the first op
	for _, op := range ops {
		n := wire.MultiHeaderSize + len(op.Req.Append(nil))
		if size+n > limit {
			out = append(out, &wire.MultiRequest{})
			size = 4 + wire.RequestHeaderSize + wire.MultiHeaderSize // prefix, header, terminator
		}
		m := out[len(out)-1]
		m.Ops = append(m.Ops, op)
		size += n
	}
	return out
}

// mustMulti runs ops as as few multis as fit in jute.maxbuffer (limit), each
// of which must succeed.
func (s *rawSession) mustMulti(ops []wire.MultiOp, limit int) {
	s.t.Helper()
	for _, m := range multiChunks(ops, limit) {
		resp := mustDecode(s.t, s.mustDo(wire.OpMulti, m), &wire.MultiResponse{})
		require.Len(s.t, resp.Results, len(m.Ops))
		for i, r := range resp.Results {
			require.NotEqual(s.t, wire.OpError, r.Type, "sub-op %d: %v", i, r.Err)
		}
	}
}
