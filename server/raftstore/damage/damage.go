// Package damage damages a stopped zkraft member's files as a failing disk
// would: bytes flipped inside a log entry, a block zeroed, a file cut short,
// the end of the last append lost to a power cut, a snapshot or the term
// and vote record damaged. Tests, the zkchaos nemesis and the disk-fault
// harness (cmd/zkdisk) use it; nothing in a server does.
package damage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"

	"github.com/zkraft/zkraft/server/raftstore"
)

// Kind is a kind of damage.
type Kind string

// The kinds of damage.
const (
	// FlipEntry flips 16 bytes inside the data of a log entry past the
	// newest snapshot: one the restart replays.
	FlipEntry Kind = "flip-entry"
	// ZeroBlock zeroes a 4 KiB block in the middle of the newest log
	// segment's log.
	ZeroBlock Kind = "zero-block"
	// Truncate cuts the newest log segment short in the middle of its log.
	Truncate Kind = "truncate"
	// TornWrite loses what the last append wrote, as a power cut before
	// its sync returned would: its sectors read as zeros.
	TornWrite Kind = "torn-write"
	// Snapshot flips 16 bytes in the middle of the newest snapshot's data.
	Snapshot Kind = "snapshot"
	// Vote damages both copies of the term and vote record.
	Vote Kind = "vote"
	// Meta zeroes raft-wal's metadata database past its first two pages,
	// or a page in the middle of raft-boltdb's file.
	Meta Kind = "meta"
)

// Kinds lists every kind of damage.
var Kinds = []Kind{FlipEntry, ZeroBlock, Truncate, TornWrite, Snapshot, Vote, Meta}

// ErrNothing is returned when the member's files hold nothing the damage
// could hit (no entry past the snapshot, no snapshot, a log store without
// segments).
var ErrNothing = errors.New("damage: nothing to damage")

// Apply damages the files of the stopped member whose data dir (and log
// dir) is dir, choosing where with r, and says what it did.
func Apply(dir string, kind Kind, r *rand.Rand) (string, error) {
	switch kind {
	case FlipEntry:
		return flipEntry(dir, r)
	case ZeroBlock, Truncate, TornWrite:
		return damageTail(dir, kind, r)
	case Snapshot:
		return damageSnapshot(dir)
	case Vote:
		return damageVote(dir)
	case Meta:
		return damageMeta(dir)
	}
	return "", fmt.Errorf("damage: unknown kind %q", kind)
}

// segments returns the member's raft-wal segment files, oldest first.
func segments(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "raft-wal", "*.wal"))
	sort.Strings(files)
	if err == nil && len(files) == 0 {
		err = ErrNothing
	}
	return files, err
}

// snapshotIndex returns the index of the member's newest snapshot, 0 if
// none.
func snapshotIndex(dir string) uint64 {
	index, _ := newest(dir)
	return index
}

// newestSnapshot returns the directory of the member's newest snapshot, ""
// if none.
func newestSnapshot(dir string) string {
	_, path := newest(dir)
	return path
}

// newest returns the index and directory of the member's newest complete
// snapshot, by its metadata (names do not sort by index).
func newest(dir string) (uint64, string) {
	metas, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	var index uint64
	var path string
	for _, m := range metas {
		if strings.HasSuffix(filepath.Dir(m), ".tmp") {
			continue
		}
		b, err := os.ReadFile(m)
		var meta raft.SnapshotMeta
		if err == nil && json.Unmarshal(b, &meta) == nil && meta.Index >= index {
			index, path = meta.Index, filepath.Dir(m)
		}
	}
	return index, path
}

func flipEntry(dir string, r *rand.Rand) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		return flipBoltEntry(dir, r)
	}
	files, err := segments(dir)
	if err != nil {
		return "", err
	}
	snap := snapshotIndex(dir)
	type candidate struct {
		file string
		e    raftstore.SegmentEntry
	}
	var candidates []candidate
	for _, f := range files {
		buf, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		entries, _ := raftstore.ReadSegment(buf)
		for _, e := range entries {
			if e.Index > snap && e.DataEnd-e.Data >= 16 {
				candidates = append(candidates, candidate{f, e})
			}
		}
	}
	if len(candidates) == 0 {
		return "", ErrNothing
	}
	c := candidates[r.IntN(len(candidates))]
	at := c.e.Data + r.Int64N(c.e.DataEnd-c.e.Data-15)
	if err := edit(c.file, func(b []byte) []byte { flip(b[at : at+16]); return b }); err != nil {
		return "", err
	}
	return fmt.Sprintf("flipped 16 bytes of entry %d's data at offset %d of %s", c.e.Index, at, c.file), nil
}

