package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// Reading a raft-wal segment file the way its recovery does not, to tell a
// torn write from corruption.
//
// raft-wal appends a batch of entries as one write of its frames followed
// by a commit frame holding the CRC32C of the batch, then syncs; the next
// batch is written only once that sync returned. When it reopens the
// segment it was appending to, it walks the frames to the first one it
// cannot read and checks only the last batch's CRC: whatever follows is
// taken for the end of a write a crash cut short, and dropped. That is
// right for a torn write, and silently loses acknowledged entries when
// the damage is corruption of earlier batches.
//
// A torn write is the last batch only, and looks like it: its pages reached
// the disk or did not (a file written ahead with zeros, so a page that did
// not reads as zeros), and nothing follows it. So scanTail checks every
// batch's CRC, and calls the damage after the last good batch torn only if
// everything there is intact frames or zeroed sectors, with no complete
// batch, nor the start of another after a commit, among them. Anything
// else (bytes flipped, garbage, a batch synced after the damage, a file
// cut short) is corruption. It cannot tell corruption of the last batch
// alone by zeros in whole sectors, which is what a torn write looks like;
// nor, by itself, every batch past a point reading as zeros, which looks
// like a clean, shorter log: the high-water mark (Open) tells that one.

// raft-wal's segment format (segment/format.go), read here only.
const (
	segHeaderLen   = 32
	segMagic       = 0x58eb6b0d
	frameHeaderLen = 8
	frameEntry     = 1
	frameIndex     = 2
	frameCommit    = 3
	sectorLen      = 512
	// maxFrameLen is raft-wal's MaxEntrySize.
	maxFrameLen = 64 << 20
)

// tailScan is what scanTail found in a segment file.
type tailScan struct {
	// goodEnd is the end of the last batch whose CRC, and every one's
	// before it, checks; goodEntries the entries in those batches. 0 and
	// 0 if none checks.
	goodEnd     int64
	goodEntries uint64
	// dataEnd is the end of the last non-zero byte in the file.
	dataEnd int64
	// damaged reports whether anything follows goodEnd; torn whether that
	// is a torn write rather than corruption, and why what reports why not.
	damaged, torn bool
	why           string
	// lastIntact is the highest index of an intact entry after goodEnd,
	// 0 if none: the segment held at least that far.
	lastIntact uint64
	// size is the file's size; short whether it is smaller than the
	// segment's preallocated size.
	size  int64
	short bool
}

// scanTail reads the segment file f of size bytes, whose first entry has
// index base and whose preallocated size is limit.
func scanTail(f io.ReaderAt, size int64, base uint64, limit int64) (tailScan, error) {
	buf := make([]byte, size)
	if n, err := f.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return tailScan{size: size, short: size < limit}, fmt.Errorf("read segment: %w", err)
	}
	return scanTailBytes(buf, base, limit), nil
}

// scanTailBytes is scanTail of the segment's bytes, buf; it keeps no
// reference to them.
func scanTailBytes(buf []byte, base uint64, limit int64) tailScan {
	size := int64(len(buf))
	s := tailScan{size: size, short: size < limit}
	s.dataEnd = dataEnd(buf)
	s.goodEnd, s.goodEntries = goodBatches(buf)
	if s.goodEnd > 0 && binary.LittleEndian.Uint64(buf[8:16]) != base {
		s.goodEnd, s.goodEntries = 0, 0 // a header that checks but names another segment
	}
	// A file made shorter than it was preallocated (nothing in zkraft or
	// raft-wal shrinks one) whose log runs to within a sector of its end
	// was cut: whatever followed is gone. One cut further on lost only the
	// zeros its log had not reached.
	cut := s.short && size-s.dataEnd < sectorLen && size > 0
	switch {
	case s.dataEnd <= s.goodEnd && !cut:
		return s
	case s.goodEnd == 0 && s.dataEnd <= segHeaderLen && !cut:
		// A header alone: it is written with the first batch, which a
		// crash cut short.
		s.damaged, s.torn, s.why = true, true, "the first batch was cut short"
		return s
	}
	s.damaged = true
	s.torn, s.why, s.lastIntact = judgeDamage(buf, max(s.goodEnd, segHeaderLen), s.dataEnd, base)
	if cut {
		s.torn, s.why = false, "the file is shorter than it was made, and its log runs to its end"
	}
	return s
}

