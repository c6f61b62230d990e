package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// member is a durable member's dirs, as a test fills and damages them.
type member struct {
	dir  string
	kind string
}

func newMember(t testing.TB, kind string) *member {
	return &member{dir: t.TempDir(), kind: kind}
}

func (m *member) config(repair bool) Config {
	path := filepath.Join(m.dir, "raft-wal")
	if m.kind == KindBolt {
		path = filepath.Join(m.dir, "raft.db")
	}
	return Config{Kind: m.kind, LogPath: path, LogDir: m.dir, DataDir: m.dir, SegmentSize: segmentSize,
		RetainSnapshots: 3, Logger: hclog.NewNullLogger(), Repair: repair}
}

// open opens the member's stores, closed when the test ends.
func (m *member) open(t testing.TB, repair bool) *Stores {
	t.Helper()
	s, err := Open(m.config(repair))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// fill writes entries 1..n, in appends of batch entries, sealed as a
// leader's are, and snapshots at each index in snaps; it closes the
// stores.
func (m *member) fill(t testing.TB, n, batch int, snaps ...uint64) {
	t.Helper()
	s, err := Open(m.config(true))
	require.NoError(t, err)
	log := NewCheckedLog(s.Log, nil)
	for i := 1; i <= n; i += batch {
		var logs []*raft.Log
		for j := i; j < i+batch && j <= n; j++ {
			logs = append(logs, entry(uint64(j)))
		}
		require.NoError(t, log.StoreLogs(logs))
	}
	require.NoError(t, s.Vote.SetUint64([]byte("CurrentTerm"), 3))
	for _, index := range snaps {
		snapshot(t, s.Snapshots, index)
	}
	require.NoError(t, s.Close())
}

func entry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1 + i/1000, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry-%06d-%0200d", i, i))}
}

// snapshot writes a snapshot at index into store.
func snapshot(t testing.TB, store raft.SnapshotStore, index uint64) {
	t.Helper()
	sink, err := store.Create(raft.SnapshotVersionMax, index, 1+index/1000, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	_, err = sink.Write([]byte(fmt.Sprintf("state at %d, %01000d", index, index)))
	require.NoError(t, err)
	require.NoError(t, sink.Close())
}

// segments returns the member's segment files, oldest first.
func (m *member) segments(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(m.dir, "raft-wal", "*.wal"))
	require.NoError(t, err)
	sort.Strings(files)
	require.NotEmpty(t, files)
	return files
}

// offsetOf returns where in file the entry at index is framed.
func offsetOf(t testing.TB, file string, index uint64) int64 {
	t.Helper()
	buf, err := os.ReadFile(file)
	require.NoError(t, err)
	for pos := int64(segHeaderLen); ; {
		typ, n, ok := frameAt(buf, pos)
		require.True(t, ok, "index %d not found in %s", index, file)
		if typ == frameEntry {
			if l, ok := intactEntry(buf[pos+frameHeaderLen : pos+n]); ok && l.Index == index {
				return pos
			}
		}
		pos += n
	}
}

func damageFile(t testing.TB, file string, f func([]byte) []byte) {
	t.Helper()
	buf, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, f(buf), 0o644))
}

// readAll checks that every entry from first to last reads whole.
func readAll(t testing.TB, s *Stores, first, last uint64) {
	t.Helper()
	log := NewCheckedLog(s.Log, func(f Finding) { t.Errorf("damaged entry read: %+v", f) })
	var l raft.Log
	for i := first; i <= last; i++ {
		require.NoError(t, log.GetLog(i, &l), "index %d", i)
		require.Equal(t, entry(i).Data, l.Data)
	}
}

func torn(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Torn {
			n++
		}
	}
	return n
}

