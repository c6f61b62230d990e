package server

import (
	"errors"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zkraft/zkraft/server/internal/sockio"
	"github.com/zkraft/zkraft/wire"
)

// A connection's outbound side. Replies and notifications are appended to
// its queue (conn.full, then conn.out), which never blocks, and written to the socket by
// whichever goroutine holds the connection's write turn (conn.writing):
// its writer goroutine (writeLoop, started by the first signal), woken for
// each reply; or, for a watch fan-out, one of the few goroutines that flush
// the notified connections (Server.flushAsync), or the applying goroutine
// at the end of Raft's batch (Server.BatchApplied), which write each socket
// once, without waiting, and wake the writer goroutine only for what did
// not fit; or the reader, for the answer to a connect or a ping. Only the
// turn's holder writes, and it always takes the whole queue, so bytes go
// out in the order they were queued, whoever writes them.
//
// The queue is chunked: frames are appended to out until it holds
// outChunk bytes, then out joins the chunks before it (full) and the next
// frame starts a new one. So a large reply (a list of 100k children is
// megabytes) queued behind another is not copied into a larger buffer, and
// whatever part of the queue a socket did not take goes back to its head
// as it is, without being copied to the front.

const (
	// writeTimeout bounds a write to a client that has to wait for room in
	// its socket.
	writeTimeout = 30 * time.Second
	// keptOutBuffer is the largest outbound buffer a connection keeps for
	// reuse once written; larger ones are given back.
	keptOutBuffer = 64 << 10
	// outChunk is how many bytes the queue's last chunk (conn.out) holds
	// before the next frame starts a new one.
	outChunk = 64 << 10
)

// queue appends one frame, built by body, to the outbound queue and wakes the
// writer, and returns the frame's size (0 if the connection is closing). It
// never blocks; a client that lets too much pile up is closed.
func (c *conn) queue(body func([]byte) []byte) int {
	size, ok := c.enqueue(body)
	if ok {
		c.signal()
	}
	return size
}

// queueAndWrite appends one frame, built by body, and writes the queue at
// once as far as the socket takes it, if no other goroutine has the write
// turn, waking the writer goroutine only for what is left: for a frame
// the reader goroutine sends itself (the answer to a connect, or to a
// ping), one goroutine hand-off fewer, and an idle session needs no writer
// goroutine. The write turn keeps the queue's order.
func (c *conn) queueAndWrite(body func([]byte) []byte) {
	if _, ok := c.enqueue(body); ok {
		c.flushNow()
	}
}

// enqueue appends one frame, built by body, to the outbound queue without
// waking anyone, and returns its size and whether it is queued for
// writing (not if the connection is closing, or the queue overflowed and
// the connection was closed).
func (c *conn) enqueue(body func([]byte) []byte) (int, bool) {
	c.omu.Lock()
	if c.closed || c.finishing {
		c.omu.Unlock()
		return 0, false
	}
	c.nextChunk()
	var start int
	c.out, start = wire.StartFrame(c.out)
	c.out = body(c.out)
	c.out = wire.EndFrame(c.out, start)
	size := len(c.out) - start
	c.outBytes += size
	over := c.outBytes+c.turnBytes > c.srv.cfg.MaxQueuedBytes
	c.omu.Unlock()
	c.stats.sentOne()
	c.srv.stats.queued(size, 1)
	return size, !c.overflowed(over)
}

// queueFramed appends a frame built beforehand (one notification, the
// same for every watcher) without waking the writer: the caller flushes
// the connection. It reports whether the frame was queued; the caller
// counts it in the server's figures.
func (c *conn) queueFramed(frame []byte) bool {
	c.omu.Lock()
	if c.closed || c.finishing {
		c.omu.Unlock()
		return false
	}
	c.appendLocked(frame)
	over := c.outBytes+c.turnBytes > c.srv.cfg.MaxQueuedBytes
	c.omu.Unlock()
	c.stats.sentOne()
	return !c.overflowed(over)
}

// appendLocked appends bytes already framed to the queue. omu is held.
func (c *conn) appendLocked(b []byte) {
	c.nextChunk()
	c.out = append(c.out, b...)
	c.outBytes += len(b)
}

// nextChunk starts a new last chunk if out holds outChunk bytes. omu is
// held.
func (c *conn) nextChunk() {
	if len(c.out) >= outChunk {
		c.full = append(c.full, c.out)
		c.out = nil
	}
}

// overflowed closes the connection if its queue went over MaxQueuedBytes.
func (c *conn) overflowed(over bool) bool {
	if over {
		c.log.Warn("closing connection: client is not reading its replies", "max_queued_bytes", c.srv.cfg.MaxQueuedBytes)
		c.close("outbound queue full")
	}
	return over
}

