//go:build !race

package sockio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawIO makes the read or write system call trap on fd with p, again if a
// signal interrupted it.
func rawIO(trap, fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}
