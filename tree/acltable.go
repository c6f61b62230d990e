package tree

import "github.com/zkraft/zkraft/wire"

// aclTable interns the ACL lists of a tree's nodes, as ZooKeeper's
// ReferenceCountedACLCache does: a node holds a small index, and a list is
// kept once however many nodes share it (most nodes share a handful). A
// list is dropped when no node refers to it any more, and its index is
// used again. Lists are never modified: reads and triggers share them.
type aclTable struct {
	lists [][]wire.ACL // by index; nil where free
	refs  []int        // nodes referring to each list
	byKey map[string]uint32
	free  []uint32
}

// openACL is the index of wire.OpenACLUnsafe, which every table holds for
// good.
const openACL = 0

func newACLTable() aclTable {
	return aclTable{lists: [][]wire.ACL{wire.OpenACLUnsafe}, refs: []int{1}, byKey: map[string]uint32{}}
}

// isOpen reports whether acl is world:anyone with every permission.
func isOpen(acl []wire.ACL) bool { return len(acl) == 1 && acl[0] == wire.OpenACLUnsafe[0] }

// ref returns the index of acl, interning it, and counts one more node
// referring to it.
func (a *aclTable) ref(acl []wire.ACL) uint32 {
	if isOpen(acl) {
		a.refs[openACL]++
		return openACL
	}
	key := string(wire.AppendACLs(nil, acl))
	i, ok := a.byKey[key]
	if !ok {
		if n := len(a.free); n > 0 {
			i, a.free = a.free[n-1], a.free[:n-1]
		} else {
			i = uint32(len(a.lists))
			a.lists, a.refs = append(a.lists, nil), append(a.refs, 0)
		}
		a.lists[i], a.byKey[key] = acl, i
	}
	a.refs[i]++
	return i
}

// unref counts one node fewer referring to list i, dropping it at none.
func (a *aclTable) unref(i uint32) {
	if a.refs[i]--; a.refs[i] > 0 || i == openACL {
		return
	}
	delete(a.byKey, string(wire.AppendACLs(nil, a.lists[i])))
	a.lists[i] = nil
	a.free = append(a.free, i)
}

// get returns list i.
func (a *aclTable) get(i uint32) []wire.ACL { return a.lists[i] }
