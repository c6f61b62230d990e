package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/server/raftstore/walfs"
)

// VoteFile names the file that holds a durable member's term and vote, in
// its log dir.
const VoteFile = "raft-vote"

// The term and vote record.
//
// Raft's safety rests on a member never voting twice in one term, so its
// current term and its vote must survive anything short of the loss of the
// disk, and a damaged record must never be mistaken for a good one. The
// record is kept twice in one file, each copy in a block of its own with a
// CRC32C and a sequence number; every change writes both, then syncs. A
// copy that is damaged is rewritten from the other; the newer of two good
// copies wins. A record damaged in both copies (or a file gone while the
// log remains) is lost: the member must then take no part in an election
// until it knows no term it may have voted in can come again (VoteLost).
//
// Raft records a vote as two values set one after the other before the
// vote is sent: the term (LastVoteTerm), then the candidate (LastVoteCand).
// The term is held in memory and written by the next write, the
// candidate's: one sync per vote instead of two. A crash before that write
// leaves the vote before, which was true. A write of another value in
// between (the high-water mark, from another goroutine) writes the new
// term with the old candidate; a member that crashes then finds itself
// voted for the old candidate in a term in which it voted for no one yet
// (the vote goes out only after the candidate's write), and may grant that
// one vote in the term, and no other. TestVoteRecord_RaftWritesAVoteWhole
// holds hashicorp/raft to this order.
//
// The log store's own stable store (raft-wal's metadata, raft-boltdb's file)
// is kept in step as well as it can be, so that an older zkraft started on
// the same data dir finds the term and vote it left: off the election's
// path, by a goroutine that takes the latest values, and wholly by Close.
// This file is the one read.

// Keys of the record besides Raft's own.
var (
	// keyVoteLost holds, once the record was found lost, the highest term
	// the member may have voted in: unknown (math.MaxUint64) until every
	// voter has told it its term (SetVoteFloor).
	keyVoteLost = []byte("zkraft.VoteLost")
	// keyRepair holds, while a member gets back entries a damaged disk
	// lost, the first of them and where its log ended before the damage
	// (term, index; zero if not known): a restart meanwhile must not take
	// the shorter log for a whole one.
	keyRepair = []byte("zkraft.Repair")
	// keyDurableTo is the high-water mark: an index the log held on disk.
	// A log found ending before it (and before the snapshot) lost entries
	// the disk had acknowledged, which no crash explains.
	keyDurableTo = []byte("zkraft.DurableTo")
	// keySealedFrom is the first index stored with a checksum: an entry
	// from there on without one is damaged.
	keySealedFrom = []byte("zkraft.SealedFrom")
)

// Raft's own keys, as hashicorp/raft names them.
var raftStableKeys = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm"), []byte("LastVoteCand")}

const (
	voteMagic     = "zkvote\x00\x01"
	voteCopy      = 4096 // each copy's block
	voteHeaderLen = len(voteMagic) + 4
)

// ErrRecordTooLarge is returned when the term and vote record would not fit
// its block.
var ErrRecordTooLarge = errors.New("raftstore: term and vote record too large")

// VoteRecord is a durable member's term and vote (raft.StableStore).
type VoteRecord struct {
	path   string
	mirror raft.StableStore // nil: none
	warn   func(error)      // told of a failed mirror write

	markMu sync.Mutex // serializes changes to the high-water mark with the log's changes

	mu   sync.Mutex // guards the rest; held across a write
	f    *os.File
	seq  uint64
	vals map[string][]byte
	// termPending: a vote's term (LastVoteTerm) is set and not yet
	// written.
	termPending bool

	mirrorMu  sync.Mutex        // guards mirrorDue, mirroring
	mirrorDue map[string][]byte // Raft's values changed since the mirror took them
	mirroring bool              // a goroutine is writing mirrorDue
	mirrorWG  sync.WaitGroup
}

