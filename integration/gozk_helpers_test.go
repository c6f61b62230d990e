package integration

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// openACL is world:anyone with every permission.
var openACL = zk.WorldACL(zk.PermAll)

// recorder keeps every event a go-zookeeper client reports, in order and
// without loss. go-zookeeper's own event channel holds 6 events and drops
// the rest; the callback installed by mustConnectRecorded is called
// synchronously for every event instead.
type recorder struct {
	mu   sync.Mutex
	evs  []zk.Event
	pos  int           // first event not yet consumed by the test
	wake chan struct{} // signalled after every add
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{}, 1)} }

func (r *recorder) add(ev zk.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// waitFor consumes events until one satisfies match and returns it. It
// fails the test if none arrives within waitTimeout.
func (r *recorder) waitFor(t testing.TB, what string, match func(zk.Event) bool) zk.Event {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for r.pos < len(r.evs) {
			ev := r.evs[r.pos]
			r.pos++
			if match(ev) {
				r.mu.Unlock()
				return ev
			}
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-deadline.C:
			t.Fatalf("no %s within %v; events so far: %v", what, waitTimeout, r.all())
			return zk.Event{}
		}
	}
}

// waitState consumes events until the session reaches state.
func (r *recorder) waitState(t testing.TB, state zk.State) {
	t.Helper()
	r.waitFor(t, "session state "+state.String(), func(ev zk.Event) bool {
		return ev.Type == zk.EventSession && ev.State == state
	})
}

// nextNode consumes events up to the next node event (a watch
// notification, or EventNotWatching) and returns it.
func (r *recorder) nextNode(t testing.TB) zk.Event {
	t.Helper()
	return r.waitFor(t, "node event", func(ev zk.Event) bool { return ev.Type != zk.EventSession })
}

// all returns a copy of every event recorded so far.
func (r *recorder) all() []zk.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]zk.Event(nil), r.evs...)
}

// sessionStates returns the session states recorded so far, in order.
func (r *recorder) sessionStates() []zk.State {
	var out []zk.State
	for _, ev := range r.all() {
		if ev.Type == zk.EventSession {
			out = append(out, ev.State)
		}
	}
	return out
}

// mustConnectRecorded connects a go-zookeeper client to addr with the given
// session timeout, records all its events, and waits for its session. The
// client is closed by t.Cleanup.
func mustConnectRecorded(t testing.TB, addr string, timeout time.Duration) (*zk.Conn, *recorder) {
	t.Helper()
	rec := newRecorder()
	c, _, err := zk.Connect([]string{addr}, timeout, zk.WithLogInfo(false),
		zk.WithLogger(discardLogger{}), zk.WithEventCallback(rec.add))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	rec.waitState(t, zk.StateHasSession)
	waitLoopSettled(t, c)
	return c, rec
}

// discardLogger silences go-zookeeper's reconnect chatter, which the tests
// provoke on purpose.
type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// assertNoEvent checks that ch holds no event now.
func assertNoEvent(t testing.TB, ch <-chan zk.Event, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Errorf("%s: unexpected event %+v", what, ev)
		}
	default:
	}
}

// eventNow returns the event ch holds now, failing if there is none.
func eventNow(t testing.TB, ch <-chan zk.Event, what string) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	default:
		t.Fatalf("%s: no event delivered yet", what)
		return zk.Event{}
	}
}

// mustStat returns the Stat of path, which must exist.
func mustStat(t testing.TB, c *zk.Conn, path string) *zk.Stat {
	t.Helper()
	ok, st, err := c.Exists(path)
	require.NoError(t, err)
	require.True(t, ok, "%s does not exist", path)
	return st
}

// mustCreate creates a persistent node with an open ACL.
func mustCreate(t testing.TB, c *zk.Conn, path string, data []byte) {
	t.Helper()
	_, err := c.Create(path, data, zk.FlagPersistent, openACL)
	require.NoError(t, err, "create %s", path)
}

// waitCondition polls cond until it returns nil, failing with its last
// error after waitTimeout. For conditions nothing can be waited on for.
func waitCondition(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, waitTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proxy is a TCP proxy in front of the server that a test can cut: sever
// drops every live link at once (both sides see the connection close), and
// while refusing, new connections are accepted and closed at once, so a
// go-zookeeper client cannot reach the server. Refusing works as a closed
// listener would for the client, but keeps the address, so the test can let
// the client back in (to see it resume its session, or learn that it
// expired). Closed by t.Cleanup.
type proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	links    map[net.Conn]struct{}
	refusing bool
	accepted int // links forwarded to the server so far
	wg       sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target, links: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		p.mu.Unlock()
		if refusing {
			down.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.links[down] = struct{}{}
		p.links[up] = struct{}{}
		p.accepted++
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(down, up)
		go p.pipe(up, down)
	}
}

// pipe copies src to dst; when either side ends, both are closed.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	p.drop(dst, src)
}

