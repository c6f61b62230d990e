package tree

import (
	"errors"
	"fmt"
)

// Check verifies the tree's invariants and returns every violation found:
// parent and child links agree, ephemerals have no children and are indexed
// under their owner, the container/TTL index is exact, each parent's pzxid is
// at least its children's czxid, and the data size is the sum it should be.
// Tests end with it.
func (t *Tree) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.nodes["/"] == nil {
		bad("no root")
	}
	var size int64
	reapable, ephemerals := 0, 0
	for p, n := range t.nodes {
		size += int64(len(p) + len(n.data))
		if p != "/" {
			parent := t.nodes[parentOf(p)]
			if parent == nil {
				bad("%s: no parent", p)
			} else if !parent.children.has(baseName(p)) {
				bad("%s: parent does not list it", p)
			}
		}
		for name := range n.children.seq {
			child := t.nodes[joinPath(p, name)]
			if child == nil {
				bad("%s: lists missing child %q", p, name)
			} else if child.czxid > n.pzxid {
				bad("%s: pzxid %#x below child %s czxid %#x", p, n.pzxid, name, child.czxid)
			}
		}
		switch n.kind {
		case KindEphemeral:
			ephemerals++
			if set := t.ephemerals[n.owner]; set == nil || !set.has(p) {
				bad("%s: ephemeral not indexed under session %#x", p, n.owner)
			}
			if n.children.len() > 0 {
				bad("%s: ephemeral has children", p)
			}
		case KindContainer, KindTTL:
			reapable++
			if _, ok := t.reapable[p]; !ok {
				bad("%s: container or TTL node not indexed", p)
			}
		}
	}
	if size != t.dataSize {
		bad("data size %d, counted %d", t.dataSize, size)
	}
	if reapable != len(t.reapable) {
		bad("reapable index has %d entries, tree %d nodes", len(t.reapable), reapable)
	}
	if n := t.EphemeralCount(); n != ephemerals {
		bad("ephemeral index has %d entries, tree %d nodes", n, ephemerals)
	}
	return errors.Join(errs...)
}

// Owners returns the sessions that own ephemeral nodes.
func (t *Tree) Owners() []int64 {
	out := make([]int64, 0, len(t.ephemerals))
	for s, set := range t.ephemerals {
		if set.len() > 0 {
			out = append(out, s)
		}
	}
	return out
}

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