// OpenVoteRecord opens the record in dir, creating it if there is none:
// from mirror, the log store's own stable store, when that holds a term
// (an older zkraft wrote the data dir), else empty. hasHistory says
// whether the member's log or snapshots hold anything: a missing file is
// then a lost record, not a new one. It returns what it found wrong.
func OpenVoteRecord(dir string, mirror raft.StableStore, hasHistory bool, warn func(error)) (*VoteRecord, []Finding, error) {
	r := &VoteRecord{path: filepath.Join(dir, VoteFile), mirror: mirror, warn: warn, vals: make(map[string][]byte)}
	f, err := os.OpenFile(r.path, os.O_RDWR, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		findings, err := r.create(hasHistory)
		return r, findings, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", r.path, err)
	}
	r.f = f
	findings, err := r.load()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, findings, nil
}

// create makes the file: from the mirror's values, or lost if the member
// has a history the mirror does not account for.
func (r *VoteRecord) create(hasHistory bool) ([]Finding, error) {
	var findings []Finding
	migrated := false
	if r.mirror != nil {
		for _, k := range raftStableKeys {
			if isUint64Key(k) {
				if v, err := r.mirror.GetUint64(k); err == nil && v > 0 {
					r.vals[string(k)], migrated = u64(v), true
				}
			} else if v, err := r.mirror.Get(k); err == nil && len(v) > 0 {
				r.vals[string(k)], migrated = slices.Clone(v), true
			}
		}
	}
	if hasHistory && !migrated {
		r.vals[string(keyVoteLost)] = u64(math.MaxUint64)
		findings = append(findings, Finding{File: r.path, Offset: -1, What: "the term and vote record is missing while the log holds entries",
			Action: "no vote until every voter has told its term"})
	}
	tmp := r.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", tmp, err)
	}
	r.f = f
	if err := r.writeLocked(); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, r.path); err != nil {
		f.Close()
		return nil, fmt.Errorf("create %s: %w", r.path, err)
	}
	return findings, walfs.SyncDir(filepath.Dir(r.path))
}

// load reads both copies and takes the newer good one, rewriting the
// file if a copy is damaged or stale.
func (r *VoteRecord) load() ([]Finding, error) {
	var blocks [2][voteCopy]byte
	var good [2]bool
	var seqs [2]uint64
	var vals [2]map[string][]byte
	for i := range blocks {
		n, err := r.f.ReadAt(blocks[i][:], int64(i*voteCopy))
		if err != nil && !errors.Is(err, io.EOF) {
			continue // a copy the disk cannot read is a damaged copy
		}
		seqs[i], vals[i], good[i] = decodeVoteCopy(blocks[i][:n])
	}
	var findings []Finding
	switch {
	case good[0] && good[1]:
		i := 0
		if seqs[1] > seqs[0] {
			i = 1
		}
		r.seq, r.vals = seqs[i], vals[i]
		if seqs[0] == seqs[1] {
			return nil, nil
		}
	case good[0] || good[1]:
		i, bad := 0, 1
		if good[1] {
			i, bad = 1, 0
		}
		r.seq, r.vals = seqs[i], vals[i]
		findings = append(findings, Finding{File: r.path, Offset: int64(bad * voteCopy),
			What: "one copy of the term and vote record is damaged", Action: "rewritten from the other copy"})
	default:
		r.vals = map[string][]byte{string(keyVoteLost): u64(math.MaxUint64)}
		findings = append(findings, Finding{File: r.path, Offset: 0, What: "both copies of the term and vote record are damaged",
			Action: "no vote until every voter has told its term"})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return findings, r.writeLocked()
}

// decodeVoteCopy decodes one copy; ok is false if it is damaged.
func decodeVoteCopy(b []byte) (seq uint64, vals map[string][]byte, ok bool) {
	if len(b) < voteHeaderLen+12 || string(b[:len(voteMagic)]) != voteMagic {
		return 0, nil, false
	}
	n := int(binary.BigEndian.Uint32(b[len(voteMagic):]))
	if n < 8 || voteHeaderLen+n+4 > len(b) {
		return 0, nil, false
	}
	end := voteHeaderLen + n
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return 0, nil, false
	}
	body := b[voteHeaderLen:end]
	seq, body = binary.BigEndian.Uint64(body), body[8:]
	vals = make(map[string][]byte)
	for len(body) > 0 {
		var k, v []byte
		if k, body, ok = cutField(body); !ok {
			return 0, nil, false
		}
		if v, body, ok = cutField(body); !ok {
			return 0, nil, false
		}
		vals[string(k)] = slices.Clone(v)
	}
	return seq, vals, true
}

