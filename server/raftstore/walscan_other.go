//go:build !unix

package raftstore

import "os"

// scanTailFile is scanTail of the segment file f, of size bytes.
func scanTailFile(f *os.File, size int64, base uint64, limit int64) (tailScan, error) {
	return scanTail(f, size, base, limit)
}