// TestOpen_IntactLogReportsNothing: a log, a snapshot, a vote record:
// nothing found, nothing lost.
func TestOpen_IntactLogReportsNothing(t *testing.T) {
	for _, kind := range []string{KindWAL, KindBolt} {
		t.Run(kind, func(t *testing.T) {
			m := newMember(t, kind)
			m.fill(t, 3000, 50, 2000)
			s := m.open(t, false)
			assert.Empty(t, s.Report.Findings)
			assert.False(t, s.Report.Damaged())
			assert.Equal(t, uint64(2000), s.Report.Snapshot)
			assert.Equal(t, uint64(3000), s.Report.Last)
			term, err := s.Vote.GetUint64([]byte("CurrentTerm"))
			require.NoError(t, err)
			assert.Equal(t, uint64(3), term)
			readAll(t, s, 1, 3000)
		})
	}
}

// TestOpen_DamagedEntryAfterTheSnapshot: bytes flipped in an entry the
// restart replays, in a sealed segment or in the one being appended to:
// the log is kept up to the entry before, the loss reported; a standalone
// server refuses to start and changes nothing.
func TestOpen_DamagedEntryAfterTheSnapshot(t *testing.T) {
	for _, where := range []string{"sealed", "tail"} {
		t.Run(where, func(t *testing.T) {
			m := newMember(t, KindWAL)
			m.fill(t, 8000, 50, 2000)
			segs := m.segments(t)
			require.GreaterOrEqual(t, len(segs), 2, "a sealed segment and the tail")
			file, index := segs[len(segs)-2], uint64(0)
			if where == "tail" {
				file = segs[len(segs)-1]
			}
			// An entry in the middle of the file.
			buf, err := os.ReadFile(file)
			require.NoError(t, err)
			for pos := int64(segHeaderLen); ; {
				typ, n, ok := frameAt(buf, pos)
				require.True(t, ok)
				if l, ok := intactEntry(buf[pos+frameHeaderLen : pos+n]); typ == frameEntry && ok && pos > int64(len(buf))/8 && l.Index > 2000 {
					index = l.Index
					flip(buf, pos+frameHeaderLen+40, 16)
					break
				}
				pos += n
			}
			require.NoError(t, os.WriteFile(file, buf, 0o644))

			_, err = Open(m.config(false))
			require.ErrorIs(t, err, ErrUnrecoverable, "a standalone server refuses")

			s := m.open(t, true)
			assert.Equal(t, index, s.Report.LostFrom)
			assert.Equal(t, index-1, s.Report.Last)
			require.NotEmpty(t, s.Report.Findings)
			assert.Zero(t, torn(s.Report.Findings))
			readAll(t, s, 1, index-1)
			last, err := s.Log.LastIndex()
			require.NoError(t, err)
			assert.Equal(t, index-1, last)
			require.NoError(t, NewCheckedLog(s.Log, nil).StoreLogs([]*raft.Log{entry(index)}), "appends go on where the log was cut")
		})
	}
}

// TestOpen_TailDamage: the segment being appended to, damaged in the ways
// a crash can and cannot leave it.
func TestOpen_TailDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t testing.TB, buf []byte, ends []int64) []byte
		torn   bool
		lost   bool
	}{
		{"the last append torn", func(_ testing.TB, buf []byte, ends []int64) []byte {
			zero(buf, (ends[len(ends)-2]+600)&^511, ends[len(ends)-1])
			return buf
		}, true, false},
		{"a block zeroed in the middle", func(_ testing.TB, buf []byte, ends []int64) []byte {
			s := (ends[len(ends)/2] + 4095) &^ 4095
			zero(buf, s, s+4096)
			return buf
		}, false, true},
		{"the file cut in the middle", func(_ testing.TB, buf []byte, ends []int64) []byte {
			return buf[:ends[len(ends)/2]+100]
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMember(t, KindWAL)
			m.fill(t, 6000, 50, 2000)
			segs := m.segments(t)
			tail := segs[len(segs)-1]
			damageFile(t, tail, func(buf []byte) []byte { return tc.damage(t, buf, commitEnds(t, buf)) })

			s, err := Open(m.config(false))
			if tc.lost {
				require.ErrorIs(t, err, ErrUnrecoverable)
			} else {
				require.NoError(t, err)
				require.NoError(t, s.Close())
			}
			s = m.open(t, true)
			assert.Equal(t, tc.lost, s.Report.Damaged(), "lost from %d", s.Report.LostFrom)
			assert.Equal(t, tc.torn, torn(s.Report.Findings) == 1, "%+v", s.Report.Findings)
			readAll(t, s, 1, s.Report.Last)
			assert.Less(t, s.Report.Last, uint64(6000))
			require.NoError(t, NewCheckedLog(s.Log, nil).StoreLogs([]*raft.Log{entry(s.Report.Last + 1)}), "appends go on")
		})
	}
}

