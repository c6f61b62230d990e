package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestMaxClientCnxns checks maxClientCnxns: a connection from an address
// that already has the maximum is closed at once, without a byte sent,
// while the others keep working; once one of them closes, a new connection
// is accepted.
func TestMaxClientCnxns(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithConfig(func(c *server.Config) { c.MaxClientCnxns = 3 }))
	addr := srv.ConnectString()
	var live []*rawSession
	for range 3 {
		live = append(live, mustRawSession(t, addr))
	}

	dialRaw(t, addr).expectClosed()
	// One that sends its connect request at once gets no answer either.
	late := dialRaw(t, addr)
	b, start := wire.StartFrame(nil)
	late.nc.Write(wire.EndFrame(connectRequest().Append(b), start)) // may fail: the server may have closed already
	late.expectClosed()

	for i, s := range live {
		mustPing(t, s.rawConn)
		s.create(fmt.Sprintf("/live-%d", i), nil)
	}

	require.NoError(t, live[2].nc.Close())
	var fresh *rawConn
	waitCondition(t, "a connection accepted after one closed", func() error {
		var err error
		fresh, err = tryRawSession(t, addr)
		return err
	})
	mustPing(t, fresh)
	for _, s := range live[:2] {
		mustPing(t, s.rawConn)
	}
	dialRaw(t, addr).expectClosed()
}

// tryRawSession dials addr and opens a session, reporting (rather than
// failing on) a connection the server closes. A connection that works is
// closed by t.Cleanup.
func tryRawSession(t testing.TB, addr string) (*rawConn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{t: t, nc: nc, fr: wire.NewFrameReader(nc, 1<<20)}
	nc.SetDeadline(time.Now().Add(closeTimeout))
	frame, err := func() ([]byte, error) {
		b, start := wire.StartFrame(nil)
		if _, err := nc.Write(wire.EndFrame(connectRequest().Append(b), start)); err != nil {
			return nil, err
		}
		return c.fr.Next()
	}()
	if err != nil {
		nc.Close()
		return nil, err
	}
	var resp wire.ConnectResponse
	if _, err := resp.Decode(frame); err != nil || resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("no session: %v", err)
	}
	nc.SetDeadline(time.Time{})
	t.Cleanup(func() { nc.Close() })
	return c, nil
}

// TestSlowReaderDisconnected checks the bound on what the server queues for
// a client that does not read its replies (MaxQueuedBytes, set to 8 MiB
// here): a client asks 40 times for a node of almost 1 MiB and reads
// nothing. The server closes the
// connection once too much is queued (seen in srvr's connection count);
// the client then reads what the kernel buffers held, fewer than 200
// replies, and the end of the stream. Another session keeps working.
func TestSlowReaderDisconnected(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithConfig(func(c *server.Config) { c.MaxQueuedBytes = 8 << 20 }))
	addr := srv.ConnectString()
	other := mustRawSession(t, addr)

	// As much data as a create request frame can carry.
	const path = "/big"
	create := &wire.CreateRequest{Path: path, Data: []byte{}, ACL: wire.OpenACLUnsafe}
	overhead := wire.RequestHeaderSize + len(create.Append(nil))
	create.Data = bytes.Repeat([]byte{0xa5}, wire.MaxBuffer-overhead)
	other.mustDo(wire.OpCreate, create)
	size := len(create.Data)

	base := mustConnectionCount(t, addr)
	slow := mustRawSession(t, addr)
	const requests = 40 // 40 MiB: more than the limit and the kernel's socket buffers
	var burst []byte
	for i := range requests {
		var start int
		burst, start = wire.StartFrame(burst)
		burst = wire.RequestHeader{Xid: int32(i + 1), OpCode: wire.OpGetData}.Append(burst)
		burst = append(burst, pathWatch(path, false)...)
		burst = wire.EndFrame(burst, start)
	}
	slow.write(burst)
	waitCondition(t, "the server drops the connection that does not read", func() error {
		if n := mustConnectionCount(t, addr); n != base {
			return fmt.Errorf("%d connections, want %d", n, base)
		}
		return nil
	})

	// Only now read: what the kernel buffers held, then the end.
	replies := 0
	var err error
	for {
		slow.nc.SetReadDeadline(time.Now().Add(waitTimeout))
		var frame []byte
		if frame, err = slow.fr.Next(); err != nil {
			break
		}
		var h wire.ReplyHeader
		_, herr := h.Decode(frame)
		require.NoError(t, herr)
		require.Equal(t, wire.ReplyHeader{Xid: int32(replies + 1), Zxid: h.Zxid, Err: wire.CodeOK}, h)
		require.Len(t, frame, wire.ReplyHeaderSize+4+size+wire.StatSize)
		replies++
	}
	t.Logf("read %d replies of %d bytes before the end of the stream (%v)", replies, size, err)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET),
		"want the end of the stream or a reset, got %v", err)
	assert.Less(t, replies, requests, "the server gave up on the connection")

	// The rest of the server is unaffected.
	body := other.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: path})
	assert.Len(t, mustDecode(t, body, &wire.GetDataResponse{}).Data, size)
	mustPing(t, other.rawConn)
	mustPing(t, mustRawSession(t, addr).rawConn)
}

