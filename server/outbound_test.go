package server

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/zkraft/zkraft/wire"
)

// newLoopbackConn returns a server connection over loopback TCP, whose
// writer goroutine starts when something is first queued for it, and the
// client's end. (Socket buffers are left as they are: a send buffer of a
// few KiB stalls loopback TCP for hundreds of milliseconds at a time.)
func newLoopbackConn(t testing.TB) (*conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	require.NoError(t, err)
	nc, err := ln.Accept()
	require.NoError(t, err)
	srv := &Server{cfg: DefaultConfig(), log: slog.New(slog.DiscardHandler)}
	c := srv.newConn(nc)
	require.NotNil(t, c.raw, "a TCP connection has a descriptor to write without waiting")
	t.Cleanup(func() {
		c.close("test over")
		client.Close()
		srv.group.Wait()
	})
	return c, client
}

// Frames queued for the writer goroutine (queue) and frames queued and
// flushed by other goroutines (queueFramed, flushNow), as replies and a
// fan-out's notifications are, reach the client whole, each once, in the
// order they were queued, while the client reads slowly enough that writes
// are cut short and left to the writer goroutine. Every 97th frame is
// large (150 KB, as a long list of children is), so that the queue spans
// several chunks and a large frame lands behind others.
func TestConn_WriteTurnKeepsQueueOrder(t *testing.T) {
	c, client := newLoopbackConn(t)
	const perSender, senders = 3000, 4
	var order sync.Mutex // numbers the frames in the order they are queued
	queued := sync.NewCond(&order)
	next := uint64(0)
	// The client reads 1000 frames behind, 2.5 MB: more than the socket
	// buffers hold, so flushes are cut short and the writer has to wait.
	payload := make([]byte, 150_000)
	sizeOf := func(n uint64) int {
		if n%97 == 0 {
			return len(payload)
		}
		return 1000
	}
	send := func(direct bool) {
		order.Lock()
		defer order.Unlock()
		body := binary.BigEndian.AppendUint64(nil, next)
		body = append(body, payload[:sizeOf(next)]...)
		next++
		queued.Broadcast()
		if !direct {
			c.queue(func(b []byte) []byte { return append(b, body...) })
			return
		}
		frame, start := wire.StartFrame(nil)
		frame = wire.EndFrame(append(frame, body...), start)
		require.True(t, c.queueFramed(frame))
	}
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for range perSender {
				direct := i%2 == 1
				send(direct)
				if direct {
					c.flushNow() // outside the order lock: flushes race the writer
				}
			}
		})
	}
	fr := wire.NewFrameReader(client, 1<<20)
	require.NoError(t, client.SetReadDeadline(time.Now().Add(time.Minute)))
	total := uint64(perSender * senders)
	for want := range total {
		if want%500 == 0 { // let the buffers fill: read only once 1000 more are queued
			order.Lock()
			for next < min(want+1000, total) {
				queued.Wait()
			}
			order.Unlock()
		}
		f, err := fr.Next()
		require.NoError(t, err, "frame %d", want)
		require.Len(t, f, 8+sizeOf(want))
		require.Equal(t, want, binary.BigEndian.Uint64(f), "frames in the order queued")
	}
	wg.Wait()
	// The last bytes are read before whoever wrote them (the writer
	// goroutine, it may be) gives the write turn back.
	require.Eventually(t, func() bool {
		c.omu.Lock()
		defer c.omu.Unlock()
		return !c.writing
	}, 10*time.Second, time.Millisecond, "the write turn given back")
	c.omu.Lock()
	defer c.omu.Unlock()
	assert.Empty(t, c.out)
	assert.Empty(t, c.full)
	assert.Zero(t, c.outBytes)
}

// A connection told to finish is closed once what was queued before is
// written, even when a flush holds the write turn at that moment.
func TestConn_FinishAfterFlush(t *testing.T) {
	c, client := newLoopbackConn(t)
	frame, start := wire.StartFrame(nil)
	frame = wire.EndFrame(append(frame, "last words"...), start)
	require.True(t, c.queueFramed(frame))
	buf, ok, _ := c.takeTurn() // a flush in progress
	require.True(t, ok)
	c.finish()
	n, err := c.writeNow(buf)
	require.NoError(t, err)
	if c.giveTurn(buf, n) {
		c.signal()
	}
	require.NoError(t, client.SetReadDeadline(time.Now().Add(time.Minute)))
	fr := wire.NewFrameReader(client, 1<<20)
	f, err := fr.Next()
	require.NoError(t, err)
	assert.Equal(t, "last words", string(f))
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		t.Fatal("the connection was not closed after its last frame")
	}
}