// TestOpen_DamageBeforeTheSnapshotLosesNothing: the segment being appended
// to damaged at an entry the snapshot holds, with nothing past the snapshot:
// the log is emptied (it could not follow the snapshot), nothing is lost.
func TestOpen_DamageBeforeTheSnapshotLosesNothing(t *testing.T) {
	m := newMember(t, KindWAL)
	m.fill(t, 3000, 50, 3000)
	segs := m.segments(t)
	tail := segs[len(segs)-1]
	at := offsetOf(t, tail, 2800)
	damageFile(t, tail, func(buf []byte) []byte { zero(buf, at&^4095, at&^4095+4096); return buf })
	s := m.open(t, false)
	assert.False(t, s.Report.Damaged(), "the snapshot holds what the log lost")
	assert.Zero(t, s.Report.Last, "the log is emptied: it ends before the snapshot")
	require.NoError(t, NewCheckedLog(s.Log, nil).StoreLogs([]*raft.Log{entry(3001)}), "appends follow the snapshot")
}

// TestOpen_DamagedSnapshot: the newest snapshot does not read whole: an
// older one and the log serve, or the log from its start, or, when the log
// was cut past what the older one holds, the member lost entries.
func TestOpen_DamagedSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		snaps    []uint64
		compact  uint64 // the log's entries up to here removed
		want     uint64 // the snapshot restored
		lostFrom uint64
	}{
		{"an older one", 3000, []uint64{1000, 2000}, 0, 1000, 0},
		{"none, the log from its start", 3000, []uint64{2000}, 0, 0, 0},
		{"none, the log compacted", 3000, []uint64{2000}, 1500, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMember(t, KindWAL)
			m.fill(t, tc.n, 50, tc.snaps...)
			if tc.compact > 0 {
				s := m.open(t, true)
				require.NoError(t, s.Log.DeleteRange(1, tc.compact))
				require.NoError(t, s.Close())
			}
			states, err := filepath.Glob(filepath.Join(m.dir, "snapshots", "*", "state.bin"))
			require.NoError(t, err)
			sort.Strings(states)
			damageFile(t, states[len(states)-1], func(b []byte) []byte { flip(b, 20, 4); return b })

			s := m.open(t, true)
			assert.Equal(t, tc.want, s.Report.Snapshot)
			assert.Equal(t, tc.lostFrom, s.Report.LostFrom)
			list, err := s.Snapshots.List()
			require.NoError(t, err)
			for _, meta := range list {
				assert.NotEqual(t, tc.snaps[len(tc.snaps)-1], meta.Index, "the damaged snapshot is set aside")
			}
			if tc.lostFrom == 0 {
				readAll(t, s, max(1, tc.want), uint64(tc.n))
			}
		})
	}
}

