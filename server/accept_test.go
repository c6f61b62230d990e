package server

import (
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