// flipBoltEntry flips 16 bytes of an entry's value where raft-boltdb's file
// holds it.
func flipBoltEntry(dir string, r *rand.Rand) (string, error) {
	path := filepath.Join(dir, "raft.db")
	snap := snapshotIndex(dir)
	var value []byte
	var index uint64
	db, err := bbolt.Open(path, 0o644, &bbolt.Options{ReadOnly: true})
	if err != nil {
		return "", err
	}
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("logs"))
		if b == nil {
			return ErrNothing
		}
		var keys [][]byte
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(keys) < 1000; k, v = c.Prev() {
			if i := be64(k); i > snap && len(v) >= 64 {
				keys = append(keys, slices.Clone(k))
			}
		}
		if len(keys) == 0 {
			return ErrNothing
		}
		k := keys[r.IntN(len(keys))]
		index, value = be64(k), slices.Clone(b.Get(k))
		return nil
	})
	db.Close()
	if err != nil {
		return "", err
	}
	var at int
	err = edit(path, func(b []byte) []byte {
		at = bytes.Index(b, value)
		if at >= 0 {
			at += len(value) - 24
			flip(b[at : at+16])
		}
		return b
	})
	if err == nil && at < 0 {
		err = ErrNothing
	}
	return fmt.Sprintf("flipped 16 bytes of entry %d's value at offset %d of %s", index, at, path), err
}

func damageTail(dir string, kind Kind, r *rand.Rand) (string, error) {
	files, err := segments(dir)
	if err != nil {
		return "", err
	}
	tail := files[len(files)-1]
	buf, err := os.ReadFile(tail)
	if err != nil {
		return "", err
	}
	entries, commits := raftstore.ReadSegment(buf)
	if len(entries) < 8 || len(commits) < 3 {
		return "", ErrNothing
	}
	end := commits[len(commits)-1]
	var what string
	switch kind {
	case ZeroBlock:
		// Before the last append: damage to it alone reads as a torn write.
		last := commits[len(commits)-2] &^ 4095
		if last < 2*4096 {
			return "", ErrNothing
		}
		at := (last/4 + r.Int64N(last*3/4-4096+1)) &^ 4095
		zero(buf[at : at+4096])
		what = fmt.Sprintf("zeroed 4 KiB at offset %d of %s (its log ends at %d)", at, tail, end)
	case Truncate:
		at := end/4 + r.Int64N(end/2)
		buf = buf[:at]
		what = fmt.Sprintf("cut %s at offset %d (its log ended at %d)", tail, at, end)
	case TornWrite:
		from := commits[len(commits)-2]
		// The sectors of the last append that reached the disk: none past
		// one chosen at random.
		keep := (from + r.Int64N(end-from)) &^ 511
		keep = max(keep, from)
		zero(buf[keep:end])
		what = fmt.Sprintf("lost the last append's bytes from offset %d to %d of %s", keep, end, tail)
	}
	return what, os.WriteFile(tail, buf, 0o644)
}

func damageSnapshot(dir string) (string, error) {
	newest := newestSnapshot(dir)
	if newest == "" {
		return "", ErrNothing
	}
	newest = filepath.Join(newest, "state.bin")
	var at int
	err := edit(newest, func(b []byte) []byte {
		if len(b) < 32 {
			return b
		}
		at = len(b) / 2
		flip(b[at : at+16])
		return b
	})
	return fmt.Sprintf("flipped 16 bytes at offset %d of %s", at, newest), err
}

func damageVote(dir string) (string, error) {
	path := filepath.Join(dir, raftstore.VoteFile)
	err := edit(path, func(b []byte) []byte {
		for _, at := range []int{20, 4096 + 20} {
			if at+4 <= len(b) {
				flip(b[at : at+4])
			}
		}
		return b
	})
	return "damaged both copies of " + path, err
}

func damageMeta(dir string) (string, error) {
	if path := filepath.Join(dir, "raft.db"); exists(path) {
		var at int
		err := edit(path, func(b []byte) []byte {
			pages := len(b) / 4096
			at = (2 + (pages-2)/2) * 4096
			if pages > 3 {
				zero(b[at : at+4096])
			}
			return b
		})
		return fmt.Sprintf("zeroed the page at offset %d of %s", at, path), err
	}
	path := filepath.Join(dir, "raft-wal", "wal-meta.db")
	err := edit(path, func(b []byte) []byte {
		if len(b) > 2*4096 {
			zero(b[2*4096:])
		}
		return b
	})
	return "zeroed " + path + " past its meta pages", err
}

func edit(path string, f func([]byte) []byte) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, f(b), 0o644)
}

func flip(b []byte) {
	for i := range b {
		b[i] ^= 0x5a
	}
}

func zero(b []byte) { clear(b) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func be64(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}
