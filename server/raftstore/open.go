// Package raftstore is a durable member's Raft storage, checked end to end:
// the log (hashicorp/raft-wal over walfs, or raft-boltdb), the term and
// vote record, and Raft's file snapshots.
//
// Nothing a disk hands back is trusted. Every log entry carries a checksum
// from the moment it is made (see Seal), verified wherever it is read; the
// term and vote record is kept twice, each copy checked; snapshots carry
// Raft's CRC. Open reads what a restart will need before Raft does, tells
// a torn write (the end of the last append, never acknowledged) from
// corruption, keeps what is intact, moves aside what cannot be read, and
// reports what the member may have lost (Report): a member that may have
// lost entries it acknowledged must not vote as if it held them until the
// leader has given them back, and a standalone server, which has no one to
// get them from, refuses to start.
package raftstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
)

// The kinds of log store.
const (
	KindWAL  = "wal"
	KindBolt = "boltdb"
)

// Config says where a member's stores are and how to open them.
type Config struct {
	Kind            string // KindWAL or KindBolt
	LogPath         string // the log's own file (boltdb) or directory (wal)
	LogDir          string // holds the log and the term and vote record
	DataDir         string // holds the snapshots
	SegmentSize     int    // raft-wal's segment size, 0 for its default
	RetainSnapshots int
	Logger          hclog.Logger // for raft-wal and the snapshot store
	// WrapVFS, when set, wraps the file system under raft-wal's segments
	// (tests: package faultfs).
	WrapVFS func(types.VFS) types.VFS
	// Repair lets Open drop what it cannot read, knowing that other
	// members hold it (a cluster member). Without it, Open fails rather
	// than lose an entry that may have been acknowledged (a standalone
	// server); it still drops a torn write, which never was.
	Repair bool
}

// Log is a durable log and its own stable store, which the term and vote
// record keeps in step (for an older zkraft on the same data dir).
type Log interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// Stores are a durable member's Raft stores, opened and checked.
type Stores struct {
	Log       Log                     // to be wrapped last in a CheckedLog (with Vote as its Marks)
	Vote      *VoteRecord             // the stable store Raft is given
	Snapshots *raft.FileSnapshotStore // holds only snapshots that read whole
	// SealedFrom is the first index stored with a checksum (CheckedLog).
	SealedFrom uint64
	Report     Report
}

// Close closes the term and vote record, then the log, its mirror.
func (s *Stores) Close() error {
	err := s.Vote.Close()
	if lerr := s.Log.Close(); err == nil {
		err = lerr
	}
	return err
}

// Report is what Open found and did.
type Report struct {
	Findings []Finding
	// LostFrom is the first index of the entries the member may have
	// acknowledged and no longer holds (it keeps those before), 0 if none;
	// LostEnd where its log ended before the damage (term, index), zero
	// if not known.
	LostFrom uint64
	LostEnd  [2]uint64
	// Snapshot is the index of the snapshot Raft will restore, 0 if none.
	Snapshot uint64
	// First and Last are the log's first and last indexes as Raft will
	// find them, 0 and 0 for an empty log.
	First, Last uint64
}

// Damaged reports whether the member may lack entries it acknowledged.
func (r Report) Damaged() bool { return r.LostFrom > 0 }

// ErrUnrecoverable is returned by Open without Repair when entries that
// may have been acknowledged cannot be read.
var ErrUnrecoverable = errors.New("raftstore: acknowledged entries cannot be read")

