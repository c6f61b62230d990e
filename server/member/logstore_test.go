package member

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/raftstore"
)

// A member whose data log dir is set but empty while its data dir holds
// the log refuses to start: it would lose the log, its term and its vote.
func TestLogStore_MisplacedLogRefused(t *testing.T) {
	for _, holds := range []string{LogFile, WALDir} {
		t.Run(holds, func(t *testing.T) {
			data, logs := t.TempDir(), t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(data, holds), 0o755))
			cfg := Config{DataDir: data, DataLogDir: logs}
			assert.ErrorContains(t, cfg.misplacedLog(), "is in the data dir")

			require.NoError(t, os.Mkdir(filepath.Join(logs, WALDir), 0o755))
			assert.NoError(t, cfg.misplacedLog(), "the data log dir holds a log: it is used")
		})
	}
	data := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(data, WALDir), 0o755))
	for _, cfg := range []Config{
		{DataDir: data},                                 // no data log dir
		{DataDir: data, DataLogDir: data},               // the same dir
		{DataDir: t.TempDir(), DataLogDir: t.TempDir()}, // nothing anywhere: a new member
	} {
		assert.NoError(t, cfg.misplacedLog())
	}
}

// TestLogStore_KindFollowsTheDataDir: a log dir that holds a log keeps
// its kind whatever the configuration asks; an empty one takes the
// configured kind, wal by default.
func TestLogStore_KindFollowsTheDataDir(t *testing.T) {
	for _, tc := range []struct {
		name, holds, configured, want string
	}{
		{"empty, default", "", "", LogStoreWAL},
		{"empty, boltdb", "", LogStoreBolt, LogStoreBolt},
		{"empty, wal", "", LogStoreWAL, LogStoreWAL},
		{"holds boltdb, default", LogFile, "", LogStoreBolt},
		{"holds boltdb, wal configured", LogFile, LogStoreWAL, LogStoreBolt},
		{"holds wal, default", WALDir, "", LogStoreWAL},
		{"holds wal, boltdb configured", WALDir, LogStoreBolt, LogStoreWAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			switch tc.holds {
			case LogFile:
				require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), nil, 0o644))
			case WALDir:
				require.NoError(t, os.Mkdir(filepath.Join(dir, WALDir), 0o755))
			}
			cfg := Config{DataDir: dir, LogStore: tc.configured}
			assert.Equal(t, tc.want, cfg.LogStoreKind())
			want := filepath.Join(dir, LogFile)
			if tc.want == LogStoreWAL {
				want = filepath.Join(dir, WALDir)
			}
			assert.Equal(t, want, cfg.LogPath())
		})
	}
}

// TestLogStore_OpenCloseReopen opens each store, writes, closes and opens
// it again in the same process (as a member restarted in a test does:
// raft-wal 0.4.0 left its metadata database open, and locked, after
// Close), and checks what Raft must see through the member's
// wrappers: raft-wal refuses gaps between indexes, so Raft must know it is
// monotonic (and delete the whole log when it installs a snapshot).
func TestLogStore_OpenCloseReopen(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			store, last := openAndWrite(t, kind, func(store raftstore.Log) {
				require.NoError(t, raftstore.NewCheckedLog(store, nil).StoreLogs([]*raft.Log{{Index: 1, Term: 1, Data: []byte("a")}, {Index: 2, Term: 1, Data: []byte("b")}}))
				require.NoError(t, store.SetUint64([]byte("CurrentTerm"), 7))
			})
			assert.Equal(t, uint64(2), last)
			term, err := store.GetUint64([]byte("CurrentTerm"))
			require.NoError(t, err)
			assert.Equal(t, uint64(7), term)

			wrapped := notifyingStore{LogStore: newLogCache(store, 16, 1<<20)}
			assert.Equal(t, kind == LogStoreWAL, wrapped.IsMonotonic(), "Raft sees the store's monotonicity through the wrappers")
		})
	}
}

// TestLogStore_TailTruncatedThenReopened: Raft clears a follower's log
// suffix that conflicts with the leader's (DeleteRange of the newest
// entries); the store must open again after a restart with the rest
// readable. raft-wal 0.4.0 sealed the segment without its index there and
// then failed every read on reopening ("sealed segment has no index
// block", hashicorp/raft-wal#31), which made Raft panic at start: found by
// a five-member durable raft-wal campaign (zkchaos -log-store wal), where
// three members died that way within four minutes. Fixed in 0.4.2.
func TestLogStore_TailTruncatedThenReopened(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			store, last := openAndWrite(t, kind, func(store raftstore.Log) {
				var logs []*raft.Log
				for i := uint64(1); i <= 424; i++ {
					logs = append(logs, &raft.Log{Index: i, Term: 1 + i/400, Data: []byte{byte(i)}})
				}
				require.NoError(t, raftstore.NewCheckedLog(store, nil).StoreLogs(logs))
				require.NoError(t, store.DeleteRange(424, 424)) // a conflicting suffix
			})
			assert.Equal(t, uint64(423), last)
			var l raft.Log
			require.NoError(t, store.GetLog(1, &l), "the oldest entry reads after the restart")
			assert.Equal(t, []byte{1}, l.Data)
			require.NoError(t, store.StoreLogs([]*raft.Log{{Index: 424, Term: 2, Data: []byte("new")}}), "appends go on")
		})
	}
}

// openAndWrite opens a new store of kind in a temporary dir, lets write
// fill it, closes it, opens it again and returns it with its last index.
func openAndWrite(t *testing.T, kind string, write func(raftstore.Log)) (raftstore.Log, uint64) {
	t.Helper()
	cfg := &Config{DataDir: t.TempDir(), LogStore: kind}
	open := func() *raftstore.Stores {
		s, err := raftstore.Open(raftstore.Config{Kind: kind, LogPath: cfg.LogPath(), LogDir: cfg.LogDir(),
			DataDir: cfg.DataDir, RetainSnapshots: 1, Logger: hclog.NewNullLogger(), Repair: true})
		require.NoError(t, err)
		return s
	}
	s := open()
	write(s.Log)
	require.NoError(t, s.Close())
	s = open()
	t.Cleanup(func() { s.Close() })
	last, err := s.Log.LastIndex()
	require.NoError(t, err)
	return s.Log, last
}