// TestOpen_UnreadableMetadata: raft-wal's metadata database damaged, or
// raft-boltdb's file: the log is moved aside (never a panic or a fault),
// and the loss past the snapshot is reported.
func TestOpen_UnreadableMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, kind, file string
		damage           func([]byte) []byte
	}{
		{"raft-wal, zeroed pages", KindWAL, "raft-wal/wal-meta.db", func(b []byte) []byte { zero(b, 0, int64(len(b))); return b }},
		{"raft-wal, cut", KindWAL, "raft-wal/wal-meta.db", func(b []byte) []byte { return b[:4096+100] }},
		{"raft-boltdb, a page zeroed", KindBolt, "raft.db", func(b []byte) []byte { zero(b, 4*4096, 5*4096); return b }},
		{"raft-boltdb, cut", KindBolt, "raft.db", func(b []byte) []byte { return b[:16<<10] }},
		{"raft-boltdb, garbage", KindBolt, "raft.db", func(b []byte) []byte { flip(b, 4*4096, int64(len(b))-4*4096); return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMember(t, tc.kind)
			m.fill(t, 3000, 50, 2000)
			damageFile(t, filepath.Join(m.dir, tc.file), tc.damage)
			_, err := Open(m.config(false))
			require.Error(t, err, "a standalone server refuses")

			s := m.open(t, true)
			assert.Equal(t, uint64(2001), s.Report.LostFrom)
			assert.Zero(t, s.Report.Last)
			require.NotEmpty(t, s.Report.Findings)
			damaged, err := os.ReadDir(filepath.Join(m.dir, DamagedDir))
			require.NoError(t, err)
			assert.Len(t, damaged, 1, "the damaged log is kept aside")
			term, err := s.Vote.GetUint64([]byte("CurrentTerm"))
			require.NoError(t, err)
			assert.Equal(t, uint64(3), term, "the term and vote record is a file of its own")
			require.NoError(t, NewCheckedLog(s.Log, nil).StoreLogs([]*raft.Log{entry(2001)}))
		})
	}
}

// TestVoteRecord: one copy damaged is rewritten from the other; both damaged
// is a lost record, as is a missing file beside a log.
func TestVoteRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string)
		lost   bool
	}{
		{"first copy damaged", func(p string) { damageBytes(p, 20, 4) }, false},
		{"second copy damaged", func(p string) { damageBytes(p, voteCopy+20, 4) }, false},
		{"both damaged", func(p string) { damageBytes(p, 20, 4); damageBytes(p, voteCopy+20, 4) }, true},
		{"cut", func(p string) { require.NoError(t, os.Truncate(p, 10)) }, true},
		{"missing: read from the log store's own copy", func(p string) { require.NoError(t, os.Remove(p)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMember(t, KindWAL)
			m.fill(t, 100, 50)
			s := m.open(t, true)
			require.NoError(t, s.Vote.SetUint64([]byte("CurrentTerm"), 9))
			require.NoError(t, s.Vote.Set([]byte("LastVoteCand"), []byte("2")))
			require.NoError(t, s.Close())
			tc.damage(filepath.Join(m.dir, VoteFile))

			s = m.open(t, true)
			lost, floor := s.Vote.VoteLost()
			assert.Equal(t, tc.lost, lost)
			term, err := s.Vote.GetUint64([]byte("CurrentTerm"))
			require.NoError(t, err)
			if tc.lost {
				assert.Equal(t, uint64(1<<64-1), floor, "no vote until the voters are asked")
				return
			}
			assert.Equal(t, uint64(9), term)
			if !strings.HasPrefix(tc.name, "missing") {
				require.Len(t, s.Report.Findings, 1)
			}
			require.NoError(t, s.Close())
			s = m.open(t, true)
			assert.Empty(t, s.Report.Findings, "the damaged copy was rewritten")
		})
	}
}

func damageBytes(path string, at, n int64) {
	buf, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	flip(buf, at, n)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		panic(err)
	}
}

