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
// Each name maps to an entry that carries its place: its insertion
// sequence and Java hash. A node's children are its child nodes, which
// hold their own places; a session's ephemerals are members.
type javaSet[E setEntry[E]] struct {
	m    map[string]E
	next uint32
	bits uint8 // log2 of the table size; 0 before the first add
	init uint8 // log2 of the initial capacity
	// order caches ordered() until the table is resized; adds and removes
	// update it (see maxIncremental). Readers fill it under the tree's
	// read lock, so it is atomic; concurrent fills store equal lists. A
	// javaSet is never copied while in use.
	order atomic.Pointer[orderCache] // nil when dropped
}

// setEntry is what a javaSet maps a name to: something that knows its
// place in the set, and that placed returns carrying a new place (a copy
// for a value, the same entry for a pointer).
type setEntry[E any] interface {
	comparable
	place() (seq uint32, hash int32)
	placed(seq uint32, hash int32) E
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

// member is a name's place in a set of names alone (a session's
// ephemerals): its insertion sequence, and its Java hash, computed once.
type member struct {
	seq  uint32
	hash int32
}

func (m member) place() (uint32, int32)             { return m.seq, m.hash }
func (member) placed(seq uint32, hash int32) member { return member{seq: seq, hash: hash} }

const (
	childrenInitBits   = 3 // DataNode's children: new HashSet<>(8)
	ephemeralsInitBits = 4 // DataTree's ephemerals: new HashSet<>()
)

func (s *javaSet[E]) len() int { return len(s.m) }

func (s *javaSet[E]) has(name string) bool {
	_, ok := s.m[name]
	return ok
}

// get returns the entry of name, or the zero entry.
func (s *javaSet[E]) get(name string) E { return s.m[name] }

// add inserts name at the end of the insertion order.
func (s *javaSet[E]) add(name string, e E) {
	if _, ok := s.m[name]; ok {
		return
	}
	s.put(name, e, s.next)
	s.next++
}

// put inserts name with a given sequence (undo and restore use it).
func (s *javaSet[E]) put(name string, e E, seq uint32) {
	if s.m == nil {
		s.m = make(map[string]E)
	}
	if s.bits == 0 {
		s.bits = s.init
	}
	bits := s.bits
	hash := JavaHash(name)
	s.m[name] = e.placed(seq, hash)
	if s.bits < 6 && s.binCount(hash) > 8 {
		s.bits++
	}
	for len(s.m) > 3<<s.bits/4 {
		s.bits++
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
	seq, hash := s.m[name].place()
	return orderKey{bin: javaBin(hash, s.bits), seq: seq}.cmp(k)
}

// binCount counts the members in the bin of hash.
func (s *javaSet[E]) binCount(hash int32) int {
	bin := javaBin(hash, s.bits)
	n := 0
	for _, e := range s.m {
		if _, h := e.place(); javaBin(h, s.bits) == bin {
			n++
		}
	}
	return n
}

// restoreMember inserts a name with its recorded sequence into a set whose
// table size was restored with it: no resizing, and a map sized for the
// table's capacity (three quarters of it, as Java's load factor) at the
// first name.
func (s *javaSet[E]) restoreMember(name string, e E, seq uint32) {
	if s.m == nil {
		s.m = make(map[string]E, min(3<<s.bits/4, int(s.next)))
	}
	s.m[name] = e.placed(seq, JavaHash(name))
}

// seqOf returns a member's insertion sequence.
func (s *javaSet[E]) seqOf(name string) uint32 {
	seq, _ := s.m[name].place()
	return seq
}

// remove takes name out of the set. An emptied set lets its map go (Go's
// maps never shrink); its table size and sequence stay, as Java's do.
func (s *javaSet[E]) remove(name string) {
	e, ok := s.m[name]
	if !ok {
		return
	}
	c := s.order.Load()
	i, found := -1, false
	if c != nil && len(c.names) <= maxIncremental {
		seq, hash := e.place()
		i, found = slices.BinarySearchFunc(c.names, orderKey{bin: javaBin(hash, s.bits), seq: seq}, s.cmpKey)
	}
	delete(s.m, name)
	if len(s.m) == 0 {
		s.m = nil
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
	if len(s.m) == 0 {
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
	items := make([]binned, 0, len(s.m))
	for name, e := range s.m {
		seq, hash := e.place()
		items = append(items, binned{name: name, bin: javaBin(hash, bits), seq: seq, hash: hash})
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