// Open opens and checks a member's stores (see the package comment).
func Open(cfg Config) (*Stores, error) {
	if cfg.SegmentSize == 0 {
		cfg.SegmentSize = defaultSegmentSize
	}
	var rep Report
	snaps, snap, findings, err := openSnapshots(cfg.DataDir, cfg.RetainSnapshots, cfg.Logger)
	if err != nil {
		return nil, err
	}
	rep.Findings, rep.Snapshot = findings, snap
	log, loss, err := openLog(cfg, &rep)
	if err != nil {
		return nil, err
	}
	last, err := log.LastIndex()
	if err != nil {
		log.Close()
		return nil, err
	}
	hasHistory := rep.Snapshot > 0 || last > 0 || loss.all
	vote, vfindings, err := OpenVoteRecord(cfg.LogDir, log, hasHistory, func(err error) {
		cfg.Logger.Warn("keep the log store's term and vote", "error", err)
	})
	if err != nil {
		log.Close()
		return nil, err
	}
	rep.Findings = append(rep.Findings, vfindings...)
	s := &Stores{Log: log, Vote: vote, Snapshots: snaps}
	fail := func(err error) (*Stores, error) {
		s.Close()
		return nil, err
	}
	sealedFrom := vote.SealedFrom()
	if sealedFrom == 0 { // the first start of a zkraft that seals entries
		sealedFrom = max(last, rep.Snapshot) + 1
	}
	plan, err := scanLog(log, rep.Snapshot, sealedFrom)
	if err != nil {
		return fail(err)
	}
	rep.LostFrom = plan.lostFrom(loss, rep.Snapshot)
	if plan.lastTerm > 0 && rep.LostFrom > 0 && rep.LostFrom <= plan.last {
		rep.LostEnd = [2]uint64{plan.lastTerm, plan.last} // the damage spared the log's end
	}
	if f, ok := silentLoss(vote.DurableTo(), plan, rep.Snapshot); ok {
		rep.Findings = append(rep.Findings, f)
		rep.LostFrom = minNonZero(rep.LostFrom, f.Index)
		rep.LostEnd = [2]uint64{}
	}
	if earlier := vote.Repair(); earlier.From > 0 { // a repair a restart interrupted
		if rep.LostFrom == 0 || earlier.From < rep.LostFrom {
			rep.LostEnd = [2]uint64{earlier.EndTerm, earlier.End}
		}
		rep.LostFrom = minNonZero(rep.LostFrom, earlier.From)
	}
	if rep.LostFrom > 0 && !cfg.Repair {
		return fail(fmt.Errorf("%w: the Raft log in %s %s", ErrUnrecoverable, cfg.LogPath, plan.describe(rep)))
	}
	if rep.LostFrom > 0 { // remembered before the log is cut
		if err := vote.SetRepair(Repair{From: rep.LostFrom, EndTerm: rep.LostEnd[0], End: rep.LostEnd[1]}); err != nil {
			return fail(err)
		}
	}
	if err := plan.apply(log, &rep); err != nil {
		return fail(err)
	}
	if loss.cut && loss.cutFile != "" {
		if err := os.Truncate(loss.cutFile, loss.size); err != nil && !errors.Is(err, fs.ErrNotExist) { // gone with the log's end
			return fail(fmt.Errorf("make %s its size again: %w", loss.cutFile, err))
		}
	}
	if err := vote.settle(max(rep.Last, rep.Snapshot), sealedFrom); err != nil {
		return fail(err)
	}
	s.SealedFrom, s.Report = sealedFrom, rep
	return s, nil
}

// silentLoss reports a log that, as the plan leaves it, ends before the
// high-water mark and the snapshot: entries the disk had written, synced
// and acknowledged are gone, and no crash explains it (a write the disk
// lost, or a file put back).
func silentLoss(mark uint64, p logPlan, snapshot uint64) (Finding, bool) {
	end := p.last
	switch {
	case p.clear:
		end = 0
	case p.bad > 0:
		end = p.bad - 1
	}
	end = max(end, snapshot)
	if mark <= end {
		return Finding{}, false
	}
	return Finding{Index: end + 1, Offset: -1, What: fmt.Sprintf("the log ends at index %d, but had held index %d on disk", end, mark),
		Action: "the entries past it are got back from the leader"}, true
}

func minNonZero(a, b uint64) uint64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// defaultSegmentSize is raft-wal's.
const defaultSegmentSize = 64 << 20

// openLog opens the log of cfg's kind, and returns what it lost to damage
// it could see while opening (the segment being appended to damaged, the
// log moved aside).
func openLog(cfg Config, rep *Report) (Log, logLoss, error) {
	if cfg.Kind == KindBolt {
		store, findings, err := openBolt(cfg.LogPath, cfg.Repair)
		if err != nil {
			return nil, logLoss{}, fmt.Errorf("open raft log %s: %w", cfg.LogPath, err)
		}
		rep.Findings = append(rep.Findings, findings...)
		return store, logLoss{all: len(findings) > 0}, nil
	}
	store, o, err := openWAL(cfg.LogPath, cfg.SegmentSize, cfg.Repair, cfg.Logger, cfg.WrapVFS)
	if err != nil {
		return nil, logLoss{}, fmt.Errorf("open raft log %s: %w", cfg.LogPath, err)
	}
	rep.Findings = append(rep.Findings, o.findings...)
	if o.quarantined != "" {
		return store, logLoss{all: true}, nil
	}
	t := o.tail
	if o.tailLost { // moved aside and begun again: whatever it held is gone, acknowledged or not
		lost := tailScan{why: "the segment cannot be recovered"}
		if t != nil {
			lost = *t
		}
		lost.damaged, lost.torn = true, false
		t = &lost
	}
	if t == nil || !t.damaged {
		return store, logLoss{}, nil
	}
	lastKept, err := store.LastIndex()
	if err != nil {
		store.Close()
		return nil, logLoss{}, err
	}
	f := Finding{Torn: t.torn, File: o.tailPath, Index: o.tailBase + t.goodEntries, Offset: t.goodEnd, What: t.why}
	if t.torn {
		f.Action = "dropped what follows the last whole append: it was never acknowledged"
		rep.Findings = append(rep.Findings, f)
		return store, logLoss{}, nil
	}
	f.Action = fmt.Sprintf("kept the log up to index %d", lastKept)
	if t.lastIntact > 0 {
		f.What += fmt.Sprintf("; the segment held at least up to index %d", t.lastIntact)
	}
	// Reported once the scan of the entries has said where the log is cut
	// (logPlan.apply): the same damage, told once. raft-wal checks only the
	// last batch's CRC: when it kept every intact entry the segment holds,
	// nothing went but the damaged entries, which the scan finds.
	loss := logLoss{cut: t.short, lastIntact: t.lastIntact, finding: &f, base: o.tailBase, cutFile: o.tailPath,
		size: int64(cfg.SegmentSize)}
	if lastKept < t.lastIntact || t.short || t.lastIntact == 0 {
		loss.from = lastKept + 1
	}
	return store, loss, nil
}

