//go:build unix

package raftstore

import (
	"os"
	"runtime/debug"
	"syscall"
)

// scanTailFile is scanTail of the segment file f, of size bytes, read
// through a read-only memory map rather than copied: a segment is 64 MiB,
// mostly the zeros it was made with, and under the race detector a 64 MiB
// read cost 0.6 s of CPU, which beside a CPU hog held a restart up for
// tens of seconds. A fault in the map (a sector the disk cannot read)
// falls back to reading the file, which reports it as scanTail does.
func scanTailFile(f *os.File, size int64, base uint64, limit int64) (s tailScan, err error) {
	if size <= 0 || int64(int(size)) != size {
		return scanTail(f, size, base, limit)
	}
	buf, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return scanTail(f, size, base, limit)
	}
	defer syscall.Munmap(buf)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			s, err = scanTail(f, size, base, limit)
		}
	}()
	return scanTailBytes(buf, base, limit), nil
}
