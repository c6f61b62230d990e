//go:build race

package sockio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// rawIO reads or writes (trap) fd with p through package syscall, again if
// a signal interrupted it. Raw calls would hide the bytes from the race
// detector; package syscall tells it of them, and of the order a write and
// the read of its bytes make, with the same marks as the net package, so
// that a sockio end and a net.Conn end of a socket in one process order
// memory as two net.Conn ends do. What the runtime's system-call path
// costs does not matter in a race build.
func rawIO(trap, fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		var n int
		var err error
		if trap == unix.SYS_WRITE {
			n, err = syscall.Write(int(fd), p)
		} else {
			n, err = syscall.Read(int(fd), p)
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}