func (p *proxy) drop(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.links, c)
	}
}

// sever closes every live link.
func (p *proxy) sever() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.links))
	for c := range p.links {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.drop(conns...)
}

// refuse sets whether new connections are turned away.
func (p *proxy) refuse(on bool) {
	p.mu.Lock()
	p.refusing = on
	p.mu.Unlock()
}

// linkCount returns how many links have been forwarded so far.
func (p *proxy) linkCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

func (p *proxy) close() {
	p.ln.Close()
	p.sever()
	p.wg.Wait()
}

// rawConn is a bare TCP connection to the server for sending hand-built
// frames. Closed by t.Cleanup.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	fr *wire.FrameReader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	// Replies are not limited in size, so the client side reads any frame.
	return &rawConn{t: t, nc: nc, fr: wire.NewFrameReader(nc, 1<<30)}
}

// write sends raw bytes.
func (c *rawConn) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(waitTimeout))
	_, err := c.nc.Write(b)
	require.NoError(c.t, err)
}

// sendFrame sends one frame whose payload body appends.
func (c *rawConn) sendFrame(body func([]byte) []byte) {
	c.t.Helper()
	b, start := wire.StartFrame(nil)
	b = body(b)
	c.write(wire.EndFrame(b, start))
}

// sendRefused sends a frame the server refuses by its length: it closes as
// soon as it has read the length, so the write may fail with a reset or a
// broken pipe while the rest of the frame goes out. Check with
// expectClosed.
func (c *rawConn) sendRefused(body func([]byte) []byte) {
	c.t.Helper()
	b, start := wire.StartFrame(nil)
	b = body(b)
	c.nc.SetWriteDeadline(time.Now().Add(waitTimeout))
	if _, err := c.nc.Write(wire.EndFrame(b, start)); err != nil &&
		!errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		c.t.Errorf("writing a refused frame: %v, want success, a reset or a broken pipe", err)
	}
}

// closeWrite half-closes the connection: the server sees the end of the stream.
func (c *rawConn) closeWrite() {
	c.t.Helper()
	require.NoError(c.t, c.nc.(*net.TCPConn).CloseWrite())
}

// readFrame reads the next frame's payload, failing on any error.
func (c *rawConn) readFrame() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	p, err := c.fr.Next()
	require.NoError(c.t, err, "reading a frame")
	return append([]byte(nil), p...)
}

// closeTimeout bounds the wait for the server to close a raw connection.
// A server closes at once; the bound only keeps a failing case short.
const closeTimeout = 3 * time.Second

// expectClosed checks that the server closes the connection without sending
// anything (more). A reset counts as closed: a server that closes a socket
// with unread input makes the kernel send RST.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	if n := c.fr.Buffered(); n > 0 {
		c.t.Errorf("server sent %d unexpected bytes", n)
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(closeTimeout))
	var buf [512]byte
	n, err := c.nc.Read(buf[:])
	switch {
	case n > 0:
		c.t.Errorf("server sent %d unexpected bytes before closing: % x", n, buf[:min(n, 64)])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Errorf("server did not close the connection within %v", closeTimeout)
		} else {
			c.t.Errorf("unexpected read error %v, want EOF or reset", err)
		}
	}
}

// connectRequest is a go-zookeeper style (44-byte) connect request for a new
// session.
func connectRequest() *wire.ConnectRequest {
	return &wire.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}
}

// connect sends req and reads the connect response frame.
func (c *rawConn) connect(req *wire.ConnectRequest) (wire.ConnectResponse, []byte) {
	c.t.Helper()
	c.sendFrame(req.Append)
	frame := c.readFrame()
	var resp wire.ConnectResponse
	_, err := resp.Decode(frame)
	require.NoError(c.t, err)
	return resp, frame
}

// mustSession opens a new session on c and returns its connect response.
func (c *rawConn) mustSession() wire.ConnectResponse {
	c.t.Helper()
	resp, _ := c.connect(connectRequest())
	require.NotZero(c.t, resp.SessionID, "no session")
	return resp
}

// call sends a request and reads the reply frame: its header and body.
// Notifications (xid -1) are skipped.
func (c *rawConn) call(xid int32, op wire.Op, body []byte) (wire.ReplyHeader, []byte) {
	c.t.Helper()
	c.sendFrame(func(b []byte) []byte {
		b = wire.RequestHeader{Xid: xid, OpCode: op}.Append(b)
		return append(b, body...)
	})
	return c.reply()
}

// reply reads the next reply that is not a notification.
func (c *rawConn) reply() (wire.ReplyHeader, []byte) {
	c.t.Helper()
	for {
		frame := c.readFrame()
		var h wire.ReplyHeader
		_, err := h.Decode(frame)
		require.NoError(c.t, err)
		if h.Xid != wire.XidNotification {
			return h, frame[wire.ReplyHeaderSize:]
		}
	}
}
