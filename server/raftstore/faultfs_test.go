package raftstore_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/raftstore"
	"github.com/zkraft/zkraft/server/raftstore/faultfs"
)

// faulty opens stores in dir over a faultfs, which it returns.
func faulty(t testing.TB, dir string, repair bool) (*raftstore.Stores, *faultfs.FS, error) {
	t.Helper()
	var fs *faultfs.FS
	s, err := raftstore.Open(raftstore.Config{Kind: raftstore.KindWAL, LogPath: filepath.Join(dir, "raft-wal"),
		LogDir: dir, DataDir: dir, SegmentSize: 1 << 20, RetainSnapshots: 3, Logger: hclog.NewNullLogger(), Repair: repair,
		WrapVFS: func(v types.VFS) types.VFS { fs = faultfs.New(v); return fs }})
	return s, fs, err
}

func entryAt(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry-%06d-%0300d", i, i))}
}

// appendRange appends entries from..to, batch at a time, and returns the
// last acknowledged (StoreLogs returned nil).
func appendRange(log raft.LogStore, from, to, batch uint64) uint64 {
	acked := from - 1
	for i := from; i <= to; i += batch {
		var logs []*raft.Log
		for j := i; j < i+batch && j <= to; j++ {
			logs = append(logs, entryAt(j))
		}
		if log.StoreLogs(logs) != nil {
			return acked
		}
		acked = logs[len(logs)-1].Index
	}
	return acked
}

// TestPowerCut_NothingAcknowledgedIsLost: appends acknowledged, then one
// whose sync never returns, then the power cut (the unsynced writes undone
// whole, or torn sector by sector): a standalone server reopens with every
// acknowledged entry whole, reports at most a torn write, and goes on.
func TestPowerCut_NothingAcknowledgedIsLost(t *testing.T) {
	for _, torn := range []bool{false, true} {
		for round := range 8 {
			t.Run(fmt.Sprintf("torn=%v/%d", torn, round), func(t *testing.T) {
				dir := t.TempDir()
				s, fs, err := faulty(t, dir, false)
				require.NoError(t, err)
				log := raftstore.NewCheckedLog(s.Log, nil)
				acked := appendRange(log, 1, 1500+uint64(round)*97, 7+uint64(round))
				fs.FailSyncs(func(string) bool { return true })
				require.Error(t, log.StoreLogs([]*raft.Log{entryAt(acked + 1), entryAt(acked + 2), entryAt(acked + 3)}),
					"an append whose sync fails is not acknowledged")
				require.NoError(t, fs.PowerCut(rand.New(rand.NewPCG(uint64(round), 1)), torn))
				require.NoError(t, s.Close())

				s, _, err = faulty(t, dir, false)
				require.NoError(t, err, "nothing acknowledged was lost: a standalone server starts")
				defer s.Close()
				assert.False(t, s.Report.Damaged())
				for _, f := range s.Report.Findings {
					assert.True(t, f.Torn, "only a torn write: %+v", f)
				}
				last, err := s.Log.LastIndex()
				require.NoError(t, err)
				require.GreaterOrEqual(t, last, acked)
				var l raft.Log
				for i := uint64(1); i <= last; i++ {
					require.NoError(t, s.Log.GetLog(i, &l))
					require.True(t, raftstore.Intact(&l), "entry %d", i)
				}
				require.NoError(t, raftstore.NewCheckedLog(s.Log, nil).StoreLogs([]*raft.Log{entryAt(last + 1)}), "appends go on")
			})
		}
	}
}

// TestReadFailure_TheLogIsCutWhereItCannotBeRead: a segment whose reads
// fail (a bad sector) past the snapshot: the log is kept up to it, the loss
// reported, never a panic.
func TestReadFailure_TheLogIsCutWhereItCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	s, _, err := faulty(t, dir, true)
	require.NoError(t, err)
	appendRange(raftstore.NewCheckedLog(s.Log, nil), 1, 6000, 50)
	require.NoError(t, s.Close())

	var fs *faultfs.FS
	s, err = raftstore.Open(raftstore.Config{Kind: raftstore.KindWAL, LogPath: filepath.Join(dir, "raft-wal"),
		LogDir: dir, DataDir: dir, SegmentSize: 1 << 20, RetainSnapshots: 3, Logger: hclog.NewNullLogger(), Repair: true,
		WrapVFS: func(v types.VFS) types.VFS {
			fs = faultfs.New(v)
			fs.FailReads(func(name string) bool { return strings.HasPrefix(name, "00000000000000000001-") }) // the first segment
			return fs
		}})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, uint64(1), s.Report.LostFrom, "the log is unreadable from its first entry")
	assert.NotEmpty(t, s.Report.Findings)
}
