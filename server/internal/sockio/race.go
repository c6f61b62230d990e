//go:build race

package sockio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// sysIO reads or writes (trap) fd with p through package syscall. Raw
// calls would hide the bytes from the race detector; package syscall tells
// it of them, and of the order a write and the read of its bytes make, with
// the same marks as the net package, so that a sockio end and a net.Conn
// end of a socket in one process order memory as two net.Conn ends do.
// What the runtime's system-call path costs does not matter in a race
// build.
func sysIO(trap, fd uintptr, p []byte) (int, error) {
	if trap == unix.SYS_WRITE {
		return syscall.Write(int(fd), p)
	}
	return syscall.Read(int(fd), p)
}
