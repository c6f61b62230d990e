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
type javaSet struct {
	seq  map[string]member
	next uint32
	bits uint8 // log2 of the table size; 0 before the first add
	init uint8 // log2 of the initial capacity
	// order caches ordered() until the table is resized; adds and removes
	// update it (see maxIncremental). Readers fill it under the tree's
	// read lock, so it is atomic; concurrent fills store equal lists. A
	// javaSet is never copied while in use.
	order atomic.Value // *orderCache; a nil one when dropped
}

// orderCache is a javaSet's iteration order: the names, and the bin and
// sequence each is ordered by. Both slices are immutable once stored
// (readers may still be encoding a list after the tree's lock is released):
// an update makes new ones.
type orderCache struct {
	names []string
	keys  []orderKey
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

// member is a name's place in the set: its insertion sequence, and its
// Java hash, computed once.
type member struct {
	seq  uint32
	hash int32
}

const (
	childrenInitBits   = 3 // DataNode's children: new HashSet<>(8)
	ephemeralsInitBits = 4 // DataTree's ephemerals: new HashSet<>()
)

func (s *javaSet) len() int { return len(s.seq) }

func (s *javaSet) has(name string) bool {
	_, ok := s.seq[name]
	return ok
}

// add inserts name at the end of the insertion order.
func (s *javaSet) add(name string) {
	if s.seq == nil {
		s.seq = make(map[string]member)
	}
	if _, ok := s.seq[name]; ok {
		return
	}
	s.put(name, s.next)
	s.next++
}

// put inserts name with a given sequence (undo and restore use it).
func (s *javaSet) put(name string, seq uint32) {
	if s.seq == nil {
		s.seq = make(map[string]member)
	}
	if s.bits == 0 {
		s.bits = s.init
	}
	bits := s.bits
	hash := JavaHash(name)
	s.seq[name] = member{seq: seq, hash: hash}
	if s.bits < 6 && s.binCount(hash) > 8 {
		s.bits++
	}
	for len(s.seq) > 3<<s.bits/4 {
		s.bits++
	}
	c := s.loadOrder()
	if c == nil || s.bits != bits || len(c.names) >= maxIncremental {
		s.dropOrder(c) // resized, every bin changes; or not worth a copy
		return
	}
	key := orderKey{bin: javaBin(hash, bits), seq: seq}
	i, _ := slices.BinarySearchFunc(c.keys, key, orderKey.cmp)
	s.order.Store(&orderCache{names: insertAt(c.names, i, name), keys: insertAt(c.keys, i, key)})
}

// binCount counts the members in the bin of hash.
func (s *javaSet) binCount(hash int32) int {
	bin := javaBin(hash, s.bits)
	n := 0
	for _, m := range s.seq {
		if javaBin(m.hash, s.bits) == bin {
			n++
		}
	}
	return n
}

// restoreMember inserts a name with its recorded sequence into a set whose
// table size was restored with it: no resizing, and a map sized for the
// table's capacity (three quarters of it, as Java's load factor) at the
// first name. It reports false if the name was there already.
func (s *javaSet) restoreMember(name string, seq uint32) bool {
	if s.seq == nil {
		s.seq = make(map[string]member, min(3<<s.bits/4, int(s.next)))
	}
	before := len(s.seq)
	s.seq[name] = member{seq: seq, hash: JavaHash(name)}
	return len(s.seq) > before
}

// seqOf returns a member's insertion sequence.
func (s *javaSet) seqOf(name string) uint32 { return s.seq[name].seq }

func (s *javaSet) remove(name string) {
	m, ok := s.seq[name]
	if !ok {
		return
	}
	delete(s.seq, name)
	c := s.loadOrder()
	if c == nil || len(c.names) > maxIncremental {
		s.dropOrder(c)
		return
	}
	i, found := slices.BinarySearchFunc(c.keys, orderKey{bin: javaBin(m.hash, s.bits), seq: m.seq}, orderKey.cmp)
	if !found || c.names[i] != name {
		s.dropOrder(c) // cannot happen: the cache holds every member
		return
	}
	s.order.Store(&orderCache{
		names: slices.Concat(c.names[:i], c.names[i+1:]),
		keys:  slices.Concat(c.keys[:i], c.keys[i+1:]),
	})
}

type binned struct {
	name     string
	bin, src int
	seq      uint32
	hash     int32
}

// dropOrder forgets the cached order c, if there is one.
func (s *javaSet) dropOrder(c *orderCache) {
	if c != nil {
		s.order.Store((*orderCache)(nil))
	}
}

func (s *javaSet) loadOrder() *orderCache {
	c, _ := s.order.Load().(*orderCache)
	return c
}

// ordered returns the members in Java's iteration order. The slice is
// cached until the set changes: callers must not modify it.
func (s *javaSet) ordered() []string {
	if len(s.seq) == 0 {
		return []string{}
	}
	if c := s.loadOrder(); c != nil {
		return c.names
	}
	items := s.binned(s.bits)
	c := &orderCache{names: names(items), keys: make([]orderKey, len(items))}
	for i, it := range items {
		c.keys[i] = orderKey{bin: it.bin, seq: it.seq}
	}
	s.order.Store(c)
	return c.names
}

// orderedCopy returns the members in the iteration order of a clone of the
// set, as ZooKeeper lists a session's ephemerals (DataTree.getEphemerals
// returns HashSet.clone()): the clone sizes its table for the members,
// tableSizeFor((int)(n/0.75f + 1)), and adds them in the set's order.
func (s *javaSet) orderedCopy() []string {
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

func (s *javaSet) binned(bits uint8) []binned {
	items := make([]binned, 0, len(s.seq))
	for name, m := range s.seq {
		items = append(items, binned{name: name, bin: javaBin(m.hash, bits), seq: m.seq, hash: m.hash})
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
