//go:build !race

package sockio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysIO makes the read or write system call trap on fd with p, a raw call.
func sysIO(trap, fd uintptr, p []byte) (int, error) {
	n, _, errno := unix.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
