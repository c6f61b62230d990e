package server

import (
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// pipeListener hands out the server ends of net.Pipe connections, so that a
// server runs entirely inside a synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "127.0.0.1:1" }

// startBubbled starts a server on a pipe listener inside the current bubble.
func startBubbled(t *testing.T, cfg Config) (*Server, *pipeListener) {
	t.Helper()
	cfg.ClientPortAddress = "127.0.0.1:0"
	srv, err := New(cfg)
	require.NoError(t, err)
	ln := newPipeListener()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		assert.ErrorIs(t, <-served, ErrServerClosed)
	})
	return srv, ln // dial blocks until the server accepts, after Raft leads
}

// rawSession connects over c with a session timeout and returns its id.
func rawSession(t *testing.T, c net.Conn, timeout time.Duration) int64 {
	t.Helper()
	req := wire.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)}
	writeFrame(t, c, req.Append)
	var resp wire.ConnectResponse
	_, err := resp.Decode(readFrame(t, c))
	require.NoError(t, err)
	require.NotZero(t, resp.SessionID)
	return resp.SessionID
}

func writeFrame(t *testing.T, c net.Conn, body func([]byte) []byte) {
	t.Helper()
	b, start := wire.StartFrame(nil)
	_, err := c.Write(wire.EndFrame(body(b), start))
	require.NoError(t, err)
}

func readFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	frame, err := wire.NewFrameReader(c, 1<<20).Next()
	require.NoError(t, err)
	return frame
}

func ping(t *testing.T, c net.Conn) {
	t.Helper()
	writeFrame(t, c, wire.RequestHeader{Xid: wire.XidPing, OpCode: wire.OpPing}.Append)
	var h wire.ReplyHeader
	_, err := h.Decode(readFrame(t, c))
	require.NoError(t, err)
	require.Equal(t, wire.XidPing, h.Xid)
}

func TestSession_ExpiresAfterTimeoutWithoutPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, ln := startBubbled(t, Config{TickTime: 2 * time.Second})
		c := ln.dial()
		defer c.Close()
		id := rawSession(t, c, 6*time.Second)
		created := time.Now()

		// The server closes an idle connection after the session timeout,
		// and expires the session at the next tick boundary after that.
		_, err := c.Read(make([]byte, 1))
		assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe), "read: %v", err)
		for {
			if _, ok := srv.fsm.Session(id); !ok {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		gone := time.Since(created)
		assert.GreaterOrEqual(t, gone, 6*time.Second, "not before the timeout")
		assert.LessOrEqual(t, gone, 8*time.Second+100*time.Millisecond, "by the tick after the timeout")
	})
}

func TestSession_PingsKeepItAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, ln := startBubbled(t, Config{TickTime: 2 * time.Second})
		c := ln.dial()
		defer c.Close()
		id := rawSession(t, c, 6*time.Second)
		for range 10 { // 30s of pings every 3s, a half of the timeout
			time.Sleep(3 * time.Second)
			ping(t, c)
		}
		_, ok := srv.fsm.Session(id)
		assert.True(t, ok, "a pinged session lives on")
	})
}

func TestSession_NegotiatedTimeoutIsClamped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, ln := startBubbled(t, Config{TickTime: time.Second})
		for _, tc := range []struct{ asked, got time.Duration }{
			{500 * time.Millisecond, 2 * time.Second},
			{5 * time.Second, 5 * time.Second},
			{time.Hour, 20 * time.Second},
		} {
			c := ln.dial()
			id := rawSession(t, c, tc.asked)
			sess, ok := srv.fsm.Session(id)
			require.True(t, ok)
			assert.Equal(t, tc.got.Milliseconds(), int64(sess.Timeout), "asked %v", tc.asked)
			c.Close()
		}
	})
}

// A session longer than the 10s handshake deadline must not be cut off by
// it: a client pinging every third of its timeout keeps its connection.
func TestSession_LongTimeoutOutlivesHandshakeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ln := startBubbled(t, Config{TickTime: 2 * time.Second})
		c := ln.dial()
		defer c.Close()
		rawSession(t, c, 40*time.Second)
		for range 6 {
			time.Sleep(13 * time.Second)
			ping(t, c)
		}
	})
}

// The connection closes between one and one and a quarter timeouts of silence.
// A silent session's connection is closed by its expiry, once the expiry
// has deleted the session's ephemerals (and fired their watches), as
// ZooKeeper closes it: a client that sees its connection close and reads
// through another one finds the ephemerals gone. The connection is not
// closed for being silent before that.
func TestSession_IdleConnectionClosesAfterItsEphemeralsAreGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, ln := startBubbled(t, Config{TickTime: 2 * time.Second})
		c := ln.dial()
		defer c.Close()
		// Expiry falls on the first tick boundary after the timeout: 6s.
		rawSession(t, c, 4*time.Second)
		writeFrame(t, c, func(b []byte) []byte {
			b = wire.RequestHeader{Xid: 1, OpCode: wire.OpCreate}.Append(b)
			return (&wire.CreateRequest{Path: "/e", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral}).Append(b)
		})
		var h wire.ReplyHeader
		_, err := h.Decode(readFrame(t, c))
		require.NoError(t, err)
		require.Equal(t, wire.CodeOK, h.Err)
		start := time.Now()
		_, err = c.Read(make([]byte, 1))
		require.Error(t, err, "the connection closes")
		srv.FSM().Read(func(tr *tree.Tree) {
			_, code := tr.Exists("/e")
			assert.Equal(t, wire.CodeNoNode, code, "the ephemeral is gone when the connection closes")
		})
		idle := time.Since(start)
		assert.GreaterOrEqual(t, idle, 4*time.Second)
		assert.LessOrEqual(t, idle, 6*time.Second, "expired on the first tick after its timeout")
	})
}
