//go:build !linux

package walfs

import "os"

// writeBehindEvery is how often, without Linux's sync_file_range, the
// spare is synced as it is written.
const writeBehindEvery = 4 << 20

// writeBehind syncs the file every writeBehindEvery bytes.
func writeBehind(f *os.File, off, n int64) error {
	if (off+n)%writeBehindEvery == 0 {
		return f.Sync()
	}
	return nil
}

func datasync(f *os.File) error { return f.Sync() }

// preallocate sets f's size.
func preallocate(f *os.File, size int64) error { return f.Truncate(size) }

// renameNoReplace renames from to to, failing if to exists: raft-wal
// creates segments from one goroutine at a time, so nothing else names to
// between the check and the rename.
func renameNoReplace(from, to string) error { return renameIfAbsent(from, to) }
