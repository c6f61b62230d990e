package tree

import (
	"strconv"

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

// node is one znode. It holds no pointer: nodes live in their tree's node
// table (store.go), found by a nodeID; the data in its tree's data arena
// (dataRef); the child set, for a node that has had a child, in its
// tree's table of child sets (kids is its index there). So the garbage
// collector finds a million znodes in a few hundred objects that it need
// not scan. A node does not hold its name or path: its parent's child set
// maps the name to it.
type node struct {
	czxid int64
	mzxid int64
	ctime int64
	mtime int64
	// ownerTTL is the owning session of an ephemeral, the TTL (ms) of a
	// TTL node, and 0 for other kinds (see owner and ttl).
	ownerTTL int64
	data     dataRef // where the data is (see Tree.dataOf)
	dataLen  uint32
	kids     uint32 // the index of its child set in its tree's kids table; 0 if it never had a child
	acl      uint32 // the index of the node's ACL list in its tree's aclTable
	version  int32
	aversion int32
	kind     Kind
}

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
	set   javaSet[nodeID] // child names, iterated in ZooKeeper's (Java's HashSet) order
	pzxid int64
	// creates is ZooKeeper's stored cversion: it counts child creations
	// only. Sequential suffixes come from it; clients see 2*creates -
	// numChildren, which counts creations and deletions.
	creates int32
}

// len returns how many children k lists; 0 for nil.
func (k *kids) len() int {
	if k == nil {
		return 0
	}
	return k.set.len()
}

// kidsOf returns n's child set, or nil if it never had a child.
func (t *Tree) kidsOf(n *node) *kids {
	if n.kids == 0 {
		return nil
	}
	return t.kidsTab.items[n.kids]
}

// child returns the child of n called name, or 0 and nil.
func (t *Tree) child(n *node, name string) (nodeID, *node) {
	k := t.kidsOf(n)
	if k == nil {
		return 0, nil
	}
	id := k.set.get(name)
	if id == 0 {
		return 0, nil
	}
	return id, t.nodes.at(id)
}

// numChildren returns how many children n has.
func (t *Tree) numChildren(n *node) int { return t.kidsOf(n).len() }

func (t *Tree) childCreates(n *node) int32 {
	if k := t.kidsOf(n); k != nil {
		return k.creates
	}
	return 0
}

// parentKids returns n's kids, making them on its first child.
func (t *Tree) parentKids(n *node) *kids {
	if n.kids == 0 {
		n.kids = t.kidsTab.add(&kids{set: javaSet[nodeID]{init: childrenInitBits}, pzxid: n.czxid})
	}
	return t.kidsTab.items[n.kids]
}

// stat returns n's Stat as clients see it.
func (t *Tree) stat(n *node) wire.Stat {
	k := t.kidsOf(n)
	nc, creates, pzxid := int32(k.len()), int32(0), n.czxid
	if k != nil {
		creates, pzxid = k.creates, k.pzxid
	}
	return wire.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       2*creates - nc,
		Aversion:       n.aversion,
		EphemeralOwner: n.owner(),
		DataLength:     int32(n.dataLen),
		NumChildren:    nc,
		Pzxid:          pzxid,
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
