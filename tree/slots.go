package tree

import (
	"hash/maphash"
	"slices"
	"unsafe"
)

// This file is a javaSet's table of names: open addressing with linear
// probing, by a seeded hash, with slots that hold where the name is and the
// entry together, so that a lookup reads one slot and then the name and the
// entry at once.

// slot is a name in a javaSet's table, with its place and its entry. It
// holds no pointer: the name is an offset and a length into the set's
// names, beside 32 bits of the name's hash, which find its place and
// spare reading names that cannot match; 20 bytes for a node's entry.
// A slot of size 0 is empty; names are never empty.
type slot[E any] struct {
	off  uint32
	size uint32
	hash uint32
	seq  uint32 // the name's insertion sequence
	e    E
}

// key returns the name of the slot sl of s.
func (s *javaSet[E]) key(sl *slot[E]) string {
	return unsafe.String(&s.names[sl.off], sl.size)
}

// nameSeed seeds nameHash. It only places names in the tables of javaSets,
// which nothing observable depends on.
var nameSeed = maphash.MakeSeed()

func nameHash(name string) uint32 { return uint32(maphash.String(nameSeed, name)) }

// lookup returns the slot of name.
func (s *javaSet[E]) lookup(name string) (int, bool) {
	if s.n == 0 {
		return 0, false
	}
	h := nameHash(name)
	for i := s.home(h); ; i = s.after(i) {
		sl := &s.slots[i]
		if sl.size == 0 {
			return 0, false
		}
		if sl.hash == h && s.key(sl) == name {
			return i, true
		}
	}
}

// all yields every name and entry, in the table's order (not Java's).
func (s *javaSet[E]) all(yield func(string, E) bool) {
	for i := range s.slots {
		if sl := &s.slots[i]; sl.size != 0 && !yield(s.key(sl), sl.e) {
			return
		}
	}
}

// store puts name, which is not in the set, into the table with its
// place, growing the table past four fifths full (see full).
func (s *javaSet[E]) store(name string, e E, seq uint32) {
	if name == "" {
		panic("tree: empty name in a set")
	}
	if full(s.n+1, len(s.slots)) {
		s.grow(max(8, len(s.slots)*3/2))
	}
	if len(s.names)+len(name) > cap(s.names) {
		s.repack(len(name))
	}
	off := len(s.names)
	s.names = append(s.names, name...)
	s.insertSlot(slot[E]{off: uint32(off), size: uint32(len(name)), hash: nameHash(name), seq: seq, e: e})
	s.n++
}

// full reports whether a table of size slots is too full for n names.
// Linear probing looks at 1/2(1 + 1/(1-a)^2) slots to find that a name is
// not there at load a: 32 at seven eighths, 13 at four fifths; a create
// looks twice (the tree's check, then the insert).
func full(n, size int) bool { return n*5 > size*4 }

// repack copies the live names to a new array with room for extra more
// bytes and a quarter to spare, leaving the old array as it is (strings
// handed out, and a clone kept for a snapshot, may still read it).
func (s *javaSet[E]) repack(extra int) {
	live := len(s.names) - s.dead
	names := make([]byte, 0, (live+extra)*5/4+16)
	for i := range s.slots {
		if sl := &s.slots[i]; sl.size != 0 {
			off := len(names)
			names = append(names, s.key(sl)...)
			sl.off = uint32(off)
		}
	}
	s.names, s.dead = names, 0
}

func (s *javaSet[E]) insertSlot(sl slot[E]) {
	i := s.home(sl.hash)
	for s.slots[i].size != 0 {
		i = s.after(i)
	}
	s.slots[i] = sl
}

// grow moves the names to a table of size slots.
func (s *javaSet[E]) grow(size int) {
	old := s.slots
	s.slots = newSlots[E](size)
	for _, sl := range old {
		if sl.size != 0 {
			s.insertSlot(sl)
		}
	}
}

// unstore empties slot i, moving later slots of its probe run back (no
// tombstones), and lets an emptied table go. The names' array is packed
// anew once most of it is removed names.
func (s *javaSet[E]) unstore(i int) {
	if s.n--; s.n == 0 {
		s.slots, s.names, s.dead = nil, nil, 0
		return
	}
	s.dead += int(s.slots[i].size)
	for j := s.after(i); s.slots[j].size != 0; j = s.after(j) {
		// The slot at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if s.distance(s.home(s.slots[j].hash), j) >= s.distance(i, j) {
			s.slots[i], i = s.slots[j], j
		}
	}
	s.slots[i] = slot[E]{}
	if s.dead > 256 && s.dead*2 > len(s.names) {
		s.repack(0)
	}
}

// newSlots returns a table of at least size slots, and of as many more as
// fit in the memory the allocator gives it anyway (Go rounds an allocation
// up to its size class, or a large one to whole pages).
func newSlots[E any](size int) []slot[E] {
	sl := slices.Grow([]slot[E](nil), size)
	return sl[:cap(sl)]
}

// home returns the slot where a name of hash h is first looked for: the
// hash scaled to the table's length, which need not be a power of two.
func (s *javaSet[E]) home(h uint32) int { return int(uint64(h) * uint64(len(s.slots)) >> 32) }

// after returns the slot probed after slot i.
func (s *javaSet[E]) after(i int) int {
	if i++; i == len(s.slots) {
		return 0
	}
	return i
}

// distance returns how many probes lead from slot i to slot j.
func (s *javaSet[E]) distance(i, j int) int {
	if j < i {
		return j + len(s.slots) - i
	}
	return j - i
}
