package walfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testSegment = 1 << 20

func newFS(t *testing.T, dir string) *FS {
	t.Helper()
	f, err := New(dir, testSegment, nil)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// waitSpare waits until a complete spare is in dir and its writer is done.
func waitSpare(t *testing.T, f *FS) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := os.Stat(filepath.Join(f.dir, SpareName))
		return err == nil && info.Size() == testSegment
	}, 10*time.Second, time.Millisecond, "no spare segment")
	waitIdle(t, f)
}

// A segment half written asks for a spare; the next segment is the spare
// renamed, all zeros, and a new spare follows once it is half written.
func TestFS_NextSegmentIsTheZeroedSpare(t *testing.T) {
	dir := t.TempDir()
	f := newFS(t, dir)
	first, err := f.Create(dir, "1.wal", testSegment)
	require.NoError(t, err)
	_, err = first.WriteAt(bytes.Repeat([]byte{7}, 100), 0)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, SpareName))
	require.ErrorIs(t, err, os.ErrNotExist, "no spare before half the segment is written")

	_, err = first.WriteAt(bytes.Repeat([]byte{7}, 100), testSegment/2)
	require.NoError(t, err)
	waitSpare(t, f)
	require.NoError(t, first.Sync())

	second, err := f.Create(dir, "2.wal", testSegment)
	require.NoError(t, err)
	assert.Equal(t, int64(1), f.taken.Load(), "the spare was taken")
	_, err = os.Stat(filepath.Join(dir, SpareName))
	require.ErrorIs(t, err, os.ErrNotExist, "the spare was renamed")
	data, err := os.ReadFile(filepath.Join(dir, "2.wal"))
	require.NoError(t, err)
	assert.Equal(t, make([]byte, testSegment), data, "a zeroed segment of the full size")
	_, err = second.WriteAt([]byte("entry"), 0)
	require.NoError(t, err)
	require.NoError(t, second.Sync())
	buf := make([]byte, 5)
	_, err = second.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "entry", string(buf))

	_, err = second.WriteAt([]byte{1}, testSegment-1)
	require.NoError(t, err)
	waitSpare(t, f)
	assert.Equal(t, int64(2), f.spares.Load())
	require.NoError(t, first.Close())
	require.NoError(t, second.Close())
}

// Create refuses a name that exists, spare or not, as raft-wal's own does.
func TestFS_CreateRefusesAnExistingName(t *testing.T) {
	dir := t.TempDir()
	f := newFS(t, dir)
	seg, err := f.Create(dir, "1.wal", testSegment)
	require.NoError(t, err)
	_, err = seg.WriteAt([]byte{1}, testSegment-1)
	require.NoError(t, err)
	waitSpare(t, f)
	_, err = f.Create(dir, "1.wal", testSegment)
	require.ErrorIs(t, err, os.ErrExist)
	_, err = os.Stat(filepath.Join(dir, SpareName))
	assert.NoError(t, err, "the spare is still there")
	require.NoError(t, seg.Close())
}

// Spares left by an earlier run, half-written or whole, are removed at
// open and never used: one could hold a segment's entries if a crash lost
// the segment's name (only a spare this process made is known clean).
func TestFS_LeftoversFromEarlierRuns(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, spareTemp), []byte("partial"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, SpareName), make([]byte, testSegment), 0o644))
	f := newFS(t, dir)
	for _, name := range []string{spareTemp, SpareName} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.ErrorIs(t, err, os.ErrNotExist, name)
	}
	seg, err := f.Create(dir, "1.wal", testSegment)
	require.NoError(t, err)
	assert.Zero(t, f.taken.Load(), "preallocated")
	info, err := os.Stat(filepath.Join(dir, "1.wal"))
	require.NoError(t, err)
	assert.Equal(t, int64(testSegment), info.Size())
	require.NoError(t, seg.Close())
}

// Close stops a spare being written and leaves no part of it.
func TestFS_CloseStopsASpareBeingWritten(t *testing.T) {
	dir := t.TempDir()
	f, err := New(dir, 1<<30, nil) // far more than it writes before Close
	require.NoError(t, err)
	f.prepare()
	require.NoError(t, f.Close())
	assert.Zero(t, f.spares.Load(), "stopped before it was complete")
	for _, name := range []string{spareTemp, SpareName} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.ErrorIs(t, err, os.ErrNotExist, name)
	}
}

// raft-wal over this file system: segments roll over onto spares, and the
// log reads back whole after a reopen.
func TestFS_UnderRaftWAL(t *testing.T) {
	dir := t.TempDir()
	open := func() (*wal.WAL, *FS) {
		f := newFS(t, dir)
		w, err := wal.Open(dir, wal.WithSegmentSize(testSegment), wal.WithSegmentFiler(segment.NewFiler(dir, f)))
		require.NoError(t, err)
		return w, f
	}
	w, f := open()
	data := bytes.Repeat([]byte("z"), 1000)
	const entries = 5000 // about five segments
	for i := uint64(1); i <= entries; i += 50 {
		batch := make([]*raft.Log, 0, 50)
		for j := i; j < i+50; j++ {
			batch = append(batch, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: data})
		}
		require.NoError(t, w.StoreLogs(batch))
		waitIdle(t, f)
	}
	assert.Greater(t, f.created.Load(), int64(3))
	assert.Equal(t, f.created.Load()-1, f.taken.Load(), "every segment after the first was a spare")
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())

	w, _ = open()
	defer w.Close()
	first, err := w.FirstIndex()
	require.NoError(t, err)
	last, err := w.LastIndex()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), first)
	assert.Equal(t, uint64(entries), last)
	for i := first; i <= last; i++ {
		var l raft.Log
		require.NoError(t, w.GetLog(i, &l))
		require.Equal(t, data, l.Data, "entry %d", i)
	}
}

// waitIdle waits until no spare is being written.
func waitIdle(t *testing.T, f *FS) {
	t.Helper()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return !f.making
	}, 10*time.Second, time.Millisecond)
}
