package member

import (
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// emfileListener fails its first n accepts with EMFILE, as a process out
// of descriptors does, and is closed after them.
type emfileListener struct {
	net.Listener
	n, calls int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.calls++
	if l.calls > l.n {
		return nil, net.ErrClosed
	}
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

// A member out of descriptors for a moment goes on accepting forward
// connections once it has them again; it used to stop for good.
func TestAcceptForwards_GoesOnAfterAFailedAccept(t *testing.T) {
	n := &Node{log: slog.New(slog.DiscardHandler), quit: make(chan struct{})}
	ln := &emfileListener{n: 2}
	n.acceptForwards(ln)
	assert.Equal(t, 3, ln.calls, "two failures, then the closed listener")

	close(n.quit)
	ln = &emfileListener{n: 5}
	n.acceptForwards(ln)
	assert.Equal(t, 1, ln.calls, "a stopping member does not wait to try again")
}
