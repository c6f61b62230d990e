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
	// order caches ordered() ([]string) until the set changes. Readers fill
	// it under the tree's read lock, so it is atomic; concurrent fills store
	// the same list. A javaSet is never copied while in use.
	order atomic.Value
}

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
	s.order.Store([]string(nil))
	hash := JavaHash(name)
	s.seq[name] = member{seq: seq, hash: hash}
	if s.bits < 6 && s.binCount(hash) > 8 {
		s.bits++
	}
	for len(s.seq) > 3<<s.bits/4 {
		s.bits++
	}
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

// seqOf returns a member's insertion sequence.
func (s *javaSet) seqOf(name string) uint32 { return s.seq[name].seq }

func (s *javaSet) remove(name string) {
	if _, ok := s.seq[name]; ok {
		delete(s.seq, name)
		s.order.Store([]string(nil))
	}
}

type binned struct {
	name     string
	bin, src int
	seq      uint32
	hash     int32
}

// ordered returns the members in Java's iteration order. The slice is
// cached until the set changes: callers must not modify it.
func (s *javaSet) ordered() []string {
	if len(s.seq) == 0 {
		return []string{}
	}
	if cached, _ := s.order.Load().([]string); cached != nil {
		return cached
	}
	order := names(s.binned(s.bits))
	s.order.Store(order)
	return order
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
		if a.bin != b.bin {
			return a.bin - b.bin
		}
		return int(int64(a.seq) - int64(b.seq))
	})
	return items
}

func names(items []binned) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.name
	}
	return out
}
