package raftstore

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// An entry's checksum.
//
// Every entry a durable member stores carries a CRC32C of what it means
// (index, term, type, data, and the rest of its extensions) at the head
// of its Extensions, which hashicorp/raft leaves to the application and
// carries with the entry everywhere: into every member's log store, over
// the network to followers, into the state machine. The member that first
// stores an entry (the leader, as it appends it) seals it; every member
// stores the same bytes, so the sum checks the entry end to end: on the
// leader's disk, on the wire, on each follower's disk, and in memory until
// it is applied. Entries written by an older zkraft have no sum and are
// taken as they are.

// sumTag opens an entry's Extensions when they hold its sum: version 1,
// CRC32C. A sealed entry's Extensions are sumTag, the four bytes of the sum
// (big-endian), then whatever else they held.
const sumTag = 0xC5

// sumLen is what a sum adds to an entry's Extensions.
const sumLen = 5

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sealed reports whether l carries a checksum.
func Sealed(l *raft.Log) bool {
	return len(l.Extensions) >= sumLen && l.Extensions[0] == sumTag
}

// Seal puts l's checksum at the head of its Extensions, unless it carries
// one already. Nothing else in zkraft writes an entry's Extensions, so ones
// that open with the tag hold a sum.
func Seal(l *raft.Log) {
	if Sealed(l) {
		return
	}
	ext := make([]byte, sumLen+len(l.Extensions))
	copy(ext[sumLen:], l.Extensions)
	ext[0] = sumTag
	binary.BigEndian.PutUint32(ext[1:sumLen], entrySum(l, ext[sumLen:]))
	l.Extensions = ext
}

// Intact reports whether l's checksum matches it; an entry without one
// (an older zkraft wrote it) is taken as intact if its Extensions are
// empty (nothing else writes them).
func Intact(l *raft.Log) bool { return IntactFrom(l, 0) }

// IntactFrom is Intact for a log whose entries from sealedFrom on all carry
// a checksum (0: not known): one of them without is damaged.
func IntactFrom(l *raft.Log, sealedFrom uint64) bool {
	if !Sealed(l) {
		return len(l.Extensions) == 0 && (sealedFrom == 0 || l.Index < sealedFrom)
	}
	return binary.BigEndian.Uint32(l.Extensions[1:sumLen]) == entrySum(l, l.Extensions[sumLen:])
}

// entrySum is the CRC32C of l's index, term, type, data and rest, the
// Extensions after the sum.
func entrySum(l *raft.Log, rest []byte) uint32 {
	var head [21]byte
	binary.BigEndian.PutUint64(head[0:], l.Index)
	binary.BigEndian.PutUint64(head[8:], l.Term)
	head[16] = byte(l.Type)
	binary.BigEndian.PutUint32(head[17:], uint32(len(l.Data)))
	sum := updateSmall(0, head[:]) // crc32.Update would move head to the heap, an allocation per entry
	sum = crc32.Update(sum, castagnoli, l.Data)
	return crc32.Update(sum, castagnoli, rest)
}

// updateSmall is crc32.Update with the Castagnoli table, byte by byte: for
// a few bytes on the stack.
func updateSmall(crc uint32, p []byte) uint32 {
	crc = ^crc
	for _, v := range p {
		crc = castagnoli[byte(crc)^v] ^ (crc >> 8)
	}
	return ^crc
}
