package raftstore

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// logLoss is what opening a log showed it lost before any entry was read:
// the segment being appended to damaged past from (raft-wal kept the
// entries before), or the whole log moved aside (all).
type logLoss struct {
	from       uint64 // the first entry not kept, 0 if none
	all        bool   // the log could not be opened and starts again empty
	cut        bool   // a file was cut short: what followed is gone
	lastIntact uint64 // the highest intact entry seen past the damage
	// finding is the damage found in the segment being appended to, whose
	// first entry is base, not yet reported.
	finding *Finding
	base    uint64
	// cutFile, with cut, is the segment found shorter than it was made:
	// once the loss is recorded it is made its size again, so that a later
	// start does not find it cut again.
	cutFile string
	size    int64
}

// logPlan is what Open does to a log so that Raft can start from it: cut
// the entries from the first damaged one on, and clear the log whole if
// what remains cannot follow the snapshot.
type logPlan struct {
	first, last uint64 // the log as opened
	lastTerm    uint64 // the term of its last entry, 0 if it cannot be read
	bad         uint64 // the first entry past the snapshot that fails its checks, 0 if none
	why         string // why bad fails
	clear       bool   // delete the whole log
	gap         bool   // the log does not follow on from the snapshot (clear is set)
	loss        logLoss
}

// scanLog reads every entry past snapshot, the ones Raft will apply as it
// starts, and the last (Raft reads it to start, wherever it is), and plans
// what to do about the first that fails its checks. Raft stops the process
// if a read of an entry it applies fails, so none may be left that does.
// Entries from sealedFrom on must carry a checksum.
func scanLog(log raft.LogStore, snapshot, sealedFrom uint64) (logPlan, error) {
	var p logPlan
	var err error
	if p.first, err = log.FirstIndex(); err != nil {
		return p, fmt.Errorf("read the raft log's first index: %w", err)
	}
	if p.last, err = log.LastIndex(); err != nil {
		return p, fmt.Errorf("read the raft log's last index: %w", err)
	}
	if p.last == 0 {
		return p, nil
	}
	var l raft.Log
	check := func(i uint64) bool {
		switch err := ReadEntry(log, i, &l); {
		case err != nil:
			p.bad, p.why = i, "the entry cannot be read: "+err.Error()
		case l.Index != i:
			p.bad, p.why = i, fmt.Sprintf("the entry read is index %d", l.Index)
		case !IntactFrom(&l, sealedFrom):
			p.bad, p.why = i, "the entry does not match its checksum"
		default:
			return true
		}
		return false
	}
	lastOK := check(p.last) // where the log ended, before anything is cut
	if lastOK {
		p.lastTerm = l.Term
	}
	p.bad, p.why = 0, ""
	for i := max(p.first, snapshot+1); i <= p.last; i++ {
		if !check(i) {
			break
		}
	}
	if !lastOK && p.bad == 0 {
		// The last entry, which the snapshot holds, is damaged, and Raft
		// reads it as it starts: the log goes, and nothing with it.
		p.clear = true
		return p, nil
	}
	last := p.last
	if p.bad > 0 {
		last = p.bad - 1
	}
	switch {
	case last < snapshot || (p.bad > 0 && p.bad <= p.first):
		p.clear = true // the snapshot holds all the log still does
	case p.first > snapshot+1:
		p.clear, p.gap = true, true
	}
	return p, nil
}

// lostFrom returns the first index the member may have acknowledged and
// lost, given what opening the log lost: 0 if none. What the snapshot
// holds is not lost.
func (p *logPlan) lostFrom(loss logLoss, snapshot uint64) uint64 {
	p.loss = loss
	from := uint64(0)
	lower := func(i uint64) {
		if i > 0 && (from == 0 || i < from) {
			from = i
		}
	}
	lower(p.bad)
	if p.gap {
		lower(snapshot + 1)
	}
	switch {
	case loss.all:
		lower(snapshot + 1)
	case loss.from > snapshot:
		lower(loss.from)
	case loss.from > 0 && (loss.cut || loss.lastIntact > snapshot):
		lower(snapshot + 1)
	}
	return from
}

// describe says what is damaged, for an error.
func (p *logPlan) describe(rep Report) string {
	switch {
	case p.bad > 0:
		return fmt.Sprintf("is damaged at index %d (%s); entries from there on may have been acknowledged", p.bad, p.why)
	case p.gap:
		return fmt.Sprintf("does not follow on from the newest snapshot that reads whole (index %d): it starts at %d", rep.Snapshot, p.first)
	case p.loss.all:
		return "cannot be opened"
	}
	return fmt.Sprintf("is damaged from index %d on; entries from there may have been acknowledged", rep.LostFrom)
}

// apply carries the plan out and notes what it did in rep.
func (p *logPlan) apply(log raft.LogStore, rep *Report) error {
	rep.First, rep.Last = p.first, p.last
	if f := p.loss.finding; f != nil {
		if p.bad >= p.loss.base && p.bad > 0 { // the damage the segment's scan found: told once
			f.Index, f.What = p.bad, f.What+"; at index "+fmt.Sprint(p.bad)+": "+p.why
			f.Action = fmt.Sprintf("dropped the log from index %d on; the leader sends it again", p.bad)
			p.why = ""
		}
		rep.Findings = append(rep.Findings, *f)
	}
	if p.bad > 0 {
		if p.why != "" {
			rep.Findings = append(rep.Findings, Finding{Index: p.bad, Offset: -1, What: p.why,
				Action: fmt.Sprintf("dropped the log from index %d on; the leader sends it again", p.bad)})
		}
		if p.bad > p.first {
			if err := log.DeleteRange(p.bad, p.last); err != nil {
				return fmt.Errorf("drop the damaged raft log from index %d: %w", p.bad, err)
			}
			rep.Last = p.bad - 1
		}
	}
	if p.clear && rep.Last > 0 {
		if p.gap {
			rep.Findings = append(rep.Findings, Finding{Index: p.first, Offset: -1,
				What:   fmt.Sprintf("the log starts at index %d, past the snapshot's %d", p.first, rep.Snapshot),
				Action: "dropped the log; the leader sends what follows the snapshot"})
		}
		// A tail cut below a head Raft had compacted leaves raft-wal
		// starting past where it ends; a range over both clears it too
		// (raft-wal takes a delete from the head past the end as all).
		if err := log.DeleteRange(min(rep.First, rep.Last), max(rep.First, rep.Last)); err != nil {
			return fmt.Errorf("clear the raft log: %w", err)
		}
		rep.First, rep.Last = 0, 0
	}
	return nil
}