func (c *conn) signal() {
	if !c.writer.Load() && c.writer.CompareAndSwap(false, true) {
		if !c.srv.goOwned("conn-writer", c.writeLoop) {
			c.close("server shutting down")
			return
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// finish closes the connection once everything queued has been written.
func (c *conn) finish() {
	c.omu.Lock()
	c.finishing = true
	c.ended.Store(true)
	c.omu.Unlock()
	c.signal()
}

// takeTurn takes the write turn and the queue, if the queue holds bytes
// and nobody has the turn. finished reports a finishing connection whose
// queue is written. The chunks returned are the turn holder's until it
// gives the turn back.
func (c *conn) takeTurn() (bufs [][]byte, ok, finished bool) {
	c.omu.Lock()
	defer c.omu.Unlock()
	if c.writing || c.closed {
		return nil, false, false
	}
	if c.outBytes == 0 {
		return nil, false, c.finishing
	}
	c.writing = true
	bufs = append(append(c.turn[:0], c.full...), c.out)
	c.turnBytes = c.outBytes
	c.full, c.out, c.spare, c.outBytes = reuseChunks(c.full), c.spare[:0], nil, 0
	return bufs, true, false
}

// giveTurn gives the write turn back after n bytes of bufs were written;
// the rest goes back to the head of the queue. It reports whether the
// queue needs the writer goroutine: bytes left or queued meanwhile, or a
// connection to finish.
func (c *conn) giveTurn(bufs [][]byte, n int) (more bool) {
	c.omu.Lock()
	defer c.omu.Unlock()
	if i, off := unwritten(bufs, n); i < len(bufs) {
		bufs[i] = bufs[i][off:]
		c.full = slices.Concat(bufs[i:], c.full)
		c.outBytes += c.turnBytes - n
	} else if last := bufs[len(bufs)-1]; cap(last) <= keptOutBuffer { // a burst of large replies does not stay with an idle client
		c.spare = last[:0]
	}
	c.turn = reuseChunks(bufs)
	c.turnBytes = 0
	c.writing = false
	return c.outBytes > 0 || c.finishing
}

// unwritten returns where the bytes of bufs after the first n start: the
// index of their chunk (len(bufs) if none are left) and the offset in it.
func unwritten(bufs [][]byte, n int) (i, off int) {
	for i < len(bufs) && n >= len(bufs[i]) {
		n -= len(bufs[i])
		i++
	}
	return i, n
}

// keptChunks is the longest list of chunks a connection keeps for reuse
// once written: after a burst of thousands, an idle client does not keep
// the list.
const keptChunks = 32

// reuseChunks returns bufs emptied for reuse, or nil if it is long.
func reuseChunks(bufs [][]byte) [][]byte {
	if cap(bufs) > keptChunks {
		return nil
	}
	clear(bufs)
	return bufs[:0]
}

// sockWrite writes to a socket without waiting (sockio.Write); a test
// replaces it to have a socket take some chunks whole and then nothing.
var sockWrite = sockio.Write

// writeLoop is the connection's writer goroutine: woken when something is
// queued, it writes the queue unless another goroutine has the turn (that
// one wakes it again when it gives the turn back with bytes left).
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		for {
			bufs, ok, finished := c.takeTurn()
			if finished {
				c.close("finished")
				return
			}
			if !ok {
				break
			}
			n, err := c.writeAll(bufs)
			if err != nil {
				c.close("write: " + err.Error())
				return
			}
			c.giveTurn(bufs, n)
		}
	}
}

// writeAll writes bufs, waiting for room in the socket if it must, and
// returns how many bytes it wrote: all of them, unless it fails.
func (c *conn) writeAll(bufs [][]byte) (int, error) {
	var n int
	if c.raw != nil {
		var err error
		if n, err = c.writeNow(bufs); err != nil {
			return n, err
		}
	}
	deadline := false
	i, off := unwritten(bufs, n)
	for _, b := range bufs[i:] {
		b, off = b[off:], 0
		if len(b) == 0 {
			continue
		}
		if !deadline {
			c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			deadline = true
		}
		m, err := c.nc.Write(b)
		n += m
		if err != nil {
			return n, err
		}
	}
	if deadline && c.raw != nil {
		// writeNow must not find this deadline expired once the socket is idle.
		c.nc.SetWriteDeadline(time.Time{})
	}
	return n, nil
}

// writeNow writes what the socket takes of bufs at once, without waiting
// and without a deadline, and returns how many bytes that was.
func (c *conn) writeNow(bufs [][]byte) (int, error) {
	var n int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for _, b := range bufs {
			var m int
			m, werr = sockWrite(fd, b)
			n += m
			if werr != nil || m < len(b) {
				break
			}
		}
		return true // never wait here
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil // left to writeAll, which sets a deadline of its own
	case err != nil:
		return 0, err
	case werr == unix.EAGAIN:
		return n, nil
	case werr != nil:
		return 0, werr
	}
	return n, nil
}

