package tree

import "encoding/binary"

// This file is where a tree keeps its nodes, their child sets and their
// data, so that the garbage collector has little to do: nodes in chunks of
// a few thousand that hold no pointer, found by a nodeID; data in chunks
// of bytes, found by a dataRef. A million znodes are a few hundred objects
// that the collector marks without scanning, where they were three million
// objects of which a third held pointers (33 ms a full collection, 0.6 ms
// now, on this project's machine). That lets the server collect often,
// with little headroom, at no cost to its writes.

// nodeID names a node in its tree's node table; 0 names none.
type nodeID uint32

const (
	nodeChunkBits = 12 // 4096 nodes (288 KiB) to a chunk
	nodeChunkMask = 1<<nodeChunkBits - 1
)

// nodeTable holds a tree's nodes. A *node from at stays valid until its id
// is released: chunks are never moved.
type nodeTable struct {
	chunks [][]node
	free   []nodeID // released ids, reused first
	next   nodeID   // the least id never handed out; 0 is never one
}

func (s *nodeTable) at(id nodeID) *node {
	return &s.chunks[id>>nodeChunkBits][id&nodeChunkMask]
}

// valid reports whether id is one the table handed out.
func (s *nodeTable) valid(id nodeID) bool { return id != 0 && id < s.next }

// alloc returns a zeroed node and its id.
func (s *nodeTable) alloc() (nodeID, *node) {
	if n := len(s.free); n > 0 {
		id := s.free[n-1]
		s.free = s.free[:n-1]
		return id, s.at(id)
	}
	if s.next == 0 {
		s.next = 1
	}
	id := s.next
	if int(id>>nodeChunkBits) == len(s.chunks) {
		s.chunks = append(s.chunks, make([]node, 1<<nodeChunkBits))
	}
	s.next++
	return id, s.at(id)
}

// release zeroes the node id and lets alloc hand it out again.
func (s *nodeTable) release(id nodeID) {
	*s.at(id) = node{}
	s.free = append(s.free, id)
}

// table is a slice whose released indices are handed out again first;
// index 0 is never handed out, so that it can mean none.
type table[T any] struct {
	items []T
	free  []uint32
}

func (s *table[T]) add(v T) uint32 {
	if len(s.items) == 0 {
		var none T
		s.items = append(s.items, none)
	}
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		s.items[i] = v
		return i
	}
	s.items = append(s.items, v)
	return uint32(len(s.items) - 1)
}

// release zeroes item i and lets add hand i out again.
func (s *table[T]) release(i uint32) {
	var zero T
	s.items[i] = zero
	s.free = append(s.free, i)
}

// used returns how many items are handed out.
func (s *table[T]) used() int { return max(0, len(s.items)-1-len(s.free)) }

// dataRef is where a node's data is: an item at off in chunk of its tree's
// data arena. Chunk 0 holds no item: {0, 0} is no data (nil), {0, 1} empty
// data.
type dataRef struct {
	chunk uint32
	off   uint32
}

var emptyData = dataRef{0, 1}

const (
	// dataHeader is an item's header: its owner's id and its length.
	dataHeader = 8
	// dataChunkMin and dataChunkMax bound a chunk's size: the first is
	// small, each next one twice the last, up to the largest.
	dataChunkMin = 4 << 10
	dataChunkMax = 1 << 20
	// dataAlone is the data size from which an item gets a chunk of its own.
	dataAlone = 64 << 10
)

// dataArena holds the data of a tree's nodes. Items are appended to the
// chunk being filled and never overwritten: a node's new data is a new
// item, the old one is counted dead, and a chunk less than half alive is
// compacted (its live items copied to the chunk being filled, the chunk
// dropped). So a slice handed out (a reply being written, a multi's undo,
// a snapshot's copy) keeps its bytes, its chunk kept alive by the
// collector for as long as it is used.
type dataArena struct {
	chunks table[dataChunk] // by number; a dropped chunk's number is reused
	cur    uint32           // the chunk being filled; 0 before the first
	last   int              // the size of the last chunk made
}

type dataChunk struct {
	buf  []byte // its items; len is how far it is filled
	live int    // bytes of its live items, headers included
}