// openSnapshots opens Raft's snapshot store in dataDir and makes sure the
// newest snapshot it lists reads whole (its CRC checks): one that does not
// is moved aside, as is a snapshot whose metadata cannot be read, so that
// Raft restores, and sends, only good ones. It returns the store and the
// index of the newest good snapshot, 0 if none.
func openSnapshots(dataDir string, retain int, logger hclog.Logger) (*raft.FileSnapshotStore, uint64, []Finding, error) {
	store, err := raft.NewFileSnapshotStoreWithLogger(dataDir, retain, logger)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("open snapshots in %s: %w", dataDir, err)
	}
	findings, err := setAsideUnreadableMeta(dataDir)
	if err != nil {
		return nil, 0, nil, err
	}
	for {
		list, err := store.List()
		if err != nil {
			return nil, 0, nil, fmt.Errorf("list snapshots in %s: %w", dataDir, err)
		}
		if len(list) == 0 {
			return store, 0, findings, nil
		}
		meta := list[0]
		_, rc, err := store.Open(meta.ID)
		if err == nil {
			rc.Close()
			return store, meta.Index, findings, nil
		}
		if !isDamage(err) { // a permission, too many files: moving it aside would not help
			return nil, 0, nil, fmt.Errorf("open snapshot %s: %w", meta.ID, err)
		}
		dir := filepath.Join(dataDir, snapshotsDir, meta.ID)
		to, qerr := quarantineInto(dir, filepath.Join(dataDir, DamagedDir))
		if qerr != nil {
			return nil, 0, nil, fmt.Errorf("move the damaged snapshot %s aside: %w", dir, qerr)
		}
		findings = append(findings, Finding{File: dir, Index: meta.Index, Offset: -1, What: "the snapshot does not read whole: " + err.Error(),
			Action: "moved to " + to + "; the member starts from an older snapshot and the log, or from the leader's"})
	}
}

// snapshotsDir is where Raft's file snapshot store keeps snapshots.
const snapshotsDir = "snapshots"

// setAsideUnreadableMeta moves aside every snapshot whose metadata cannot
// be read: Raft skips it, and would leave it there for good.
func setAsideUnreadableMeta(dataDir string) ([]Finding, error) {
	dirs, err := os.ReadDir(filepath.Join(dataDir, snapshotsDir))
	if err != nil {
		return nil, err
	}
	var findings []Finding
	for _, d := range dirs {
		if !d.IsDir() || strings.HasSuffix(d.Name(), ".tmp") {
			continue
		}
		dir := filepath.Join(dataDir, snapshotsDir, d.Name())
		b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
		var meta struct {
			raft.SnapshotMeta
			CRC []byte
		}
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err == nil && (meta.ID != d.Name() || len(meta.CRC) == 0) {
			err = errors.New("the metadata names another snapshot, or no CRC")
		}
		if err == nil || errors.Is(err, fs.ErrPermission) {
			continue
		}
		to, qerr := quarantineInto(dir, filepath.Join(dataDir, DamagedDir))
		if qerr != nil {
			return nil, fmt.Errorf("move the damaged snapshot %s aside: %w", dir, qerr)
		}
		findings = append(findings, Finding{File: dir, Offset: -1, What: "the snapshot's metadata cannot be read: " + err.Error(),
			Action: "moved to " + to})
	}
	return findings, nil
}
