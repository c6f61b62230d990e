package server

import (
	"slices"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// javaSetOrder returns ids in the order ZooKeeper 3.8.0 iterates a
// connection's auth info, a set backed by a java.util.concurrent
// ConcurrentHashMap: by table bin (the spread hash of jute's Id.hashCode,
// masked to the table size), then by insertion within a bin. Clients see
// this order in whoAmI and in the ACL an "auth" entry expands to. (For more
// than a dozen ids the map resizes, and its bin lists may then differ from
// insertion order; connections hold one ip id and a few digests.)
func javaSetOrder(ids []wire.Id) []wire.Id {
	size := 16
	for len(ids) >= size*3/4 {
		size *= 2
	}
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b wire.Id) int {
		return javaBin(a, size) - javaBin(b, size)
	})
	return out
}

func javaBin(id wire.Id, size int) int {
	h32 := int32(17)
	h32 = 37*h32 + tree.JavaHash(id.Scheme)
	h32 = 37*h32 + tree.JavaHash(id.ID)
	spread := (h32 ^ int32(uint32(h32)>>16)) & 0x7fffffff
	return int(spread) & (size - 1)
}