// dataOf returns n's data, nil or not as it was set. Callers must not
// modify it; it stays as it is after n changes.
func (t *Tree) dataOf(n *node) []byte {
	r := n.data
	if r.chunk == 0 {
		if r == emptyData {
			return []byte{}
		}
		return nil
	}
	start := int(r.off) + dataHeader
	return t.arena.chunks.items[r.chunk].buf[start : start+int(n.dataLen) : start+int(n.dataLen)]
}

// setNodeData makes a copy of b the data of n, whose id is id, and lets its
// old data go.
func (t *Tree) setNodeData(id nodeID, n *node, b []byte) {
	t.clearData(n)
	n.dataLen = uint32(len(b))
	switch {
	case b == nil:
	case len(b) == 0:
		n.data = emptyData
	default:
		n.data = t.putData(id, b)
	}
}

// clearData lets n's data go. The node no longer refers to it when its
// chunk may be compacted, which would otherwise move it as live.
func (t *Tree) clearData(n *node) {
	old, size := n.data, n.dataLen
	n.data, n.dataLen = dataRef{}, 0
	t.dropData(old, size)
}

// dropData counts the item at r, of length size, dead, and compacts its
// chunk if that leaves it less than half alive.
func (t *Tree) dropData(r dataRef, size uint32) {
	if r.chunk == 0 {
		return
	}
	a := &t.arena
	c := &a.chunks.items[r.chunk]
	c.live -= dataHeader + int(size)
	if r.chunk != a.cur && c.live*2 < len(c.buf) {
		t.compact(r.chunk)
	}
}

// putData appends an item holding b for the node id and returns where it
// is. A chunk that is full is left; it is compacted then if it is less than
// half alive (its items died while it was being filled).
func (t *Tree) putData(id nodeID, b []byte) dataRef {
	a := &t.arena
	size := dataHeader + len(b)
	if len(b) >= dataAlone {
		c := a.newChunk(size)
		return a.append(c, id, b)
	}
	for a.cur == 0 || len(a.chunks.items[a.cur].buf)+size > cap(a.chunks.items[a.cur].buf) {
		full := a.cur
		a.last = min(dataChunkMax, max(dataChunkMin, 2*a.last))
		a.cur = a.newChunk(max(a.last, size))
		if full != 0 && a.chunks.items[full].live*2 < len(a.chunks.items[full].buf) {
			t.compact(full) // into the new chunk, which may fill and be left in turn
		}
	}
	return a.append(a.cur, id, b)
}

func (a *dataArena) append(c uint32, id nodeID, b []byte) dataRef {
	ch := &a.chunks.items[c]
	off := len(ch.buf)
	ch.buf = binary.LittleEndian.AppendUint32(ch.buf, uint32(id))
	ch.buf = binary.LittleEndian.AppendUint32(ch.buf, uint32(len(b)))
	ch.buf = append(ch.buf, b...)
	ch.live += dataHeader + len(b)
	return dataRef{chunk: c, off: uint32(off)}
}

// newChunk makes a chunk of capacity size and returns its number.
func (a *dataArena) newChunk(size int) uint32 {
	return a.chunks.add(dataChunk{buf: make([]byte, 0, size)})
}

// compact copies the live items of chunk c to the chunk being filled,
// moves their nodes' refs, and drops c. An item is live when its owner's
// ref is still it.
func (t *Tree) compact(c uint32) {
	a := &t.arena
	buf := a.chunks.items[c].buf
	if a.chunks.items[c].live > 0 {
		for off := 0; off < len(buf); {
			id := nodeID(binary.LittleEndian.Uint32(buf[off:]))
			size := int(binary.LittleEndian.Uint32(buf[off+4:]))
			if t.nodes.valid(id) {
				if n := t.nodes.at(id); n.data == (dataRef{chunk: c, off: uint32(off)}) {
					n.data = t.putData(id, buf[off+dataHeader:off+dataHeader+size])
				}
			}
			off += dataHeader + size
		}
	}
	a.chunks.release(c)
}

// arenaBytes returns the bytes the arena's chunks hold, live or dead (tests).
func (a *dataArena) arenaBytes() (used int) {
	for _, c := range a.chunks.items {
		used += len(c.buf)
	}
	return used
}
