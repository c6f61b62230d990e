package member

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogStore_KindFollowsTheDataDir: a log dir that holds a log keeps
// its kind whatever the configuration asks; an empty one takes the
// configured kind, boltdb by default.
func TestLogStore_KindFollowsTheDataDir(t *testing.T) {
	for _, tc := range []struct {
		name, holds, configured, want string
	}{
		{"empty, default", "", "", LogStoreBolt},
		{"empty, wal", "", LogStoreWAL, LogStoreWAL},
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
// it again in the same process (as a member restarted in a test does: a
// raft-wal's metadata database stayed locked after Close until walStore
// closed it too), and checks what Raft must see through the member's
// wrappers: raft-wal refuses gaps between indexes, so Raft must know it is
// monotonic (and delete the whole log when it installs a snapshot).
func TestLogStore_OpenCloseReopen(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			cfg := Config{DataDir: t.TempDir(), LogStore: kind}
			store, err := openLogStore(kind, cfg.LogPath(), hclog.NewNullLogger())
			require.NoError(t, err)
			require.NoError(t, store.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Data: []byte("a")}, {Index: 2, Term: 1, Data: []byte("b")}}))
			require.NoError(t, store.SetUint64([]byte("CurrentTerm"), 7))
			require.NoError(t, store.Close())

			store, err = openLogStore(kind, cfg.LogPath(), hclog.NewNullLogger())
			require.NoError(t, err)
			t.Cleanup(func() { store.Close() })
			last, err := store.LastIndex()
			require.NoError(t, err)
			assert.Equal(t, uint64(2), last)
			term, err := store.GetUint64([]byte("CurrentTerm"))
			require.NoError(t, err)
			assert.Equal(t, uint64(7), term)

			wrapped := notifyingStore{LogStore: newLogCache(store, 16, 1<<20)}
			assert.Equal(t, kind == LogStoreWAL, wrapped.IsMonotonic(), "Raft sees the store's monotonicity through the wrappers")
		})
	}
}
