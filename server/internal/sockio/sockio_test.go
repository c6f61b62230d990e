package sockio

import (
	"bytes"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pair returns the two ends of a loopback TCP connection, the first
// wrapped.
func pair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	far := <-accepted
	require.NotNil(t, far)
	c, ok := Wrap(nc).(*Conn)
	require.True(t, ok, "a TCP connection is wrapped")
	t.Cleanup(func() { c.Close(); far.Close() })
	return c, far
}

// Bytes go both ways whole and in order, also when a write is far larger
// than the socket buffers (the writer waits for room) and reads take it in
// pieces; the end of the stream reads as io.EOF.
func TestConn_CarriesBytesBothWays(t *testing.T) {
	c, far := pair(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(far)
		got <- b
	}()
	n, err := c.Write(big)
	require.NoError(t, err)
	require.Equal(t, len(big), n)
	n, err = c.Write(nil)
	assert.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, c.Conn.(*net.TCPConn).CloseWrite())
	assert.True(t, bytes.Equal(big, <-got), "the far side read what was written")

	_, err = far.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, far.Close())
	b, err := io.ReadAll(c)
	require.NoError(t, err, "io.ReadAll stops at io.EOF")
	assert.Equal(t, "hello", string(b))
	n, err = c.Read(make([]byte, 8))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF)
}

// Deadlines and closing end a waiting read or write as they do on a
// net.Conn.
func TestConn_DeadlinesAndClosing(t *testing.T) {
	c, far := pair(t)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := c.Read(make([]byte, 8))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())

	// Nothing reads the far side: a large write fills the buffers and waits.
	big := make([]byte, 64<<20)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	n, err := c.Write(big)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, n, len(big), "what the buffers took is counted, not more")

	require.NoError(t, c.SetReadDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("a read waiting on a closed connection did not end")
	}
	_, err = c.Write([]byte("x"))
	assert.ErrorIs(t, err, net.ErrClosed)
	_ = far
}

// A reset by the far side is the same error a net.Conn gives.
func TestConn_ResetIsECONNRESET(t *testing.T) {
	c, far := pair(t)
	require.NoError(t, far.(*net.TCPConn).SetLinger(0))
	_, err := c.Write([]byte("unread")) // unread data makes the close a reset
	require.NoError(t, err)
	require.NoError(t, far.Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 8))
	assert.ErrorIs(t, err, syscall.ECONNRESET)
}

// Closing the connection ends a write that waits for room.
func TestConn_CloseEndsAWaitingWrite(t *testing.T) {
	c, _ := pair(t)
	big := make([]byte, 64<<20) // more than the buffers hold: nothing reads the far side
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(big)
		done <- err
	}()
	// Wait until the write has filled what the kernel holds for the socket.
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		queued := 0
		require.NoError(t, raw.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }))
		return queued >= 64<<10
	}, 10*time.Second, time.Millisecond, "the write never filled the socket")
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("a write waiting on a closed connection did not end")
	}
}

// Reads and writes allocate nothing.
func TestConn_AllocatesNothing(t *testing.T) {
	c, far := pair(t)
	msg := []byte("ping")
	buf := make([]byte, 16)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(far, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := far.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// Read and Write on a bare descriptor say EAGAIN rather than wait.
func TestReadWrite_DoNotWait(t *testing.T) {
	c, far := pair(t)
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	var rerr error
	require.NoError(t, raw.Read(func(fd uintptr) bool {
		_, rerr = Read(fd, make([]byte, 8))
		return true
	}))
	assert.ErrorIs(t, rerr, syscall.EAGAIN)
	var n int
	require.NoError(t, raw.Read(func(fd uintptr) bool {
		n, rerr = Read(fd, nil)
		return true
	}))
	assert.Zero(t, n)
	assert.NoError(t, rerr)

	var werr error
	total := 0
	require.NoError(t, raw.Write(func(fd uintptr) bool {
		for werr == nil {
			var n int
			n, werr = Write(fd, make([]byte, 1<<20))
			total += n
		}
		return true
	}))
	assert.ErrorIs(t, werr, syscall.EAGAIN, "the buffers filled")
	assert.Positive(t, total)
	_ = far
}

// What is not a socket with a descriptor is left as it is.
func TestWrap_LeavesOtherConnsAlone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	assert.Same(t, a, Wrap(a))
}
