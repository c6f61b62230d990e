package integration

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// largestValue returns the size of the largest value a setData of path
// can carry in a request frame of limit bytes.
func largestValue(path string, limit int) int {
	return limit - wire.RequestHeaderSize - (4 + len(path)) - 4 - 4
}

// TestLimits_LargeValuesAtSpeed has four go-zookeeper clients write values
// of almost 1 MiB (a setData frame of exactly jute.maxbuffer) as fast as
// they can, concurrently, while a healthy client is served; then one
// writes a value a byte too large. ZooKeeper 3.8 takes any request up to
// jute.maxbuffer and closes the connection of one larger, unanswered and
// unapplied (NIOServerCnxn.readLength, "Len error"); the client sees its
// connection lost and resumes its session. So does zkraft.
func TestLimits_LargeValuesAtSpeed(t *testing.T) {
	srv := servertest.NewServer(t, quiet)
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	const writers, writes = 4, 6
	before := liveMemory()

	conns := make([]*zk.Conn, writers)
	for i := range conns {
		conns[i] = mustConnectPatient(t, addr)
		mustCreate(t, conns[i], fmt.Sprintf("/v-%d", i), nil)
	}
	size := largestValue("/v-0", wire.MaxBuffer)
	value := func(w, i int) []byte { return bytes.Repeat([]byte{byte(w*writes + i)}, size) }
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w, c := range conns {
		wg.Go(func() {
			for i := range writes {
				if _, err := c.Set(fmt.Sprintf("/v-%d", w), value(w, i), int32(i)); err != nil {
					errs <- fmt.Errorf("writer %d, write %d: %w", w, i, err)
					return
				}
			}
		})
	}
	healthy.mustProgress()
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d writes of %d bytes in %v: %.0f MB/s", writers*writes, size, took,
		float64(writers*writes*size)/took.Seconds()/1e6)
	for w := range writers {
		data, st, err := healthy.conn.Get(fmt.Sprintf("/v-%d", w))
		require.NoError(t, err)
		assert.Equal(t, int32(writes), st.Version)
		assert.True(t, bytes.Equal(value(w, writes-1), data), "the last value written")
	}
	// The data, and (in memory) the Raft log, which keeps up to 32 MiB of
	// writes until its next snapshot (TestLimits_RaftLogBoundedByBytes):
	// nothing else may grow with the writes.
	grown := liveMemory() - before
	t.Logf("memory grew by %d MB for %d MB written", grown>>20, writers*writes*size>>20)
	assert.Less(t, grown, int64((writers+writers*writes)*size+64<<20), "memory after the writes")

	// One byte more: the connection closes, nothing changes.
	c, rec := mustConnectRecorded(t, addr, 5*time.Second)
	_, err := c.Set("/v-0", make([]byte, size+1), -1)
	// The server closes as soon as it reads the length; whether the
	// client is still writing the frame then (a broken pipe or a reset) or
	// waiting for the reply (connection closed) is a race.
	assert.True(t, lostConnection(err), "the oversized write lost its connection, got %v", err)
	rec.waitState(t, zk.StateHasSession) // resumed
	_, st, err := c.Get("/v-0")
	require.NoError(t, err)
	assert.Equal(t, int32(writes), st.Version, "the oversized write was not applied")
	healthy.finish()
}

// TestLimits_RaftLogBoundedByBytes writes 300 values of 1 MiB to one node,
// on a standalone server, a durable one, and through a follower of a
// three-member cluster: the tree holds 1 MiB, and no member may hold the
// 300 in memory. An in-memory log is kept within a budget in bytes as well
// as in entries (member.logBudget), and a durable one's cache of the newest
// entries too (member.logCache); without them each member grew by 300 MB.
func TestLimits_RaftLogBoundedByBytes(t *testing.T) {
	tests := []struct {
		name    string
		members int
		start   func(t *testing.T) string // the address written to
	}{
		{"standalone", 1, func(t *testing.T) string { return servertest.NewServer(t, quiet).ConnectString() }},
		{"durable", 1, func(t *testing.T) string {
			return servertest.NewServer(t, quiet, servertest.WithDurable()).ConnectString()
		}},
		{"cluster follower", 3, func(t *testing.T) string {
			// Patient: 300 MB through loopback on a loaded machine must not
			// cost the leader its lease, which the test is not about.
			c := servertest.NewCluster(t, 3, quiet, servertest.WithConfig(func(c *server.Config) { c.RaftTimeout = time.Second }))
			return c.Addr((c.Leader() + 1) % 3)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustRawSession(t, tc.start(t))
			s.create("/v", nil)
			before := liveMemory()
			data := make([]byte, largestValue("/v", wire.MaxBuffer))
			for range 300 {
				s.mustDo(wire.OpSetData, &wire.SetDataRequest{Path: "/v", Data: data, Version: -1})
			}
			grown := liveMemory() - before
			t.Logf("memory grew by %d MB for 300 writes of 1 MiB to one node, %d member(s)", grown>>20, tc.members)
			assert.Less(t, grown, int64(tc.members)*128<<20, "memory after 300 writes of 1 MiB to one node")
		})
	}
}