// TestSlowReaderDisconnectedByNotifications checks the same bound for
// watch notifications: a session sets 1536 data watches on nodes with 8 kB
// paths, then stops reading (with a small socket receive buffer) while
// another client changes every node, which queues 12 MiB of notifications
// for it. Writes fire watches without waiting for anyone (the writer's
// multis all complete), the connection is closed once MaxQueuedBytes (1 MiB
// here) is queued, its remaining watches go with it, and the healthy client
// is served throughout. ZooKeeper 3.8 queues notifications without a bound
// (NIOServerCnxn's outgoingBuffers), so there the server's memory grows
// instead: see server/DESIGN.md.
func TestSlowReaderDisconnectedByNotifications(t *testing.T) {
	const maxQueued = 1 << 20
	srv := servertest.NewServer(t, quiet, servertest.WithConfig(func(c *server.Config) { c.MaxQueuedBytes = maxQueued }))
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	w := mustRawSession(t, addr)
	w.create("/n", nil)
	paths := make([]string, 1536)
	var creates, sets []wire.MultiOp
	for i := range paths {
		paths[i] = fmt.Sprintf("/n/%04d-%s", i, strings.Repeat("x", 8000))
		creates = append(creates, createOp(paths[i], nil))
		sets = append(sets, wire.MultiOp{Type: wire.OpSetData,
			Req: &wire.SetDataRequest{Path: paths[i], Data: []byte("changed"), Version: -1}})
	}
	w.mustMulti(creates, wire.MaxBuffer)

	slow := mustRawSession(t, addr)
	// The kernel then holds little of what the server sends: most waits in
	// the server's queue.
	require.NoError(t, slow.nc.(*net.TCPConn).SetReadBuffer(32<<10))
	for chunk := range slices.Chunk(paths, 64) {
		var xids []int32
		for _, p := range chunk {
			xids = append(xids, slow.send(wire.OpGetData, &wire.PathWatchRequest{Path: p, Watch: true}))
		}
		for _, xid := range xids {
			h, _ := slow.expectReply(xid)
			require.Equal(t, wire.CodeOK, h.Err)
		}
	}
	base := mustConnectionCount(t, addr) // before any other four-letter word, whose connection may linger
	require.Equal(t, int64(len(paths)), mntrValue(t, addr, "watch_count"))

	// From here on the slow session reads nothing.
	w.mustMulti(sets, wire.MaxBuffer)
	healthy.mustProgress()
	waitCondition(t, "the server drops the connection that does not read its notifications", func() error {
		if n := mustConnectionCount(t, addr); n != base-1 {
			return fmt.Errorf("%d connections, want %d", n, base-1)
		}
		return nil
	})
	waitMntr(t, addr, "watch_count", 0) // its watches went with it

	// Only now read: what the kernel buffers held, then the end.
	events := 0
	for {
		slow.nc.SetReadDeadline(time.Now().Add(waitTimeout))
		frame, err := slow.fr.Next()
		if err != nil {
			t.Logf("read %d of %d notifications before the end of the stream (%v)", events, len(paths), err)
			assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET),
				"want the end of the stream or a reset, got %v", err)
			break
		}
		var h wire.ReplyHeader
		_, herr := h.Decode(frame)
		require.NoError(t, herr)
		require.Equal(t, wire.XidNotification, h.Xid)
		ev := mustDecode(t, frame[wire.ReplyHeaderSize:], &wire.WatcherEvent{})
		require.Equal(t, dataChanged(paths[events]), watchEvent{ev.Type, ev.Path}, "notifications in order")
		events++
	}
	assert.Less(t, events, len(paths), "the server gave up on the connection")
	healthy.finish()
}

// mustConnectionCount returns the connection count srvr reports, the srvr
// connection itself included.
func mustConnectionCount(t testing.TB, addr string) int64 {
	t.Helper()
	st, ok := zk.FLWSrvr([]string{addr}, closeTimeout)
	require.True(t, ok, "srvr: %v", st[0].Error)
	return st[0].Connections
}

// TestJuteMaxBufferConfigured checks a smaller jute.maxbuffer: a request
// frame up to the limit is answered; a larger one closes the connection
// without an answer, and the session can be resumed with nothing changed.
func TestJuteMaxBufferConfigured(t *testing.T) {
	const limit = 4096
	srv := servertest.NewServer(t, servertest.WithConfig(func(c *server.Config) { c.JuteMaxBuffer = limit }))
	addr := srv.ConnectString()
	const path = "/j"
	// setData frames of exactly size bytes: header, path, data, version.
	setData := func(size int) *wire.SetDataRequest {
		n := size - wire.RequestHeaderSize - (4 + len(path)) - 4 - 4
		return &wire.SetDataRequest{Path: path, Data: bytes.Repeat([]byte{'j'}, n), Version: -1}
	}
	require.Len(t, setData(5000).Append(nil), 5000-wire.RequestHeaderSize)

	c := mustRawSession(t, addr)
	c.create(path, nil)
	for _, size := range []int{4000, limit} {
		body := c.mustDo(wire.OpSetData, setData(size))
		st := mustDecode(t, body, &wire.StatResponse{}).Stat
		assert.Equal(t, int32(len(setData(size).Data)), st.DataLength, "frame of %d bytes", size)
	}
	want := c.stat(path)

	for _, size := range []int{5000, limit + 1} {
		t.Run(fmt.Sprintf("frame of %d bytes", size), func(t *testing.T) {
			s := mustRawSession(t, addr)
			s.send(wire.OpSetData, setData(size))
			s.expectClosed()
			resumed := s.mustResume()
			assert.Equal(t, want, resumed.stat(path), "nothing changed")
		})
	}
	mustPing(t, c.rawConn)
	assert.Equal(t, want, c.stat(path))
}