// cutField cuts a two-byte length and that many bytes off b.
func cutField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if 2+n > len(b) {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}

// encodeLocked encodes the record with the next sequence number.
func (r *VoteRecord) encodeLocked() ([]byte, error) {
	keys := make([]string, 0, len(r.vals))
	for k := range r.vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := append([]byte(voteMagic), 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, r.seq+1)
	for _, k := range keys {
		v := r.vals[k]
		if len(k) > math.MaxUint16 || len(v) > math.MaxUint16 {
			return nil, ErrRecordTooLarge
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
		b = append(b, v...)
	}
	binary.BigEndian.PutUint32(b[len(voteMagic):], uint32(len(b)-voteHeaderLen))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if len(b) > voteCopy {
		return nil, ErrRecordTooLarge
	}
	return b, nil
}

// writeLocked writes the record to both copies, each padded to its block,
// and syncs the file.
func (r *VoteRecord) writeLocked() error {
	b, err := r.encodeLocked()
	if err != nil {
		return err
	}
	block := make([]byte, 2*voteCopy)
	copy(block, b)
	copy(block[voteCopy:], b)
	if _, err := r.f.WriteAt(block, 0); err != nil {
		return fmt.Errorf("write %s: %w", r.path, err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", r.path, err)
	}
	r.seq++
	return nil
}

// Set implements raft.StableStore.
func (r *VoteRecord) Set(key, val []byte) error {
	if err := r.set(key, val); err != nil {
		return err
	}
	r.mirrorLater(key, val)
	return nil
}

// set changes one value and writes the record, unless it is a vote's term
// (see the type's comment).
func (r *VoteRecord) set(key, val []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if bytes.Equal(key, raftStableKeys[1]) {
		r.vals[string(key)] = slices.Clone(val)
		r.termPending = true
		return nil
	}
	old, had := r.vals[string(key)]
	r.vals[string(key)] = slices.Clone(val)
	if err := r.writeLocked(); err != nil {
		if had {
			r.vals[string(key)] = old
		} else {
			delete(r.vals, string(key))
		}
		return err
	}
	r.termPending = false
	return nil
}

// mirrorLater has the mirror take Raft's key at val, off the caller's
// path.
func (r *VoteRecord) mirrorLater(key, val []byte) {
	if r.mirror == nil || !isRaftKey(key) {
		return
	}
	r.mirrorMu.Lock()
	defer r.mirrorMu.Unlock()
	if r.mirrorDue == nil {
		r.mirrorDue = make(map[string][]byte)
	}
	r.mirrorDue[string(key)] = slices.Clone(val)
	if !r.mirroring {
		r.mirroring = true
		r.mirrorWG.Add(1)
		go r.mirrorDueValues()
	}
}

// mirrorDueValues writes the values due to the mirror until none is left.
func (r *VoteRecord) mirrorDueValues() {
	defer r.mirrorWG.Done()
	for {
		r.mirrorMu.Lock()
		due := r.mirrorDue
		r.mirrorDue = nil
		if len(due) == 0 {
			r.mirroring = false
			r.mirrorMu.Unlock()
			return
		}
		r.mirrorMu.Unlock()
		for _, k := range raftStableKeys {
			v, ok := due[string(k)]
			if !ok {
				continue
			}
			var err error
			if isUint64Key(k) && len(v) == 8 {
				err = r.mirror.SetUint64(k, binary.BigEndian.Uint64(v))
			} else {
				err = r.mirror.Set(k, v)
			}
			if err != nil && r.warn != nil {
				r.warn(fmt.Errorf("keep the log store's copy of %s: %w", k, err))
			}
		}
	}
}

// Get implements raft.StableStore; a key never set reads as empty, as
// raft-wal's does.
func (r *VoteRecord) Get(key []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vals[string(key)]), nil
}

// SetUint64 implements raft.StableStore.
func (r *VoteRecord) SetUint64(key []byte, val uint64) error {
	if err := r.set(key, u64(val)); err != nil {
		return err
	}
	r.mirrorLater(key, u64(val))
	return nil
}

// GetUint64 implements raft.StableStore; a key never set reads as 0.
func (r *VoteRecord) GetUint64(key []byte) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.vals[string(key)]
	if len(v) != 8 {
		return 0, nil
	}
	return binary.BigEndian.Uint64(v), nil
}