// A session that connects and pings has no writer goroutine: the reader
// writes the answers to both itself. The first reply that is not one
// starts the writer.
func TestConn_WriterStartsWithTheFirstReplyThatNeedsIt(t *testing.T) {
	srv, err := New(Config{ClientPortAddress: "127.0.0.1:0"})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		assert.ErrorIs(t, <-served, ErrServerClosed)
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Minute)))
	writers := func() int { return srv.group.Running(nil)["conn-writer"] }

	rawSession(t, c, 10*time.Second)
	for range 3 {
		ping(t, c)
	}
	assert.Equal(t, 1, srv.group.Running(nil)["conn-reader"])
	assert.Zero(t, writers(), "connected and pinged: no writer")

	writeFrame(t, c, func(b []byte) []byte {
		b = wire.RequestHeader{Xid: 1, OpCode: wire.OpExists}.Append(b)
		return (&wire.PathWatchRequest{Path: "/"}).Append(b)
	})
	var h wire.ReplyHeader
	_, err = h.Decode(readFrame(t, c))
	require.NoError(t, err)
	assert.Equal(t, int32(1), h.Xid)
	assert.Equal(t, wire.CodeOK, h.Err)
	assert.Equal(t, 1, writers(), "a reply started the writer")
	ping(t, c)
	assert.Equal(t, 1, writers(), "and only one")
}

// What a write turn's holder did not get written goes back to the head of
// the queue, before what was queued meanwhile, whatever chunks the queue
// has been cut into (large frames among small ones).
func TestConn_UnwrittenBytesGoBackToTheHead(t *testing.T) {
	c, _ := newLoopbackConn(t)
	var want []byte
	queue := func(size int, fill byte) {
		body := bytes.Repeat([]byte{fill}, size)
		_, ok := c.enqueue(func(b []byte) []byte { return append(b, body...) })
		require.True(t, ok)
		frame, start := wire.StartFrame(nil)
		want = append(want, wire.EndFrame(append(frame, body...), start)...)
	}
	queued := func() int {
		c.omu.Lock()
		defer c.omu.Unlock()
		return c.outBytes
	}
	queue(100_000, 'a') // a chunk of its own
	queue(1000, 'b')
	bufs, ok, _ := c.takeTurn()
	require.True(t, ok)
	require.Len(t, bufs, 2, "a large frame ends its chunk")
	require.Zero(t, queued(), "the turn's holder has the whole queue")
	taken := len(want)
	queue(70_000, 'c') // queued meanwhile: a chunk, then a chunk of small frames
	queue(1000, 'd')
	queue(1000, 'e')
	written := 100_000 + 10 // the first frame and a little of the second
	require.True(t, c.giveTurn(bufs, written), "bytes are left for the writer")
	require.Equal(t, len(want)-written, queued())

	bufs, ok, _ = c.takeTurn()
	require.True(t, ok)
	assert.Equal(t, want[written:], bytes.Join(bufs, nil), "the rest of the turn first, then what was queued meanwhile, in order")
	assert.Greater(t, len(want)-taken, outChunk, "what was queued meanwhile spans chunks")
	assert.False(t, c.giveTurn(bufs, len(want)-written), "everything written")
	assert.Zero(t, queued())
}

// A socket that takes a turn's first chunk whole and then nothing (EAGAIN)
// gets the second chunk next, not the first again.
func TestConn_WriteNowCountsTheChunksTakenBeforeASocketIsFull(t *testing.T) {
	c, _ := newLoopbackConn(t)
	var got []byte
	defer func(w func(uintptr, []byte) (int, error)) { sockWrite = w }(sockWrite)
	sockWrite = func(_ uintptr, b []byte) (int, error) {
		if len(got) > 0 {
			return 0, unix.EAGAIN
		}
		got = append(got, b...)
		return len(b), nil
	}
	var want []byte
	for _, size := range []int{outChunk, 1000} { // two chunks
		body := bytes.Repeat([]byte{byte(size)}, size)
		_, ok := c.enqueue(func(b []byte) []byte { return append(b, body...) })
		require.True(t, ok)
		frame, start := wire.StartFrame(nil)
		want = append(want, wire.EndFrame(append(frame, body...), start)...)
	}
	bufs, ok, _ := c.takeTurn()
	require.True(t, ok)
	require.Len(t, bufs, 2)
	n, err := c.writeNow(bufs)
	require.NoError(t, err)
	require.Equal(t, len(bufs[0]), n, "the first chunk, taken whole")
	require.True(t, c.giveTurn(bufs, n))
	bufs, ok, _ = c.takeTurn()
	require.True(t, ok)
	assert.Equal(t, want[len(got):], bytes.Join(bufs, nil), "the second chunk is what is left")
	assert.Equal(t, want, append(got, bytes.Join(bufs, nil)...))
}

// MaxQueuedBytes bounds what a connection holds for its client, the bytes
// a writer stuck on a slow socket took with its turn included: a client
// that reads nothing cannot make the server hold twice the bound.
func TestConn_QueueBoundCountsTheTurnsBytes(t *testing.T) {
	c, _ := newLoopbackConn(t)
	c.srv.cfg.MaxQueuedBytes = 100_000
	queue := func(size int) bool {
		body := make([]byte, size)
		_, ok := c.enqueue(func(b []byte) []byte { return append(b, body...) })
		return ok
	}
	require.True(t, queue(60_000))
	_, ok, _ := c.takeTurn() // a writer takes it, and waits on a socket that takes nothing
	require.True(t, ok)
	require.True(t, queue(30_000), "90 KB held: under the bound")
	assert.False(t, queue(20_000), "110 KB held: over it")
	select {
	case <-c.done:
	default:
		t.Fatal("the connection stays open past the bound")
	}
}
