package walfs

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSegment is a segment file of size bytes, written with zeros, with
// no spares behind it.
func windowSegment(t *testing.T, size int) (*segmentFile, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg.wal")
	require.NoError(t, os.WriteFile(path, make([]byte, size), 0o644))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	other, err := os.Open(path) // the same file, read without a window
	require.NoError(t, err)
	t.Cleanup(func() { f.Close(); other.Close() })
	fs := &FS{}
	return &segmentFile{File: f, w: window{c: &fs.cache}, fs: fs}, other
}

// TestWindow_ReadsSeeTheFile checks reads through the window against the
// file's own, before and after writes into the window's range, and at the
// file's end, where the file's answer (a short read and io.EOF) is given.
func TestWindow_ReadsSeeTheFile(t *testing.T) {
	const size = 3 * windowSize / 2
	s, plain := windowSegment(t, size)
	check := func(off int64, n int) {
		t.Helper()
		want := make([]byte, n)
		wn, werr := plain.ReadAt(want, off)
		got := make([]byte, n)
		gn, gerr := s.ReadAt(got, off)
		require.Equal(t, wn, gn, "read of %d at %d", n, off)
		require.Equal(t, werr, gerr, "read of %d at %d", n, off)
		require.Equal(t, want[:wn], got[:gn], "read of %d at %d", n, off)
	}
	check(100, 64<<10) // fills a window at 100
	_, err := s.WriteAt([]byte("written after the window was filled"), 5000)
	require.NoError(t, err)
	check(4990, 64<<10)
	check(5000, 10)
	for _, at := range []int64{0, 1, windowSize - 10, windowSize, size - 64<<10, size - 100, size - 1, size, size + 10} {
		check(at, 64<<10)
		check(at, 100)
	}
	check(0, windowRead+1) // longer reads go to the file
	_, err = s.WriteAt([]byte("at the end"), size-10)
	require.NoError(t, err)
	check(size-64<<10, 64<<10)
	check(size-10, 10)
}

// TestWindow_NoReadOlderThanAWriteBeforeIt has a writer rewrite blocks of
// a file with ever newer versions, each published once written, while
// readers read blocks through the window: every 8-byte word a reader gets
// must be of the version published before its read began, or newer.
func TestWindow_NoReadOlderThanAWriteBeforeIt(t *testing.T) {
	const (
		block  = 4 << 10
		blocks = 256 // 1 MiB: two windows
		writes = 3000
	)
	s, _ := windowSegment(t, block*blocks)
	var published [blocks]atomic.Uint64
	content := func(version uint64) []byte {
		b := make([]byte, block)
		for i := 0; i < block; i += 8 {
			binary.LittleEndian.PutUint64(b[i:], version)
		}
		return b
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			buf := make([]byte, 16<<10)
			for i := r; !done.Load(); i += 7 {
				first := i % (blocks - len(buf)/block)
				var before [4]uint64
				for k := range before {
					before[k] = published[first+k].Load()
				}
				if _, err := s.ReadAt(buf, int64(first*block)); err != nil && err != io.EOF {
					errs <- err
					return
				}
				for k := range before {
					for w := 0; w < block; w += 8 {
						if v := binary.LittleEndian.Uint64(buf[k*block+w:]); v < before[k] {
							errs <- fmt.Errorf("block %d: read version %d after %d was published", first+k, v, before[k])
							return
						}
					}
				}
			}
		})
	}
	for v := uint64(1); v <= writes; v++ {
		b := int(v*37) % blocks
		_, err := s.WriteAt(content(v), int64(b*block))
		require.NoError(t, err)
		published[b].Store(v)
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// countingFile is a file in memory that counts its reads.
type countingFile struct {
	data  []byte
	reads int
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestCache_ReadersInTurn has three readers of sealed segments take turns,
// as a replay and two followers catching up do: each reads an entry's place
// in the index at its file's end, then 64 KiB at the entry. Each stream
// keeps its stretches, so a few reads of the files serve thousands.
func TestCache_ReadersInTurn(t *testing.T) {
	const size = 2 << 20
	fs := &FS{}
	var files [3]*countingFile
	var windows [3]window
	for i := range files {
		files[i] = &countingFile{data: make([]byte, size)}
		for j := range files[i].data {
			files[i].data[j] = byte(j*7 + i)
		}
		windows[i] = window{c: &fs.cache}
	}
	check := func(i int, n int, off int64) {
		t.Helper()
		p := make([]byte, n)
		got, err := windows[i].readAt(files[i], p, off)
		require.NoError(t, err)
		require.Equal(t, n, got)
		require.Equal(t, files[i].data[off:off+int64(n)], p)
	}
	for e := range 2000 {
		for i := range files {
			check(i, 4, size-16<<10+int64(4*e)) // the index
			check(i, 64<<10, int64(100*e))      // the entry
		}
	}
	for i, f := range files {
		assert.LessOrEqual(t, f.reads, 4, "reads of file %d", i)
	}
}
