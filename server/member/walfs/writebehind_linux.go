package walfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// writeBehind starts writing the n bytes at off to disk, after waiting for
// those written before them.
func writeBehind(f *os.File, off, n int64) error {
	fd := int(f.Fd())
	if off > 0 {
		if err := unix.SyncFileRange(fd, 0, off, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
			return err
		}
	}
	return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// datasync makes f's data durable, and its size and blocks, not its times.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// preallocate reserves size bytes for f, extending it; where the file
// system cannot, it only sets the size.
func preallocate(f *os.File, size int64) error {
	if size == 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}
