package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// segmentSize is the segments' size in these tests: small enough to fill a
// few in a test, large enough to hold many batches.
const segmentSize = 1 << 20

// newWAL returns a raft-wal log in dir with small segments.
func newWAL(t testing.TB, dir string) *wal.WAL {
	t.Helper()
	w, err := wal.Open(dir, wal.WithSegmentSize(segmentSize))
	require.NoError(t, err)
	return w
}

// writeBatches appends batches of size entries each, sealed, from index 1,
// and returns the last index.
func writeBatches(t testing.TB, w *wal.WAL, batches, size int) uint64 {
	t.Helper()
	var index uint64
	for range batches {
		logs := make([]*raft.Log, size)
		for i := range logs {
			index++
			logs[i] = &raft.Log{Index: index, Term: 1 + index/100, Type: raft.LogCommand,
				Data: []byte(fmt.Sprintf("entry-%06d-%0200d", index, index))}
			Seal(logs[i])
		}
		require.NoError(t, w.StoreLogs(logs))
	}
	return index
}

// tailFile returns the path of the newest segment file in dir.
func tailFile(t testing.TB, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files[len(files)-1]
}

// commitEnds returns the end of each commit frame in the segment file.
func commitEnds(t testing.TB, buf []byte) []int64 {
	t.Helper()
	var ends []int64
	for pos := int64(segHeaderLen); ; {
		typ, n, ok := frameAt(buf, pos)
		if !ok {
			return ends
		}
		if typ == frameCommit {
			ends = append(ends, pos+n)
		}
		pos += n
	}
}

func scanFile(t testing.TB, path string) tailScan {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	info, err := f.Stat()
	require.NoError(t, err)
	s, err := scanTail(f, info.Size(), 1, segmentSize)
	require.NoError(t, err)
	return s
}

// TestScanTail tells a torn write from corruption in the segment raft-wal
// was appending to: twenty batches of five entries, then one fault.
func TestScanTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(buf []byte, ends []int64) []byte
		damaged bool
		torn    bool
	}{
		{"intact", func(buf []byte, _ []int64) []byte { return buf }, false, false},
		{"the last batch's end never reached the disk", func(buf []byte, ends []int64) []byte {
			zero(buf, (ends[18]+300+511)&^511, ends[19])
			return buf
		}, true, true},
		{"the last batch's middle sector never reached the disk", func(buf []byte, ends []int64) []byte {
			s := (ends[18] + 512) &^ 511
			zero(buf, s, s+512)
			return buf
		}, true, true},
		{"bytes flipped in the last batch", func(buf []byte, ends []int64) []byte {
			flip(buf, ends[18]+40, 16)
			return buf
		}, true, false},
		{"bytes flipped in an early batch", func(buf []byte, ends []int64) []byte {
			flip(buf, ends[3]+40, 16)
			return buf
		}, true, false},
		{"a block zeroed in the middle", func(buf []byte, ends []int64) []byte {
			s := (ends[9] + 4095) &^ 4095
			if s+4096 > ends[17] {
				s = ends[5]
			}
			zero(buf, s, s+4096)
			return buf
		}, true, false},
		{"the header zeroed", func(buf []byte, _ []int64) []byte {
			zero(buf, 0, segHeaderLen)
			return buf
		}, true, false},
		{"the file cut in the middle of its log", func(buf []byte, ends []int64) []byte {
			return buf[:ends[10]+100]
		}, true, false},
		{"the file cut at a batch's end", func(buf []byte, ends []int64) []byte {
			return buf[:ends[10]]
		}, true, false},
		{"the file cut past its log", func(buf []byte, ends []int64) []byte {
			return buf[:ends[19]+4096]
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := newWAL(t, dir)
			last := writeBatches(t, w, 20, 5)
			require.NoError(t, w.Close())
			path := tailFile(t, dir)
			buf, err := os.ReadFile(path)
			require.NoError(t, err)
			ends := commitEnds(t, buf)
			require.Len(t, ends, 20)
			require.NoError(t, os.WriteFile(path, tc.damage(buf, ends), 0o644))

			s := scanFile(t, path)
			assert.Equal(t, tc.damaged, s.damaged, "damaged (%s)", s.why)
			assert.Equal(t, tc.torn, s.torn, "torn (%s)", s.why)
			if !tc.damaged {
				assert.Equal(t, last, s.goodEntries)
			}
			if tc.damaged && !tc.torn && tc.name != "the file cut at a batch's end" && tc.name != "the file cut in the middle of its log" {
				assert.Equal(t, last, s.lastIntact, "the segment is known to have held at least this far")
			}
		})
	}
}

func zero(buf []byte, from, to int64) {
	for i := from; i < to; i++ {
		buf[i] = 0
	}
}

func flip(buf []byte, at, n int64) {
	for i := at; i < at+n; i++ {
		buf[i] ^= 0x5a
	}
}

// TestDataEnd: the end of the last non-zero byte, wherever it falls in the
// blocks the zeros are skipped by.
func TestDataEnd(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, 3*4096 + 17} {
		for _, last := range []int{-1, 0, 1, 4095, 4096, 4097, size - 1} {
			if last >= size {
				continue
			}
			buf := make([]byte, size)
			want := int64(0)
			if last >= 0 {
				buf[last] = 0x5a
				want = int64(last + 1)
			}
			assert.Equal(t, want, dataEnd(buf), "size %d, last non-zero byte at %d", size, last)
		}
	}
}