// dataEnd returns the end of buf's last non-zero byte. A segment is most
// often mostly the zeros it was made with (64 MiB): they are skipped a
// block at a time, which a byte at a time took seconds under the race
// detector on a busy machine.
func dataEnd(buf []byte) int64 {
	var zeros [4096]byte
	end := len(buf)
	for end >= len(zeros) && bytes.Equal(buf[end-len(zeros):end], zeros[:]) {
		end -= len(zeros)
	}
	for end > 0 && buf[end-1] == 0 {
		end--
	}
	return int64(end)
}

// goodBatches walks buf's frames from its header and returns the end of
// the last batch whose commit CRC, and all before it, check, and how many
// entries those batches hold.
func goodBatches(buf []byte) (int64, uint64) {
	if len(buf) < segHeaderLen || binary.LittleEndian.Uint64(buf[0:8]) != segMagic {
		return 0, 0
	}
	var goodEnd int64
	var good, pending uint64
	batchStart, pos := int64(0), int64(segHeaderLen)
	for {
		typ, n, ok := frameAt(buf, pos)
		if !ok {
			return goodEnd, good
		}
		switch typ {
		case frameEntry:
			pending++
		case frameCommit:
			if crc32.Checksum(buf[batchStart:pos], castagnoli) != binary.LittleEndian.Uint32(buf[pos+4:pos+8]) {
				return goodEnd, good
			}
			good += pending
			pending = 0
			goodEnd = pos + frameHeaderLen
			batchStart = goodEnd
		}
		pos += n
	}
}

// frameAt reads the frame header at pos and returns its type and its
// length with padding; ok is false for zeros, garbage, or a frame that
// runs past buf.
func frameAt(buf []byte, pos int64) (typ byte, n int64, ok bool) {
	if pos+frameHeaderLen > int64(len(buf)) {
		return 0, 0, false
	}
	h := buf[pos : pos+frameHeaderLen]
	typ = h[0]
	if h[1] != 0 || h[2] != 0 || h[3] != 0 {
		return 0, 0, false
	}
	switch typ {
	case frameCommit:
		return typ, frameHeaderLen, true
	case frameEntry, frameIndex:
		l := int64(binary.LittleEndian.Uint32(h[4:8]))
		n = frameHeaderLen + l + (frameHeaderLen-l%frameHeaderLen)%frameHeaderLen
		if l == 0 || l > maxFrameLen || pos+n > int64(len(buf)) {
			return 0, 0, false
		}
		return typ, n, true
	}
	return 0, 0, false
}

// judgeDamage decides whether buf[from:end), what follows the last good
// batch, is a torn write, and returns the highest index of an intact entry
// in it. from is where the damaged batch starts.
func judgeDamage(buf []byte, from, end int64, base uint64) (torn bool, why string, lastIntact uint64) {
	lastIntact = lastIntactEntry(buf, from, end, base)
	torn, why = isTorn(buf, from, end, base)
	return torn, why, lastIntact
}

// lastIntactEntry returns the highest index of an intact entry in
// buf[from:end), 0 if none.
func lastIntactEntry(buf []byte, from, end int64, base uint64) uint64 {
	var last uint64
	for pos := from; pos < end; pos += frameHeaderLen {
		if typ, _, ok := frameAt(buf, pos); ok && typ == frameEntry {
			if l, intact := intactEntry(buf[pos+frameHeaderLen : pos+frameHeaderLen+int64(binary.LittleEndian.Uint32(buf[pos+4:]))]); intact && l.Index >= base {
				last = max(last, l.Index)
			}
		}
	}
	return last
}

// isTorn reports whether buf[from:end) is a torn write, and why not.
func isTorn(buf []byte, from, end int64, base uint64) (bool, string) {
	// The damaged batch itself, as far as its frames can be walked: an entry
	// that does not match its checksum while none of its sectors reads as
	// zeros was not cut short; it was changed.
	for pos := from; pos < end; {
		typ, n, ok := frameAt(buf, pos)
		if !ok {
			break
		}
		if typ == frameEntry {
			payload := buf[pos+frameHeaderLen : pos+frameHeaderLen+int64(binary.LittleEndian.Uint32(buf[pos+4:]))]
			if _, intact := intactEntry(payload); !intact && !zeroSectorIn(buf, pos, pos+n) {
				return false, fmt.Sprintf("the entry at offset %d does not match its checksum and was not cut short", pos)
			}
		}
		pos += n
	}
	// Past the damage: a batch that checks, or a frame after a commit, means
	// a batch was synced after the damaged one, which a crash cannot leave.
	for pos := from; pos < end; pos += frameHeaderLen {
		typ, _, ok := frameAt(buf, pos)
		if !ok || typ != frameEntry {
			continue
		}
		l, intact := intactEntry(buf[pos+frameHeaderLen : pos+frameHeaderLen+int64(binary.LittleEndian.Uint32(buf[pos+4:]))])
		if !intact || l.Index < base {
			continue
		}
		next, synced := walkBatch(buf, pos, end)
		if synced {
			return false, fmt.Sprintf("a batch synced after the damage follows (offset %d)", pos)
		}
		pos = max(pos, next-frameHeaderLen)
	}
	return true, "the last batch was cut short"
}