// TestOpen_ARestartWhileRepairingKeepsTheLoss: a member restarted before
// the leader gave back what it lost must not take its shorter log for a
// whole one: the loss is remembered until the repair is recorded done.
func TestOpen_ARestartWhileRepairingKeepsTheLoss(t *testing.T) {
	m := newMember(t, KindWAL)
	m.fill(t, 3000, 50, 2000)
	segs := m.segments(t)
	tail := segs[len(segs)-1]
	damageFile(t, tail, func(buf []byte) []byte { return buf[:len(buf)/2] })

	s, err := Open(m.config(true))
	require.NoError(t, err)
	lost := s.Report.LostFrom
	require.NotZero(t, lost)
	require.NoError(t, s.Close())

	s = m.open(t, true)
	assert.Equal(t, lost, s.Report.LostFrom, "still lost after a restart")
	require.NoError(t, s.Vote.SetRepair(Repair{}))
	require.NoError(t, s.Close())
	s = m.open(t, true)
	assert.Zero(t, s.Report.LostFrom, "repaired")
}

// TestOpen_ALogEndingBeforeItsHighWaterMarkLostEntries: every batch past a
// point of the segment being appended to reads as zeros (a write the disk
// lost, a file put back): the log looks whole and shorter, and only the
// high-water mark tells what went.
func TestOpen_ALogEndingBeforeItsHighWaterMarkLostEntries(t *testing.T) {
	m := newMember(t, KindWAL)
	m.fill(t, 3000, 50, 1000)
	s := m.open(t, true) // records the mark where the log ends
	require.NoError(t, s.Close())
	segs := m.segments(t)
	tail := segs[len(segs)-1]
	damageFile(t, tail, func(buf []byte) []byte {
		ends := commitEnds(t, buf)
		zero(buf, ends[len(ends)/2], int64(len(buf)))
		return buf
	})
	_, err := Open(m.config(false))
	require.ErrorIs(t, err, ErrUnrecoverable, "a standalone server refuses")
	s = m.open(t, true)
	require.NotZero(t, s.Report.LostFrom)
	assert.Less(t, s.Report.LostFrom, uint64(3000))
	assert.Equal(t, s.Report.Last+1, s.Report.LostFrom)
}

// TestOpen_ADamagedLastEntryTheSnapshotHolds: Raft reads the log's last
// entry as it starts; damaged, and held by the snapshot, the log goes and
// nothing is lost.
func TestOpen_ADamagedLastEntryTheSnapshotHolds(t *testing.T) {
	m := newMember(t, KindWAL)
	m.fill(t, 3000, 50, 3000)
	segs := m.segments(t)
	tail := segs[len(segs)-1]
	at := offsetOf(t, tail, 3000)
	damageFile(t, tail, func(buf []byte) []byte { flip(buf, at+40, 8); return buf })
	s := m.open(t, false)
	assert.False(t, s.Report.Damaged())
	assert.Zero(t, s.Report.Last, "the log is emptied")
}

// TestOpen_DamageTheSnapshotHoldsInAnEarlyBatch: bytes flipped in an entry
// of the segment being appended to that the snapshot holds, batches after
// it intact: raft-wal kept them all, nothing is lost, a standalone server
// starts.
func TestOpen_DamageTheSnapshotHoldsInAnEarlyBatch(t *testing.T) {
	m := newMember(t, KindWAL)
	m.fill(t, 3000, 50, 2990)
	segs := m.segments(t)
	tail := segs[len(segs)-1]
	at := offsetOf(t, tail, 2900)
	damageFile(t, tail, func(buf []byte) []byte { flip(buf, at+40, 8); return buf })
	s := m.open(t, false)
	assert.False(t, s.Report.Damaged())
	assert.NotEmpty(t, s.Report.Findings, "the damage is reported")
	readAll(t, s, 2991, 3000)
}

