package chaos

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers each line with itself until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// echoes reports whether a line sent on c comes back.
func echoes(c net.Conn, r *bufio.Reader) bool {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := r.ReadString('\n')
	return err == nil && line == "ping\n"
}

// dialEcho connects through addr and reports whether it echoes.
func dialEcho(t *testing.T, addr string) (net.Conn, *bufio.Reader, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	return c, r, echoes(c, r)
}

func TestLinkProxies(t *testing.T) {
	target := echoServer(t)
	l := newLinkProxies()
	t.Cleanup(l.close)
	// Member 0 reaches 1 and 2, and 1 reaches 2, each through a proxy.
	via01, err := l.add(0, 1, target)
	require.NoError(t, err)
	via02, err := l.add(0, 2, target)
	require.NoError(t, err)
	via12, err := l.add(1, 2, target)
	require.NoError(t, err)

	c01, r01, ok := dialEcho(t, via01)
	require.True(t, ok, "a healthy link carries both ways")

	l.partition(3, []int{0}, []int{1, 2})
	assert.False(t, echoes(c01, r01), "a cut closes the link's live connections")
	_, _, ok = dialEcho(t, via01)
	assert.False(t, ok, "and refuses new ones")
	_, _, ok = dialEcho(t, via12)
	assert.True(t, ok, "members on one side reach each other")

	l.partition(3, []int{0, 1}, []int{1, 2})
	_, _, ok = dialEcho(t, via01)
	assert.True(t, ok, "a bridge reaches one side")
	_, _, ok = dialEcho(t, via12)
	assert.True(t, ok, "and the other")
	_, _, ok = dialEcho(t, via02)
	assert.False(t, ok, "the sides do not reach each other")

	l.heal()
	c02, r02, ok := dialEcho(t, via02)
	assert.True(t, ok, "healed")

	l.degrade(0, 2, 0, 1)
	assert.False(t, echoes(c02, r02), "a lost chunk breaks its connection")
	l.degrade(0, 2, 20*time.Millisecond, 0)
	c02, r02, ok = dialEcho(t, via02)
	assert.True(t, ok, "a delayed link still carries")
	_, _, ok = dialEcho(t, via01)
	assert.True(t, ok, "degrading one link leaves the others")
	l.heal()
	assert.True(t, echoes(c02, r02))
}
