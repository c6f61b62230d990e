package raftstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// FuzzEntry: an entry sealed, encoded as raft-wal stores it, then damaged
// (bytes flipped at the places the input names): decoding never panics,
// and a damaged entry that still decodes is never taken for intact.
func FuzzEntry(f *testing.F) {
	f.Add(uint64(7), uint64(2), []byte("create /a"), []byte{}, []byte{3, 0x40})
	f.Add(uint64(1), uint64(1), []byte{}, []byte("ext"), []byte{0, 1})
	f.Add(uint64(1<<40), uint64(9), bytes.Repeat([]byte("x"), 300), []byte{}, []byte{40, 1, 41, 2, 42, 4})
	f.Fuzz(func(t *testing.T, index, term uint64, data, ext, flips []byte) {
		if len(ext) > 0 && ext[0] == sumTag {
			t.Skip() // Extensions that open with the tag hold a sum: nothing else in zkraft writes them
		}
		l := &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: data, Extensions: ext}
		Seal(l)
		want := *l
		var buf bytes.Buffer
		if err := (&wal.BinaryCodec{}).Encode(l, &buf); err != nil {
			t.Skip()
		}
		b := buf.Bytes()
		changed := false
		for i := 0; i+1 < len(flips); i += 2 {
			at := int(flips[i]) % len(b)
			if flips[i+1] != 0 {
				b[at] ^= flips[i+1]
				changed = true
			}
		}
		got, err := decodeEntry(b)
		if err != nil {
			return
		}
		same := got.Index == want.Index && got.Term == want.Term && got.Type == want.Type &&
			bytes.Equal(got.Data, want.Data) && bytes.Equal(got.Extensions, want.Extensions)
		if Intact(&got) && !same && Sealed(&got) {
			t.Fatalf("a damaged entry passes its check: %+v from %+v", got, want)
		}
		if !changed && !Intact(&got) {
			t.Fatalf("an entry fails its own check")
		}
	})
}

// FuzzScanTail: any bytes as the segment being appended to: the scan and
// the segment walk never panic and stay within the file.
func FuzzScanTail(f *testing.F) {
	dir := f.TempDir()
	w := newWAL(f, dir)
	writeBatches(f, w, 6, 3)
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	seg, err := os.ReadFile(tailFile(f, dir))
	if err != nil {
		f.Fatal(err)
	}
	seg = seg[:dataEnd(seg)+64]
	f.Add(seg)
	cut := bytes.Clone(seg)
	clear(cut[len(cut)/2 : len(cut)/2+300])
	f.Add(cut)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := scanTail(bytes.NewReader(b), int64(len(b)), 1, segmentSize)
		if err != nil {
			return
		}
		if s.goodEnd > int64(len(b)) || s.dataEnd > int64(len(b)) {
			t.Fatalf("the scan reaches past the file: %+v of %d bytes", s, len(b))
		}
		entries, commits := ReadSegment(b)
		for _, e := range entries {
			if e.Data < e.Offset || e.DataEnd > e.End || e.End > int64(len(b)) {
				t.Fatalf("an entry out of its frame: %+v", e)
			}
		}
		for _, c := range commits {
			if c > int64(len(b)) {
				t.Fatalf("a commit past the file: %d", c)
			}
		}
	})
}

// FuzzVoteCopy: any bytes as a copy of the term and vote record: decoding
// never panics, and a copy that decodes encodes back to itself.
func FuzzVoteCopy(f *testing.F) {
	r := &VoteRecord{vals: map[string][]byte{"CurrentTerm": u64(9), "LastVoteCand": []byte("2")}}
	good, err := r.encodeLocked()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(voteMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, vals, ok := decodeVoteCopy(b)
		if !ok {
			return
		}
		again := &VoteRecord{seq: seq - 1, vals: vals}
		enc, err := again.encodeLocked()
		if err != nil {
			return // a value too large to write back
		}
		if seq2, vals2, ok := decodeVoteCopy(enc); !ok || seq2 != seq || len(vals2) != len(vals) {
			t.Fatalf("a decoded record does not encode back: %d %v", seq, vals)
		}
	})
}

// FuzzCheckBoltPages: any bytes as a bbolt file: the page walk that stands
// between bbolt and a damaged file never panics.
func FuzzCheckBoltPages(f *testing.F) {
	m := &member{dir: f.TempDir(), kind: KindBolt}
	m.fill(f, 40, 10)
	good, err := os.ReadFile(filepath.Join(m.dir, "raft.db"))
	if err != nil {
		f.Fatal(err)
	}
	good = good[:min(len(good), 64<<10)]
	f.Add(good)
	f.Add(good[:8192])
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = checkBoltPages(path)
	})
}

// decodeEntry decodes b as raft-wal does, a panic of its decoder an error
// (see ReadEntry).
func decodeEntry(b []byte) (l raft.Log, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panicked: %v", r)
		}
	}()
	err = (&wal.BinaryCodec{}).Decode(b, &l)
	return l, err
}
