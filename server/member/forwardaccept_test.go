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

// Raft's accept loop, out of descriptors, pauses between tries, and a
// stopping member does not wait out the pause.
func TestRaftStreamAccept_StopsWithoutWaitingOutAPause(t *testing.T) {
	ln := &emfileListener{n: 2}
	s := &raftStream{ln: &peerListener{Listener: ln}, spawn: spawnNow, quit: make(chan struct{})}
	_, err := s.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.Equal(t, 3, ln.calls, "two failures, then the closed listener")

	quit := make(chan struct{})
	close(quit)
	ln = &emfileListener{n: 1000}
	s = &raftStream{ln: &peerListener{Listener: ln}, spawn: spawnNow, quit: quit}
	_, err = s.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.Equal(t, 1, ln.calls, "a stopping member does not wait to try again")
}

// spawnNow runs f on a goroutine of its own, as a node's group does.
func spawnNow(_ string, f func()) bool { go f(); return true }
