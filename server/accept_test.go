package server

import (
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// failingListener fails every accept with EMFILE, as a process out of
// descriptors does, until it has failed n times; then it is closed.
type failingListener struct {
	net.Listener
	n, calls int
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls++
	if l.calls > l.n {
		return nil, net.ErrClosed
	}
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

// A failing accept is retried after a pause that doubles up to a second,
// rather than at once and without end.
func TestAcceptLoop_PausesAfterFailures(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		failures  int
		stopAfter int // pause refuses from this call on (the server stops); 0: never
		pauses    []time.Duration
		accepts   int
	}{
		{name: "closed after failing", failures: 9, accepts: 10,
			pauses: []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second}},
		{name: "stopped while pausing", failures: 9, stopAfter: 3, accepts: 3,
			pauses: []time.Duration{5 * ms, 10 * ms, 20 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{log: slog.New(slog.DiscardHandler), quit: make(chan struct{})}
			ln := &failingListener{n: tc.failures}
			var pauses []time.Duration
			s.acceptLoop(ln, func(d time.Duration) bool {
				pauses = append(pauses, d)
				return tc.stopAfter == 0 || len(pauses) < tc.stopAfter
			})
			assert.Equal(t, tc.pauses, pauses)
			assert.Equal(t, tc.accepts, ln.calls)
		})
	}
}

// Client connections have TCP keepalive off unless clientTcpKeepAlive turns
// it on, as in ZooKeeper.
func TestClientTCPKeepAlive(t *testing.T) {
	for _, on := range []bool{false, true} {
		s, err := New(Config{ClientPortAddress: "127.0.0.1:0", ClientTCPKeepAlive: on})
		require.NoError(t, err)
		require.NoError(t, s.Start())
		t.Cleanup(func() { s.Close() })
		nc, err := net.Dial("tcp", s.ConnectString())
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		_, err = nc.Write([]byte{0}) // the first byte of a frame: the kernel hands the connection over
		require.NoError(t, err)
		var accepted *conn
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			for c := range s.conns {
				accepted = c
			}
			return accepted != nil
		}, 10*time.Second, time.Millisecond)
		var keepAlive int
		require.NoError(t, accepted.raw.Control(func(fd uintptr) {
			keepAlive, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		}))
		require.NoError(t, err)
		assert.Equal(t, on, keepAlive != 0, "clientTcpKeepAlive=%v", on)
	}
}
