package integration

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestLimits_ChildrenReplyLargerThanJuteMaxBuffer lists a parent whose
// children's names add up to more than jute.maxbuffer. ZooKeeper 3.8
// checks the limit on what it reads (NIOServerCnxn.readLength), never on
// what it sends: FinalRequestProcessor answers getChildren with every
// name, and it is the client that may refuse the frame (the Java client
// checks its own jute.maxbuffer in ClientCnxnSocket.readLength: "Packet len
// N is out of range!", then reconnects; go-zookeeper reads any length). So
// does zkraft: the reply goes out whole and the connection stays open.
func TestLimits_ChildrenReplyLargerThanJuteMaxBuffer(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	s := mustRawSession(t, addr)

	const parent = "/huge"
	s.create(parent, nil)
	// 12000 names of 90 bytes: a reply of 1.13 MB.
	var ops []wire.MultiOp
	var want []string
	for i := range 12000 {
		name := fmt.Sprintf("child-%084d", i)
		want = append(want, name)
		ops = append(ops, createOp(parent+"/"+name, nil))
	}
	s.mustMulti(ops, wire.MaxBuffer)

	for _, op := range []wire.Op{wire.OpGetChildren, wire.OpGetChildren2} {
		xid := s.send(op, &wire.PathWatchRequest{Path: parent, Watch: true})
		s.nc.SetReadDeadline(time.Now().Add(waitTimeout))
		frame, err := s.fr.Next()
		require.NoError(t, err)
		assert.Greater(t, len(frame), wire.MaxBuffer, "the reply frame is larger than jute.maxbuffer")
		var h wire.ReplyHeader
		_, err = h.Decode(frame)
		require.NoError(t, err)
		require.Equal(t, xid, h.Xid)
		require.Equal(t, wire.CodeOK, h.Err)
		var names []string
		if op == wire.OpGetChildren {
			names = mustDecode(t, frame[wire.ReplyHeaderSize:], &wire.GetChildrenResponse{}).Children
		} else {
			names = mustDecode(t, frame[wire.ReplyHeaderSize:], &wire.GetChildren2Response{}).Children
		}
		slices.Sort(names) // want is sorted; ElementsMatch is quadratic
		assert.Equal(t, want, names)
		healthy.mustProgress()
	}
	mustPing(t, s.rawConn)

	// go-zookeeper reads it as any other reply.
	names, st, err := healthy.conn.Children(parent)
	require.NoError(t, err)
	assert.Len(t, names, len(want))
	assert.Equal(t, int32(len(want)), st.NumChildren)

	// The child watch set by the large reads fires.
	healthy.conn.Delete(parent+"/"+want[0], -1)
	s.expectEvents(childrenChanged(parent))
	healthy.finish()
}

// manyWatches is how many watches TestLimits_SessionWithManyWatches sets:
// 100000, or ZKRAFT_WATCHES (a million for the figures in the report).
func manyWatches(t testing.TB) int {
	v := os.Getenv("ZKRAFT_WATCHES")
	if v == "" {
		return 100000
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "ZKRAFT_WATCHES")
	return n
}

// TestLimits_SessionWithManyWatches has one session set very many watches
// (exist watches on missing nodes, set with setWatches as a client
// restoring them after a reconnect does). ZooKeeper 3.8 has no limit on
// watches (WatchManager keeps them in two hash maps, by path and by
// watcher), so neither has zkraft: the check is on the memory a watch
// costs, that the watches fire, that the other client is served, and that
// closing the session frees them all (watch_count back to 0 in mntr, as
// ZooKeeper's removeCnxn empties its tables).
func TestLimits_SessionWithManyWatches(t *testing.T) {
	srv := servertest.NewServer(t, quiet)
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	n := manyWatches(t)
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/w/%07d", i)
	}

	s := mustRawSession(t, addr)
	before := liveMemory()
	start := time.Now()
	for batch := range slices.Chunk(paths, 50000) { // 700 kB requests
		s.mustDo(wire.OpSetWatches, &wire.SetWatches{ExistWatches: batch})
	}
	took := time.Since(start)
	waitMntr(t, addr, "watch_count", int64(n))
	perWatch := (liveMemory() - before) / int64(n)
	t.Logf("%d watches set in %v, %d bytes of memory each", n, took, perWatch)
	assert.Less(t, perWatch, int64(1024), "bytes per watch")
	healthy.mustProgress()

	// Ten of them fire, in one write, and are used up.
	w := mustRawSession(t, addr)
	w.create("/w", nil)
	var ops []wire.MultiOp
	var events []watchEvent
	for _, p := range paths[:10] {
		ops = append(ops, createOp(p, nil))
		events = append(events, created(p))
	}
	w.mustMulti(ops, wire.MaxBuffer)
	s.expectEvents(events...)
	waitMntr(t, addr, "watch_count", int64(n-10))

	// Closing the session frees them all.
	s.mustDo(wire.OpCloseSession, nil)
	waitMntr(t, addr, "watch_count", 0)
	assert.Equal(t, "0 connections watching 0 paths\nTotal watches:0\n", fourLetterWord(t, addr, "wchs"))
	left := liveMemory() - before
	t.Logf("after the session closed: %d bytes of memory left of %d", left, perWatch*int64(n))
	assert.Less(t, left, perWatch*int64(n)/4, "most of the watches' memory is freed")
	healthy.finish()
}

