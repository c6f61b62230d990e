package tree

import (
	"slices"
	"sync/atomic"
	"unicode/utf16"
)

// JavaHash is Java's String.hashCode, over UTF-16 code units. ZooKeeper's
// hash-based sets (a node's children, a session's ephemerals, a
// connection's auth ids) iterate in an order that follows it.
func JavaHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return javaHashUTF16(s)
		}
		h = 31*h + int32(s[i])
	}
	return h
}

func javaHashUTF16(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaBin is the bin of a java.util.HashMap with 1<<bits bins that a key
// with hash h falls in: the hash spread by its high half, masked.
func javaBin(h int32, bits uint8) int {
	spread := uint32(h) ^ uint32(h)>>16
	return int(spread & (1<<bits - 1))
}

// javaSet is a set of names that iterates in the order a java.util.HashSet
// with the same history of adds and removes would: by bin, then by
// insertion within a bin. Like Java's, its table starts at a given size,
// doubles past three quarters full, or when a ninth name lands in one bin
// of a table under 64 (where Java resizes instead of making a tree bin), and
// never shrinks. (Java's tree bins, nine colliding names in a table of 64 or
// more, are not modelled.) Go's maps iterate at random; ZooKeeper's clients
// see this order, and tests written against ZooKeeper often rely on it.
//
// Each name has its place, its insertion sequence (its Java hash is
// computed from the name where needed), and maps to an entry: a node's
// children to their nodes, a session's ephemerals to nothing. Names are
// found through a table of the set's own (slots.go), not by Java's bins:
// Java's hash is easily made to collide.
type javaSet[E comparable] struct {
	// slots is an open-addressing table of the names, their places and
	// their entries, by a seeded hash of the name (nameHash, see home),
	// probed linearly. It grows by half past four fifths full, and is
	// nil when the set is empty.
	slots []slot[E]
	// names holds the names' bytes, which slots point into; bytes are
	// only ever appended (or copied to a new array), never overwritten,
	// so the strings handed out stay valid. dead counts the bytes of
	// removed names.
	names []byte
	dead  int
	n     int // names in slots
	next  uint32
	bits  uint8 // log2 of Java's table size; 0 before the first add
	init  uint8 // log2 of Java's initial capacity
	// counts holds how many names each of Java's bins has while the table
	// is under 64 bins, where a ninth name in one bin resizes it.
	counts [32]uint8
	// order caches ordered() until the table is resized; adds and removes
	// update it (see maxIncremental). Readers fill it under the tree's
	// read lock, so it is atomic; concurrent fills store equal lists. A
	// javaSet is never copied while in use.
	order atomic.Pointer[orderCache] // nil when dropped
}

// orderCache is a javaSet's iteration order. The slice is immutable once
// stored (readers may still be encoding a list after the tree's lock is
// released): an update makes a new one. The bin and sequence each name is
// ordered by come from its entry.
type orderCache struct {
	names []string
}

type orderKey struct {
	bin int
	seq uint32
}

func (k orderKey) cmp(o orderKey) int {
	if k.bin != o.bin {
		return k.bin - o.bin
	}
	return int(int64(k.seq) - int64(o.seq))
}

// maxIncremental is the largest set whose cached order an add or remove
// updates (a copy of the list, with one name in or out) rather than drops.
// Updating costs a copy per change, so a large directory that changes
// often drops its order instead, to sort it again when next listed.
const maxIncremental = 1024

// member is the entry of a set of names alone (a session's ephemerals).
type member = struct{}

const (
	childrenInitBits   = 3 // DataNode's children: new HashSet<>(8)
	ephemeralsInitBits = 4 // DataTree's ephemerals: new HashSet<>()
)

func (s *javaSet[E]) len() int { return s.n }

func (s *javaSet[E]) has(name string) bool {
	_, ok := s.lookup(name)
	return ok
}

// get returns the entry of name, or the zero entry.
func (s *javaSet[E]) get(name string) E {
	if i, ok := s.lookup(name); ok {
		return s.slots[i].e
	}
	var zero E
	return zero
}

// add inserts name at the end of the insertion order.
func (s *javaSet[E]) add(name string, e E) {
	if s.has(name) {
		return
	}
	s.put(name, e, s.next)
	s.next++
}

// put inserts name, which is not in the set, with a given sequence (undo
// uses it).
func (s *javaSet[E]) put(name string, e E, seq uint32) {
	if s.bits == 0 {
		s.bits = s.init
	}
	bits := s.bits
	hash := JavaHash(name)
	s.store(name, e, seq)
	if s.bits < 6 {
		bin := javaBin(hash, s.bits)
		if s.counts[bin]++; s.counts[bin] > 8 {
			s.bits++
		}
	}
	for s.n > 3<<s.bits/4 {
		s.bits++
	}
	if s.bits != bits {
		s.recount()
	}
	c := s.order.Load()
	if c == nil || s.bits != bits || len(c.names) >= maxIncremental {
		s.dropOrder(c) // resized, every bin changes; or not worth a copy
		return
	}
	i, _ := slices.BinarySearchFunc(c.names, orderKey{bin: javaBin(hash, bits), seq: seq}, s.cmpKey)
	s.order.Store(&orderCache{names: insertAt(c.names, i, name)})
}

// cmpKey orders a member's name against a place in the order.
func (s *javaSet[E]) cmpKey(name string, k orderKey) int {
	return orderKey{bin: javaBin(JavaHash(name), s.bits), seq: s.seqOf(name)}.cmp(k)
}

// recount counts the names in each of Java's bins anew, after the table
// size changed.
func (s *javaSet[E]) recount() {
	s.counts = [32]uint8{}
	if s.bits >= 6 {
		return
	}
	for name := range s.all {
		s.counts[javaBin(JavaHash(name), s.bits)]++
	}
}

// setState sets the sequence and Java's table size, as undo and restore
// found them.
func (s *javaSet[E]) setState(next uint32, bits uint8) {
	s.next = next
	if s.bits != bits {
		s.bits = bits
		s.recount()
	}
}

// restoreNames and restoreMembers bound the name array and the table
// restoreMember makes a set at first, whatever a (corrupt) record says;
// a larger set grows as it is filled.
const (
	restoreNames   = 1 << 20
	restoreMembers = 1 << 20
)

// restoreMember inserts a name with its recorded sequence into a set whose
// Java table size was restored with it: no resizing, and a table sized for
// that table's capacity (three quarters of it, as Java's load factor) at
// the first name. It reports false if the name was there already.
func (s *javaSet[E]) restoreMember(name string, e E, seq uint32) bool {
	if s.has(name) {
		return false
	}
	if s.slots == nil {
		expect := int(min(uint64(3)<<s.bits/4, uint64(s.next), restoreMembers)) // members the record's table had room for, at most
		size := 8
		for full(expect+1, size) {
			size = size * 3 / 2
		}
		s.slots = newSlots[E](size)
		// Names as long as the first for all of them (at most restoreNames
		// bytes), rather than the array grown a quarter at a time, each
		// time copied whole.
		s.names = make([]byte, 0, min(expect*len(name), restoreNames)+16)
	}
	s.store(name, e, seq)
	if s.bits < 6 {
		s.counts[javaBin(JavaHash(name), s.bits)]++
	}
	return true
}

// cloneInto makes c a copy of s that shares no table with it (the cached
// order, which is never changed in place, is shared).
func (s *javaSet[E]) cloneInto(c *javaSet[E]) {
	c.slots = slices.Clone(s.slots)
	c.names, c.dead = s.names, s.dead // appended to only past what c reads
	c.n, c.next, c.bits, c.init, c.counts = s.n, s.next, s.bits, s.init, s.counts
	c.order.Store(s.order.Load())
}

// seqOf returns a member's insertion sequence.
func (s *javaSet[E]) seqOf(name string) uint32 {
	if i, ok := s.lookup(name); ok {
		return s.slots[i].seq
	}
	return 0
}

// remove takes name out of the set. An emptied set lets its table go; its
// Java table size and sequence stay, as Java's do.
func (s *javaSet[E]) remove(name string) {
	slot, ok := s.lookup(name)
	if !ok {
		return
	}
	seq, hash := s.slots[slot].seq, JavaHash(name)
	c := s.order.Load()
	i, found := -1, false
	if c != nil && len(c.names) <= maxIncremental {
		i, found = slices.BinarySearchFunc(c.names, orderKey{bin: javaBin(hash, s.bits), seq: seq}, s.cmpKey)
	}
	s.unstore(slot)
	if s.bits < 6 {
		s.counts[javaBin(hash, s.bits)]--
	}
	if !found || c.names[i] != name {
		s.dropOrder(c) // too large to update, or none cached
		return
	}
	s.order.Store(&orderCache{names: slices.Concat(c.names[:i], c.names[i+1:])})
}

type binned struct {
	name     string
	bin, src int
	seq      uint32
	hash     int32
}

// dropOrder forgets the cached order c, if there is one.
func (s *javaSet[E]) dropOrder(c *orderCache) {
	if c != nil {
		s.order.Store(nil)
	}
}

// ordered returns the members in Java's iteration order. The slice is
// cached until the set changes: callers must not modify it.
func (s *javaSet[E]) ordered() []string {
	if s.n == 0 {
		return []string{}
	}
	if c := s.order.Load(); c != nil {
		return c.names
	}
	c := &orderCache{names: names(s.binned(s.bits))}
	s.order.Store(c)
	return c.names
}

// orderedCopy returns the members in the iteration order of a clone of the
// set, as ZooKeeper lists a session's ephemerals (DataTree.getEphemerals
// returns HashSet.clone()): the clone sizes its table for the members,
// tableSizeFor((int)(n/0.75f + 1)), and adds them in the set's order.
func (s *javaSet[E]) orderedCopy() []string {
	items := s.binned(s.bits)
	target := uint8(0)
	for capacity := int(float32(len(items))/0.75 + 1); 1<<target < capacity; {
		target++
	}
	for target < 6 && maxBinCount(items, target) > 8 {
		target++ // a ninth name in one bin of a small table makes Java resize
	}
	for i := range items {
		items[i].src = i
		items[i].bin = javaBin(items[i].hash, target)
	}
	slices.SortFunc(items, func(a, b binned) int {
		if a.bin != b.bin {
			return a.bin - b.bin
		}
		return a.src - b.src
	})
	return names(items)
}

func maxBinCount(items []binned, bits uint8) int {
	counts := make(map[int]int)
	most := 0
	for _, it := range items {
		b := javaBin(it.hash, bits)
		counts[b]++
		most = max(most, counts[b])
	}
	return most
}

func (s *javaSet[E]) binned(bits uint8) []binned {
	items := make([]binned, 0, s.n)
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.size == 0 {
			continue
		}
		name := s.key(sl)
		hash := JavaHash(name)
		items = append(items, binned{name: name, bin: javaBin(hash, bits), seq: sl.seq, hash: hash})
	}
	slices.SortFunc(items, func(a, b binned) int {
		return orderKey{a.bin, a.seq}.cmp(orderKey{b.bin, b.seq})
	})
	return items
}

// insertAt returns a copy of s with v inserted at i.
func insertAt[T any](s []T, i int, v T) []T {
	out := make([]T, 0, len(s)+1)
	out = append(out, s[:i]...)
	out = append(out, v)
	return append(out, s[i:]...)
}

func names(items []binned) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.name
	}
	return out
}
