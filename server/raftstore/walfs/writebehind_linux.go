package walfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// writeBehind starts writing the n bytes at off to disk, after waiting for
// the chunk before them (fillChunk bytes) to be there.
func writeBehind(f *os.File, off, n int64) error {
	fd := int(f.Fd())
	if off > 0 {
		prev := max(0, off-fillChunk)
		err := unix.SyncFileRange(fd, prev, off-prev,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		if err != nil {
			return err
		}
	}
	return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// datasync makes f's data durable, and its size and blocks, not its times.
func datasync(f *os.File) error {
	for {
		if err := unix.Fdatasync(int(f.Fd())); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// preallocate reserves size bytes for f, extending it; where the file
// system cannot, it only sets the size.
func preallocate(f *os.File, size int64) error {
	if size == 0 {
		return nil
	}
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return f.Truncate(size)
		}
		return err
	}
}

// renameNoReplace renames from to to, failing if to exists.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) { // a file system without it
		return renameIfAbsent(from, to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}