// TestLimits_StandaloneMemoryPerZnode fills a standalone in-memory server
// with 100,000 znodes (100 parents x 1000 children, 16-character names,
// 32 bytes of data: zkload -fill's load) and bounds the live heap it grew
// by. The tree itself holds about 330 B a znode
// (tree.BenchmarkMemoryPerZnode); the server's Raft kept, besides, a copy
// of every node record for its latest snapshot and a log as large as a
// snapshot (1045 B a znode in all here), until a standalone server's
// snapshots, which no one reads, stopped capturing anything.
func TestLimits_StandaloneMemoryPerZnode(t *testing.T) {
	srv := servertest.NewServer(t, quiet)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	before := liveMemory()
	f := loadgen.Fill{Addr: srv.ConnectString(), Root: root, Parents: 100, Children: 1000, NameLen: 16, DataLen: 32,
		Sessions: 4, InFlight: 64}
	_, err = f.Run()
	require.NoError(t, err)
	perNode := float64(liveMemory()-before) / float64(f.Nodes())
	t.Logf("live heap grew by %.0f B a znode for %d znodes", perNode, f.Nodes())
	assert.Less(t, perNode, 650.0, "live heap per znode")
}

// multiCase is one large multi: its size and the jute.maxbuffer of the
// server it is sent to.
type multiCase struct {
	name   string
	limit  int  // jute.maxbuffer
	ops    int  // creates, or 0 for as many as fit in limit
	failAt bool // the last op fails: the multi changes nothing
	closed bool // the frame is over the limit: the connection closes
}

// TestLimits_MultiWithManyOps sends multis of very many creates. ZooKeeper
// 3.8 has no limit on the ops of a multi (MultiOperationRecord.deserialize
// reads them until the end marker), only on its frame, jute.maxbuffer
// (NIOServerCnxn.readLength): a multi that fits is applied as one
// transaction, or rolled back whole with a result per op if one fails; one
// that does not fit closes the connection, unanswered and unapplied.
// zkraft does the same; the memory the multi costs stays in proportion to
// the request, and a healthy client is served while it is applied.
func TestLimits_MultiWithManyOps(t *testing.T) {
	cases := []multiCase{
		{name: "as many creates as fit in jute.maxbuffer", limit: wire.MaxBuffer},
		{name: "30000 creates, jute.maxbuffer raised to 2 MiB", limit: 2 << 20, ops: 30000},
		{name: "30000 creates, the last failing", limit: 2 << 20, ops: 30000, failAt: true},
		{name: "100000 creates over jute.maxbuffer", limit: wire.MaxBuffer, ops: 100000, closed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runMultiCase(t, tc) })
	}
}

func runMultiCase(t *testing.T, tc multiCase) {
	srv := servertest.NewServer(t, quiet, servertest.WithConfig(func(c *server.Config) { c.JuteMaxBuffer = tc.limit }))
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	s := mustRawSession(t, addr)
	s.create("/m", nil)
	m := manyCreates(tc)
	frame := 4 + wire.RequestHeaderSize + len(m.Append(nil))
	require.Equal(t, tc.closed, frame > tc.limit, "frame of %d bytes", frame)
	before := liveMemory()
	start := time.Now()

	if tc.closed {
		b, at := wire.StartFrame(nil)
		b = wire.RequestHeader{Xid: 1, OpCode: wire.OpMulti}.Append(b)
		s.nc.Write(wire.EndFrame(m.Append(b), at)) // fails once the server has closed
		healthy.mustProgress()
		s.expectClosed()
		assert.Equal(t, int32(0), s.mustResume().stat("/m").NumChildren, "nothing created")
		healthy.finish()
		return
	}
	xid := s.send(wire.OpMulti, m)
	healthy.mustProgress()
	h, body := s.expectReply(xid)
	took := time.Since(start)
	require.Equal(t, wire.CodeOK, h.Err, "a multi's reply header is OK even when an op failed")
	results := mustDecode(t, body, &wire.MultiResponse{}).Results
	require.Len(t, results, len(m.Ops))
	created := int32(len(m.Ops))
	if tc.failAt {
		created = 0
		last := len(results) - 1
		assert.Equal(t, wire.MultiResult{Type: wire.OpError, Err: wire.CodeOK}, results[0])
		assert.Equal(t, wire.MultiResult{Type: wire.OpError, Err: wire.CodeNodeExists}, results[last])
	}
	assert.Equal(t, created, s.stat("/m").NumChildren)
	grown := liveMemory() - before
	t.Logf("%d ops in a frame of %d bytes: applied in %v; memory grew by %d bytes per op",
		len(m.Ops), frame, took, grown/int64(len(m.Ops)))
	assert.Less(t, grown, int64(len(m.Ops))*2048+int64(8*frame), "memory after the multi")
	healthy.finish()
}

// manyCreates builds the multi of tc: creates of /m/NNNNNN, the last
// recreating /m if tc.failAt.
func manyCreates(tc multiCase) *wire.MultiRequest {
	if tc.ops == 0 {
		ops := make([]wire.MultiOp, tc.limit/40)
		for i := range ops {
			ops[i] = createOp(fmt.Sprintf("/m/%06d", i), nil)
		}
		return multiChunks(ops, tc.limit)[0]
	}
	ops := make([]wire.MultiOp, tc.ops)
	for i := range ops {
		ops[i] = createOp(fmt.Sprintf("/m/%06d", i), nil)
	}
	if tc.failAt {
		ops[len(ops)-1] = createOp("/m", nil)
	}
	return &wire.MultiRequest{Ops: ops}
}