// VoteLost reports whether the record was lost, and if so the highest
// term the member may have voted in: math.MaxUint64 until SetVoteFloor.
func (r *VoteRecord) VoteLost() (bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.vals[string(keyVoteLost)]
	if !ok || len(v) != 8 {
		return false, 0
	}
	return true, binary.BigEndian.Uint64(v)
}

// SetVoteFloor records, for a lost record, the highest term the member may
// have voted in: the highest any voter reports.
func (r *VoteRecord) SetVoteFloor(term uint64) error { return r.set(keyVoteLost, u64(term)) }

// Repair is an unfinished repair: the first entry the member may have lost
// (0: none) and where its log ended before the damage, if known.
type Repair struct {
	From         uint64
	EndTerm, End uint64 // 0, 0 if not known
}

// Repair returns the unfinished repair the record holds.
func (r *VoteRecord) Repair() Repair {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.vals[string(keyRepair)]
	if len(v) != 24 {
		return Repair{}
	}
	return Repair{From: binary.BigEndian.Uint64(v), EndTerm: binary.BigEndian.Uint64(v[8:]), End: binary.BigEndian.Uint64(v[16:])}
}

// SetRepair records an unfinished repair, or ends it (a zero Repair).
func (r *VoteRecord) SetRepair(rep Repair) error {
	if rep.From == 0 {
		return r.set(keyRepair, nil)
	}
	v := binary.BigEndian.AppendUint64(u64(rep.From), rep.EndTerm)
	return r.set(keyRepair, binary.BigEndian.AppendUint64(v, rep.End))
}

// uint64At returns the uint64 under key, 0 if none.
func (r *VoteRecord) uint64At(key []byte) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.vals[string(key)]
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// DurableTo returns the high-water mark, 0 if none.
func (r *VoteRecord) DurableTo() uint64 { return r.uint64At(keyDurableTo) }

// SealedFrom returns the first index stored with a checksum, 0 if not
// recorded yet.
func (r *VoteRecord) SealedFrom() uint64 { return r.uint64At(keySealedFrom) }

// RaiseMark raises the high-water mark to the index durable returns, read
// under the mark's lock (so that no lowering comes between), if higher.
func (r *VoteRecord) RaiseMark(durable func() (uint64, error)) error {
	r.markMu.Lock()
	defer r.markMu.Unlock()
	to, err := durable()
	if err != nil || to <= r.DurableTo() {
		return err
	}
	return r.set(keyDurableTo, u64(to))
}

// LowerMark runs del, a deletion of the log's end from index lo on, with
// the high-water mark lowered below lo first.
func (r *VoteRecord) LowerMark(lo uint64, del func() error) error {
	r.markMu.Lock()
	defer r.markMu.Unlock()
	if mark := r.DurableTo(); lo > 0 && mark >= lo {
		if err := r.set(keyDurableTo, u64(lo-1)); err != nil {
			return err
		}
	}
	return del()
}

// Close writes a vote's term still held, waits for the mirror to take
// every value, and closes the file. The mirror's store must still be open.
func (r *VoteRecord) Close() error {
	r.mirrorWG.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.termPending {
		err = r.writeLocked()
		r.termPending = false
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func isRaftKey(key []byte) bool {
	for _, k := range raftStableKeys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// isUint64Key reports whether Raft stores key with SetUint64 (each log
// store encodes those its own way).
func isUint64Key(key []byte) bool { return !bytes.Equal(key, raftStableKeys[2]) }

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// settle records, once a start has made the log whole, the high-water
// mark where the log now ends and, the first time, where the checksums
// begin.
func (r *VoteRecord) settle(end, sealedFrom uint64) error {
	if r.SealedFrom() != sealedFrom {
		if err := r.set(keySealedFrom, u64(sealedFrom)); err != nil {
			return err
		}
	}
	if r.DurableTo() != end {
		return r.set(keyDurableTo, u64(end))
	}
	return nil
}
