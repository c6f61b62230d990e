package integration

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestLimits_MultiReadReplyLargerThanQueueBound sends multiReads whose
// sub-ops all read the same large node (or list the same large parent):
// a request of a few kilobytes asks for a reply a thousand times larger.
// ZooKeeper 3.8 builds the whole reply (FinalRequestProcessor makes the
// MultiResponse, then serializes it into one buffer): with 1 MiB nodes
// and a request of jute.maxbuffer, 58000 sub-ops, that is 58 GB, an
// OutOfMemoryError. zkraft answers a multiRead whose reply fits in
// MaxQueuedBytes, and closes the connection of one that does not, without
// building it, as it closes one whose replies pile up past that bound.
func TestLimits_MultiReadReplyLargerThanQueueBound(t *testing.T) {
	const maxQueued = 8 << 20
	srv := servertest.NewServer(t, quiet, servertest.WithConfig(func(c *server.Config) { c.MaxQueuedBytes = maxQueued }))
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	s := mustRawSession(t, addr)
	s.create("/big", make([]byte, 512<<10))
	s.create("/wide", nil)
	var children []wire.MultiOp
	for i := range 1000 {
		children = append(children, createOp(fmt.Sprintf("/wide/%050d", i), nil))
	}
	s.mustMulti(children, wire.MaxBuffer)

	multiRead := func(op wire.Op, path string, n int) *wire.MultiRequest {
		m := &wire.MultiRequest{Ops: make([]wire.MultiOp, n)}
		for i := range m.Ops {
			m.Ops[i] = wire.MultiOp{Type: op, Req: &wire.PathWatchRequest{Path: path}}
		}
		return m
	}
	cases := []struct {
		name     string
		op       wire.Op
		path     string
		fit, big int // sub-ops whose reply fits in maxQueued, and a thousand times more
	}{
		{"getData of a 512 KiB node", wire.OpGetData, "/big", 10, 1000},
		{"getChildren of 1000 children", wire.OpGetChildren, "/wide", 100, 20000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := s.on(t)
			body := s.mustDo(wire.OpMultiRead, multiRead(tc.op, tc.path, tc.fit))
			assert.Len(t, mustDecode(t, body, &wire.MultiResponse{}).Results, tc.fit)

			c := mustRawSession(t, addr)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			allocated := ms.TotalAlloc
			c.send(wire.OpMultiRead, multiRead(tc.op, tc.path, tc.big))
			c.expectClosed()
			runtime.ReadMemStats(&ms)
			allocated = ms.TotalAlloc - allocated
			t.Logf("a multiRead of %d sub-ops cost %d kB", tc.big, allocated>>10)
			assert.Less(t, allocated, uint64(4*maxQueued), "bytes allocated for a reply never sent")
			healthy.mustProgress()
			mustPing(t, s.rawConn)
		})
	}
	healthy.finish()
}