// TestLimits_DeepPaths creates a chain of nodes 1000 deep and a node whose
// path fills a request frame. ZooKeeper 3.8 bounds neither depth nor path
// length (PathUtils.validatePath checks only the characters), only the
// request frame (NIOServerCnxn.readLength): a create whose parent is
// missing is NONODE, and a request longer than jute.maxbuffer closes the
// connection unanswered. zkraft does the same, and nothing in the tree
// walks the depth by recursion deep enough to matter (getAllChildrenNumber
// recurses once per level: 1000 small frames).
func TestLimits_DeepPaths(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	s := mustRawSession(t, addr)
	watcher := mustRawSession(t, addr)

	t.Run("1000 levels", func(t *testing.T) {
		s, watcher := s.on(t), watcher.on(t)
		const depth = 1000
		chain := make([]string, depth)
		var creates, deletes []wire.MultiOp
		var createdEvents, deletedEvents []watchEvent
		for i := range chain {
			chain[i] = strings.Repeat("/d", i+1)
			creates = append(creates, createOp(chain[i], nil))
			createdEvents = append(createdEvents, created(chain[i]))
		}
		watcher.mustDo(wire.OpAddWatch, &wire.AddWatchRequest{Path: "/d", Mode: wire.AddWatchModePersistentRecursive})
		s.mustMulti(creates, wire.MaxBuffer)
		watcher.expectEvents(createdEvents...)

		deepest := chain[depth-1]
		assert.Equal(t, int32(0), s.stat(deepest).NumChildren)
		body := s.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: chain[depth-2]})
		assert.Equal(t, []string{"d"}, mustDecode(t, body, &wire.GetChildrenResponse{}).Children)
		assert.Equal(t, int32(depth-1), s.allChildrenNumber("/d"))
		leaf := deepest + "/leaf"
		s.create(leaf, []byte("deep"))
		watcher.expectEvents(created(leaf))
		body = s.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: leaf})
		assert.Equal(t, "deep", string(mustDecode(t, body, &wire.GetDataResponse{}).Data))
		s.mustFail(wire.CodeNoNode, wire.OpCreate,
			&wire.CreateRequest{Path: leaf + "/no/parent", ACL: wire.OpenACLUnsafe})
		healthy.mustProgress()

		bottomUp := append([]string{leaf}, chain...)
		slices.Reverse(bottomUp[1:])
		for _, p := range bottomUp {
			deletes = append(deletes, wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: p, Version: -1}})
			deletedEvents = append(deletedEvents, deleted(p))
		}
		s.mustMulti(deletes, wire.MaxBuffer)
		watcher.expectEvents(deletedEvents...)
		s.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: "/d"})
	})

	t.Run("a path as long as a request frame allows", func(t *testing.T) {
		s := s.on(t)
		create := func(path string) *wire.CreateRequest {
			return &wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe}
		}
		overhead := wire.RequestHeaderSize + len(create("").Append(nil))
		long := "/" + strings.Repeat("x", wire.MaxBuffer-overhead-1)
		require.Equal(t, wire.MaxBuffer, wire.RequestHeaderSize+len(create(long).Append(nil)))

		body := s.mustDo(wire.OpCreate, create(long))
		assert.Equal(t, long, mustDecode(t, body, &wire.CreateResponse{}).Path)
		body = s.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: long, Watch: true})
		assert.Empty(t, mustDecode(t, body, &wire.GetDataResponse{}).Data)
		body = s.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: "/"})
		assert.Contains(t, mustDecode(t, body, &wire.GetChildrenResponse{}).Children, long[1:])
		healthy.mustProgress()

		// One byte more and the request is not read.
		over := mustRawSession(t, addr)
		over.sendRefused(func(b []byte) []byte {
			return create(long + "x").Append(wire.RequestHeader{Xid: 1, OpCode: wire.OpCreate}.Append(b))
		})
		over.expectClosed()
		s.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: long + "x"})

		s.mustDo(wire.OpDelete, &wire.DeleteRequest{Path: long, Version: -1}, deleted(long))
	})
	healthy.finish()
}