// TestIntact_ExtensionsWithoutTheTagAreDamaged: nothing in zkraft writes
// Extensions but the sum, so ones without its tag are damaged; and past
// where sums begin, an entry without one is damaged.
func TestIntact_ExtensionsWithoutTheTagAreDamaged(t *testing.T) {
	assert.True(t, Intact(&raft.Log{Index: 5, Data: []byte("x")}), "an older zkraft's entry")
	assert.False(t, Intact(&raft.Log{Index: 5, Data: []byte("x"), Extensions: []byte{1, 2}}))
	assert.True(t, IntactFrom(&raft.Log{Index: 5, Data: []byte("x")}, 6))
	assert.False(t, IntactFrom(&raft.Log{Index: 6, Data: []byte("x")}, 6), "past where sums begin")
	l := entry(6)
	Seal(l)
	assert.True(t, IntactFrom(l, 6))
}

// damagedStore returns entry bad with a byte of its data changed.
type damagedStore struct {
	raft.LogStore
	bad uint64
}

func (s damagedStore) GetLog(index uint64, l *raft.Log) error {
	if err := s.LogStore.GetLog(index, l); err != nil {
		return err
	}
	if index == s.bad {
		l.Data = append([]byte{l.Data[0] ^ 1}, l.Data[1:]...)
	}
	return nil
}

// TestCheckedLog_FetchesADamagedEntryWhole: an entry read damaged is got
// from elsewhere (the leader), checked, rather than failing the read Raft
// cannot survive; one fetched damaged too is still missing.
func TestCheckedLog_FetchesADamagedEntryWhole(t *testing.T) {
	store := raft.NewInmemStore()
	good := NewCheckedLog(store, nil)
	require.NoError(t, good.StoreLogs([]*raft.Log{entry(1), entry(2), entry(3)}))
	reported := 0
	c := NewCheckedLog(damagedStore{store, 2}, func(Finding) { reported++ })
	var l raft.Log
	require.ErrorIs(t, c.GetLog(2, &l), raft.ErrLogNotFound, "without a way to fetch it")
	c.Fetch = func(index uint64, l *raft.Log) error { return good.GetLog(index, l) }
	require.NoError(t, c.GetLog(2, &l))
	assert.Equal(t, entry(2).Data, l.Data)
	assert.Equal(t, 1, reported, "reported once")
	c.Fetch = func(index uint64, l *raft.Log) error { return damagedStore{store, 2}.GetLog(index, l) }
	require.ErrorIs(t, c.GetLog(2, &l), raft.ErrLogNotFound, "a damaged copy fetched is refused")
}

// TestOpen_ATailCutBelowTheCompactedHead: Raft dropped the log's head
// behind a snapshot, and then the segment being appended to was cut short
// below where the log now starts: raft-wal reports a first index past its
// last, and Raft, reading the last entry as it starts, fails (a restart
// loop, seen in a chaos campaign). The log is emptied; the snapshot holds
// what it had, and the entries the cut lost are the leader's to send.
func TestOpen_ATailCutBelowTheCompactedHead(t *testing.T) {
	m := newMember(t, KindWAL)
	m.fill(t, 3000, 50, 2900)
	s := m.open(t, true) // records the mark where the log ends
	require.NoError(t, s.Log.DeleteRange(1, 2800))
	require.NoError(t, s.Close())
	segs := m.segments(t)
	tail := segs[len(segs)-1]
	at := offsetOf(t, tail, 2500) // below the new head, 2801
	require.NoError(t, os.Truncate(tail, at+100))

	s = m.open(t, true)
	assert.True(t, s.Report.Damaged(), "the cut lost entries the snapshot does not hold")
	assert.Equal(t, uint64(2901), s.Report.LostFrom)
	first, err := s.Log.FirstIndex()
	require.NoError(t, err)
	last, err := s.Log.LastIndex()
	require.NoError(t, err)
	if last > 0 {
		var l raft.Log
		require.NoError(t, s.Log.GetLog(last, &l), "Raft reads the last entry as it starts (first %d, last %d)", first, last)
		assert.LessOrEqual(t, first, last)
	}
}