// walkBatch walks the frames from start, an intact entry, to the end of
// its batch, and returns where the walk stopped and whether it shows the
// batch synced: a commit whose CRC checks from start (start began the
// batch), or another frame after the commit.
func walkBatch(buf []byte, start, end int64) (int64, bool) {
	pos := start
	for pos < end {
		typ, n, ok := frameAt(buf, pos)
		if !ok {
			return pos, false
		}
		if typ == frameCommit {
			if crc32.Checksum(buf[start:pos], castagnoli) == binary.LittleEndian.Uint32(buf[pos+4:pos+8]) {
				return pos + n, true
			}
			if _, _, more := frameAt(buf, pos+n); more && pos+n < end {
				return pos + n, true
			}
			return pos + n, false
		}
		pos += n
	}
	return pos, false
}

// zeroSectorIn reports whether a sector the range [a,b) of buf crosses
// reads as zeros over all of its part in the range (at least 16 bytes):
// what a sector a crash kept from the disk leaves.
func zeroSectorIn(buf []byte, a, b int64) bool {
	for s := a - a%sectorLen; s < b; s += sectorLen {
		lo, hi := max(a, s), min(b, s+sectorLen)
		if hi-lo >= 16 && !slices.ContainsFunc(buf[lo:hi], func(c byte) bool { return c != 0 }) {
			return true
		}
	}
	return false
}

// intactEntry decodes a frame's payload as a raft-wal entry and reports
// whether it is one and matches its checksum.
func intactEntry(payload []byte) (l raft.Log, ok bool) {
	defer func() {
		if recover() != nil { // raft-wal's decoder panics on a varint longer than 64 bits
			ok = false
		}
	}()
	if err := (&wal.BinaryCodec{}).Decode(payload, &l); err != nil || !Sealed(&l) || !Intact(&l) {
		return l, false
	}
	return l, true
}

// SegmentEntry is where an entry lies in a raft-wal segment file, for the
// tools that damage one on purpose (package damage).
type SegmentEntry struct {
	Index       uint64
	Offset, End int64 // the frame
	Data        int64 // where the entry's data starts; it runs to DataEnd
	DataEnd     int64
}

// ReadSegment walks the frames of a segment file's contents from its
// header, as far as they read, and returns its entries and the end of each
// commit frame.
func ReadSegment(buf []byte) (entries []SegmentEntry, commits []int64) {
	for pos := int64(segHeaderLen); ; {
		typ, n, ok := frameAt(buf, pos)
		if !ok {
			return entries, commits
		}
		switch typ {
		case frameEntry:
			payload := buf[pos+frameHeaderLen : pos+frameHeaderLen+int64(binary.LittleEndian.Uint32(buf[pos+4:]))]
			if e, ok := locateData(payload); ok {
				e.Offset, e.End = pos, pos+n
				e.Data += pos + frameHeaderLen
				e.DataEnd += pos + frameHeaderLen
				entries = append(entries, e)
			}
		case frameCommit:
			commits = append(commits, pos+n)
		}
		pos += n
	}
}

// locateData decodes the head of a raft-wal entry (index, term and type as
// uvarints, then the data's length) and returns its index and where its
// data lies in payload.
func locateData(payload []byte) (SegmentEntry, bool) {
	var e SegmentEntry
	var fields [4]uint64
	at := 0
	for i := range fields {
		v, n := binary.Uvarint(payload[at:])
		if n <= 0 {
			return e, false
		}
		fields[i], at = v, at+n
	}
	if uint64(len(payload)-at) < fields[3] {
		return e, false
	}
	e.Index, e.Data, e.DataEnd = fields[0], int64(at), int64(at)+int64(fields[3])
	return e, true
}
