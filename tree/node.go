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

// node is one znode. Its data slice is never modified in place (setData
// replaces it), so snapshots may share it.
type node struct {
	data     []byte
	acl      []wire.ACL
	children javaSet // child names, iterated in ZooKeeper's (Java's HashSet) order
	czxid    int64
	mzxid    int64
	pzxid    int64
	ctime    int64
	mtime    int64
	ttl      int64 // KindTTL only, milliseconds
	owner    int64 // KindEphemeral only: the owning session
	version  int32
	// childCreates is ZooKeeper's stored cversion: it counts child creations
	// only. Sequential suffixes come from it; clients see 2*childCreates -
	// numChildren, which counts creations and deletions.
	childCreates int32
	aversion     int32
	kind         Kind
}

// withoutChildren returns a copy of the node with an empty child set (a
// snapshot's record; restore rebuilds the links).
func (n *node) withoutChildren() node {
	return node{
		data: n.data, acl: n.acl, czxid: n.czxid, mzxid: n.mzxid, pzxid: n.pzxid, ctime: n.ctime,
		mtime: n.mtime, ttl: n.ttl, owner: n.owner, version: n.version, childCreates: n.childCreates,
		aversion: n.aversion, kind: n.kind,
	}
}

// stat returns the node's Stat as clients see it.
func (n *node) stat() wire.Stat {
	nc := int32(n.children.len())
	var owner int64
	if n.kind == KindEphemeral {
		owner = n.owner
	}
	return wire.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       2*n.childCreates - nc,
		Aversion:       n.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    nc,
		Pzxid:          n.pzxid,
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