// flushNow writes the connection's queue as far as its socket takes it
// without waiting, unless another goroutine has the turn, and wakes the
// writer goroutine for whatever is left.
func (c *conn) flushNow() {
	if c.raw == nil {
		c.signal()
		return
	}
	bufs, ok, _ := c.takeTurn()
	if !ok {
		return // the holder looks at the queue again when it gives the turn back
	}
	n, err := c.writeNow(bufs)
	if err != nil {
		c.close("write: " + err.Error())
		return
	}
	if c.giveTurn(bufs, n) {
		c.signal()
	}
}

// flushInline is how many connections a fan-out flushes on the applying
// goroutine itself; more are handed to a goroutine.
const flushInline = 4

// flushLater has the queues of connections a change just queued
// notifications on written out: many at once on another goroutine
// (flushAsync), a few by the applying goroutine once Raft's batch of
// commands is applied (BatchApplied), so that a watcher told of many changes
// in one batch, as a recursive watch or the watcher of a thousand expiring
// ephemerals is, gets them in one write rather than one each.
func (s *Server) flushLater(conns []*conn) {
	if len(conns) > flushInline {
		s.flushAsync(conns)
		return
	}
	s.toFlush = append(s.toFlush, conns...)
}

// BatchApplied implements raftfsm.BatchObserver: it writes out the queues
// flushLater left to the end of the batch. A connection listed twice finds
// its queue written the second time.
func (s *Server) BatchApplied() {
	for _, c := range s.toFlush {
		c.flushNow()
	}
	clear(s.toFlush)
	s.toFlush = s.toFlush[:0]
}

// flushAsync writes out the queues of conns on a goroutine of its own,
// each in turn, so that a change watched by thousands costs a goroutine
// per batch (watchRegistry.fire hands off batches of them while it
// queues the rest) and one write per watcher, not a writer goroutine woken
// for each. The notifications are already queued: what each connection
// receives, and in what order, does not depend on when it is flushed.
func (s *Server) flushAsync(conns []*conn) {
	if !s.goOwned("watch-flush", func() {
		for _, c := range conns {
			c.flushNow()
		}
	}) {
		for _, c := range conns { // shutting down: the writers close with their connections
			c.signal()
		}
	}
}

// socketReader is the reading side of a connection's socket for its
// FrameReader (wire.FrameReader.ReleaseIdle): a quiet session holds no read
// buffer while it waits for its next request. Only the connection's reader
// goroutine uses it.
type socketReader struct {
	raw syscall.RawConn
	try func(fd uintptr) bool // tryRead, bound once: a closure per read would be an allocation

	// One ReadIdle's: the buffer source, and what the read got.
	get  func() []byte
	put  func([]byte)
	buf  []byte
	n    int
	rerr error
}

func newSocketReader(raw syscall.RawConn) *socketReader {
	r := &socketReader{raw: raw}
	r.try = r.tryRead
	return r
}

// ReadIdle implements wire.IdleReader: it waits for the socket to be
// readable holding no buffer, as net.Conn's Read would wait, and honours the
// connection's read deadline and closing in the same way.
func (r *socketReader) ReadIdle(get func() []byte, put func([]byte)) ([]byte, int, error) {
	r.get, r.put = get, put
	err := r.raw.Read(r.try)
	buf, n, rerr := r.buf, r.n, r.rerr
	r.get, r.put, r.buf, r.rerr = nil, nil, nil, nil
	switch {
	case err != nil:
	case rerr != nil:
		err = os.NewSyscallError("read", rerr)
	case n <= 0:
		err = io.EOF
	default:
		return buf, n, nil
	}
	if buf != nil {
		put(buf)
	}
	return nil, 0, err
}

// tryRead reads what the socket holds into a buffer taken for it, or gives
// the buffer back and has RawConn wait until the socket is readable.
func (r *socketReader) tryRead(fd uintptr) bool {
	r.buf = r.get()
	r.n, r.rerr = sockio.Read(fd, r.buf)
	if r.rerr == unix.EAGAIN {
		r.put(r.buf)
		r.buf = nil
		return false // wait until readable, with no buffer
	}
	return true
}
