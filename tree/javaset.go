package tree

import (
	"slices"
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
	seq  map[string]uint32 // member -> insertion sequence
	next uint32
	bits uint8 // log2 of the table size; 0 before the first add
	init uint8 // log2 of the initial capacity
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
		s.seq = make(map[string]uint32)
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
		s.seq = make(map[string]uint32)
	}
	if s.bits == 0 {
		s.bits = s.init
	}
	s.seq[name] = seq
	if s.bits < 6 && s.binCount(name) > 8 {
		s.bits++
	}
	for len(s.seq) > 3<<s.bits/4 {
		s.bits++
	}
}

func (s *javaSet) binCount(name string) int {
	bin := javaBin(JavaHash(name), s.bits)
	n := 0
	for m := range s.seq {
		if javaBin(JavaHash(m), s.bits) == bin {
			n++
		}
	}
	return n
}

func (s *javaSet) remove(name string) { delete(s.seq, name) }

type binned struct {
	name     string
	bin, src int
	seq      uint32
}

// ordered returns the members in Java's iteration order.
func (s *javaSet) ordered() []string {
	items := s.binned(s.bits)
	return names(items)
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
		items[i].bin = javaBin(JavaHash(items[i].name), target)
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
		b := javaBin(JavaHash(it.name), bits)
		counts[b]++
		most = max(most, counts[b])
	}
	return most
}

func (s *javaSet) binned(bits uint8) []binned {
	items := make([]binned, 0, len(s.seq))
	for name, seq := range s.seq {
		items = append(items, binned{name: name, bin: javaBin(JavaHash(name), bits), seq: seq})
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
