package sockio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// DeferAccept has a listening TCP socket hand over a connection only once
// the client has sent something, or after about seconds without it
// (Linux's TCP_DEFER_ACCEPT); use it as a net.ListenConfig's Control. A
// server whose clients always speak first (as ZooKeeper's do) then finds
// the first request there at once, instead of reading nothing and waiting
// on its poller for it.
func DeferAccept(seconds int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, seconds)
		})
		if err != nil {
			return err
		}
		return serr
	}
}
