package tree

import (
	"strconv"
	"unsafe"

	"github.com/zkraft/zkraft/wire"
)

// Kind is a znode's lifetime class.
type Kind uint8

// Node kinds. Containers and TTL nodes are persistent nodes that the leader
// deletes when they are empty (containers, once used) or stale (TTL).
const (
	KindPersistent Kind = iota
	KindEphemeral
	KindContainer
	KindTTL
)

// MaxTTL is the largest TTL, in milliseconds, a TTL node may have.
const MaxTTL = 0x000000FFFFFFFFFF

// node is one znode. Its data is never modified in place (setData
// replaces it), so snapshots may share it. A node does not hold its name
// or path: its parent's child set maps the name to it.
//
// Its fields fill 77 bytes, which the allocator rounds to 80: a field more
// would cost 16 bytes a node. So the data is held as a pointer and a
// length (see data), not as a slice with its capacity.
type node struct {
	dataPtr *byte
	kids    *kids // nil while the node has never had a child
	czxid   int64
	mzxid   int64
	ctime   int64
	mtime   int64
	// ownerTTL is the owning session of an ephemeral, the TTL (ms) of a
	// TTL node, and 0 for other kinds (see owner and ttl).
	ownerTTL int64
	dataLen  uint32
	acl      uint32 // the index of the node's ACL list in its tree's aclTable
	seq      uint32 // the node's place in its parent's child set
	version  int32
	aversion int32
	kind     Kind
}

// data returns the node's data, nil or not as it was set. Callers must not
// modify it.
func (n *node) data() []byte { return unsafe.Slice(n.dataPtr, n.dataLen) }

// setData makes b the node's data.
func (n *node) setData(b []byte) { n.dataPtr, n.dataLen = unsafe.SliceData(b), uint32(len(b)) }

// owner returns the owning session of an ephemeral node, and 0 for others.
func (n *node) owner() int64 {
	if n.kind != KindEphemeral {
		return 0
	}
	return n.ownerTTL
}

// ttl returns the TTL (ms) of a TTL node, and 0 for others.
func (n *node) ttl() int64 {
	if n.kind != KindTTL {
		return 0
	}
	return n.ownerTTL
}

// kids is what only a node that has had children needs: the child set,
// the pzxid (a node that never had a child has its czxid as pzxid) and
// ZooKeeper's stored cversion.
type kids struct {
	set   javaSet[*node] // child names, iterated in ZooKeeper's (Java's HashSet) order
	pzxid int64
	// creates is ZooKeeper's stored cversion: it counts child creations
	// only. Sequential suffixes come from it; clients see 2*creates -
	// numChildren, which counts creations and deletions.
	creates int32
}

func (n *node) place() uint32 { return n.seq }

func (n *node) placed(seq uint32) *node {
	n.seq = seq
	return n
}

// child returns the child called name, or nil.
func (n *node) child(name string) *node {
	if n.kids == nil {
		return nil
	}
	return n.kids.set.get(name)
}

// numChildren returns how many children the node has.
func (n *node) numChildren() int {
	if n.kids == nil {
		return 0
	}
	return n.kids.set.len()
}

func (n *node) pzxid() int64 {
	if n.kids == nil {
		return n.czxid
	}
	return n.kids.pzxid
}

func (n *node) childCreates() int32 {
	if n.kids == nil {
		return 0
	}
	return n.kids.creates
}

// parentKids returns the node's kids, making them on its first child.
func (n *node) parentKids() *kids {
	if n.kids == nil {
		n.kids = &kids{set: javaSet[*node]{init: childrenInitBits}, pzxid: n.czxid}
	}
	return n.kids
}

// stat returns the node's Stat as clients see it.
func (n *node) stat() wire.Stat {
	nc := int32(n.numChildren())
	return wire.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       2*n.childCreates() - nc,
		Aversion:       n.aversion,
		EphemeralOwner: n.owner(),
		DataLength:     int32(n.dataLen),
		NumChildren:    nc,
		Pzxid:          n.pzxid(),
	}
}

// nextVersion increments a data or ACL version, wrapping past MaxInt32 and
// skipping -1, which means "any version" in requests (ZOOKEEPER-4743).
func nextVersion(v int32) int32 {
	v++
	if v == -1 {
		v = 0
	}
	return v
}

// versionMatches reports whether a request's expected version admits current.
func versionMatches(expected, current int32) bool {
	return expected == -1 || expected == current
}

// seqSuffix formats a sequence number as Java's String.format("%010d"):
// zero-padded to ten characters, the sign counting as one.
func seqSuffix(v int32) string {
	var buf [12]byte
	b := strconv.AppendInt(buf[:0], int64(v), 10)
	neg := v < 0
	digits := len(b)
	if neg {
		digits--
	}
	width := 10
	if neg {
		width = 9
	}
	out := make([]byte, 0, 11)
	if neg {
		out = append(out, '-')
	}
	for i := digits; i < width; i++ {
		out = append(out, '0')
	}
	if neg {
		b = b[1:]
	}
	return string(append(out, b...))
}
