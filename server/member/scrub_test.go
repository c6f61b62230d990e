package member

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/raftstore"
)

// startScrubbed starts a durable standalone node in dir whose scrub runs
// only when the test calls scrubPass, and applies sessions sessions.
func startScrubbed(t *testing.T, dir string, sessions int) *Node {
	t.Helper()
	n := New(Config{TickTime: 100 * time.Millisecond, RaftTimeout: 100 * time.Millisecond, SnapCount: 1000000,
		SnapRetainCount: 3, DataDir: dir, LogStore: LogStoreWAL, Logger: quietLogger(),
		scrub: func(s *scrubber) { s.first, s.rate = time.Hour, 1<<30 }}, raftfsm.New(nil), nopHost{})
	require.NoError(t, n.Start())
	t.Cleanup(func() { n.Stop(); n.Wait() })
	for i := range sessions {
		cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: int64(i + 1), Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		n.Propose(cmd.Encode(), 0)
	}
	eventually(t, "the last session to be applied", func() bool {
		_, ok := n.fsm.Session(int64(sessions))
		return ok
	})
	return n
}

// flipEntry flips bytes of the data of the entry at index in the log in dir.
func flipEntry(t *testing.T, dir string, index uint64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, WALDir, "*.wal"))
	require.NoError(t, err)
	for _, f := range files {
		buf, err := os.ReadFile(f)
		require.NoError(t, err)
		entries, _ := raftstore.ReadSegment(buf)
		for _, e := range entries {
			if e.Index == index {
				file, err := os.OpenFile(f, os.O_RDWR, 0)
				require.NoError(t, err)
				defer file.Close()
				b := buf[e.Data : e.Data+8]
				for i := range b {
					b[i] ^= 0x5a
				}
				_, err = file.WriteAt(b, e.Data)
				require.NoError(t, err)
				return
			}
		}
	}
	t.Fatalf("entry %d not found in %s", index, dir)
}

// TestScrub_DropsTheLogUpToADamagedEntry: an entry behind the newest
// snapshot, damaged while the member runs, is found by the scrub, reported
// once, and the log dropped up to it; the rest reads whole.
func TestScrub_DropsTheLogUpToADamagedEntry(t *testing.T) {
	dir := t.TempDir()
	n := startScrubbed(t, dir, 2000)
	require.NoError(t, n.raftNow().Snapshot().Error())
	flipEntry(t, dir, 300)

	require.NoError(t, n.scrubPass())
	assert.Equal(t, int64(1), n.stats.Corruptions.Load(), "found and reported once")
	first, err := n.raftLog.FirstIndex()
	require.NoError(t, err)
	assert.Equal(t, uint64(301), first, "the log is dropped up to the damaged entry")

	require.NoError(t, n.scrubPass())
	assert.Equal(t, int64(1), n.stats.Corruptions.Load(), "nothing more to find")
}

// TestScrub_ReplacesADamagedSnapshot: a snapshot damaged while the member
// runs is found, moved aside and replaced by a new one.
func TestScrub_ReplacesADamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	n := startScrubbed(t, dir, 500)
	require.NoError(t, n.raftNow().Snapshot().Error())
	states, err := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	require.NoError(t, err)
	require.Len(t, states, 1)
	buf, err := os.ReadFile(states[0])
	require.NoError(t, err)
	buf[len(buf)/2] ^= 0xff
	require.NoError(t, os.WriteFile(states[0], buf, 0o644))

	require.NoError(t, n.scrubPass())
	assert.Equal(t, int64(1), n.stats.Corruptions.Load())
	damaged, err := os.ReadDir(filepath.Join(dir, raftstore.DamagedDir))
	require.NoError(t, err)
	assert.Len(t, damaged, 1, "moved aside")
	eventually(t, "a new snapshot", func() bool {
		metas, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
		sort.Strings(metas)
		return len(metas) == 1
	})
}
