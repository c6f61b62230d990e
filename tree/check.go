package tree

import (
	"errors"
	"fmt"
	"slices"
)

// Check verifies the tree's invariants and returns every violation found:
// the node count and the child sets agree, ephemerals have no children and
// are indexed under their owner, the container/TTL index is exact, each
// parent's pzxid is at least its children's czxid, each child's recorded
// hash is its name's, and the data size is the sum it should be. Tests end
// with it.
func (t *Tree) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !t.nodes.valid(t.root) {
		return errors.New("no root")
	}
	var size int64
	count, reapable, ephemerals := 0, 0, 0
	aclRefs := make([]int, len(t.acls.refs))
	aclRefs[openACL] = 1 // held for good
	live := make([]int, len(t.arena.chunks.items))
	withKids := 0
	t.walk(func(p string, n *node) {
		count++
		if n.data.chunk != 0 {
			if int(n.data.chunk) < len(live) {
				live[n.data.chunk] += dataHeader + int(n.dataLen)
			} else {
				bad("%s: data in chunk %d of %d", p, n.data.chunk, len(live))
			}
		}
		if n.kids != 0 {
			withKids++
		}
		if int(n.acl) >= len(aclRefs) || t.acls.lists[n.acl] == nil {
			bad("%s: ACL index %d holds no list", p, n.acl)
		} else {
			aclRefs[n.acl]++
		}
		size += int64(len(p) + int(n.dataLen))
		if k := t.kidsOf(n); k != nil {
			t.checkKids(p, k, bad)
		}
		switch n.kind {
		case KindEphemeral:
			ephemerals++
			if set := t.ephemerals[n.owner()]; set == nil || !set.has(p) {
				bad("%s: ephemeral not indexed under session %#x", p, n.owner())
			}
			if t.numChildren(n) > 0 {
				bad("%s: ephemeral has children", p)
			}
		case KindContainer, KindTTL:
			reapable++
			if _, ok := t.reapable[p]; !ok {
				bad("%s: container or TTL node not indexed", p)
			}
		}
	})
	if count != t.count {
		bad("node count %d, counted %d", t.count, count)
	}
	if !slices.Equal(aclRefs, t.acls.refs) {
		bad("ACL lists referred to %v times, counted %v", t.acls.refs, aclRefs)
	}
	for c, ch := range t.arena.chunks.items {
		if ch.live != live[c] {
			bad("data chunk %d counts %d live bytes, nodes hold %d", c, ch.live, live[c])
		}
	}
	if used := int(t.nodes.next) - 1 - len(t.nodes.free); t.undo == nil && t.nodes.next > 0 && used != count {
		bad("node table holds %d nodes, the tree %d", used, count)
	}
	if sets := t.kidsTab.used(); sets != withKids {
		bad("kids table holds %d sets, nodes refer to %d", sets, withKids)
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

// checkKids checks the child set of the node at p: each child is there,
// found by its name, holds its name's Java hash, and was created no later
// than the parent's pzxid; the set counts its children.
func (t *Tree) checkKids(p string, k *kids, bad func(string, ...any)) {
	count := 0
	for name, child := range k.set.all {
		count++
		switch {
		case !t.nodes.valid(child):
			bad("%s: lists missing child %q", p, name)
		case k.set.get(name) != child:
			bad("%s: child %q not found by its name", p, name)
		case t.nodes.at(child).czxid > k.pzxid:
			bad("%s: pzxid %#x below child %s czxid %#x", p, k.pzxid, name, t.nodes.at(child).czxid)
		}
	}
	if want := checkCounts(&k.set); want != k.set.counts {
		bad("%s: bins hold %v, counted %v", p, k.set.counts, want)
	}
	if count != k.set.len() {
		bad("%s: child set counts %d, holds %d", p, k.set.len(), count)
	}
}

// checkCounts returns the counts of names in Java's bins that set should
// hold.
func checkCounts[E comparable](set *javaSet[E]) [32]uint8 {
	var want [32]uint8
	if set.bits < 6 {
		for name := range set.all {
			want[javaBin(JavaHash(name), set.bits)]++
		}
	}
	return want
}

// walk calls fn for every node, parents before their children, with its
// path. A child listed as no node is skipped.
func (t *Tree) walk(fn func(path string, n *node)) {
	var visit func(p string, n *node)
	visit = func(p string, n *node) {
		fn(p, n)
		k := t.kidsOf(n)
		if k == nil {
			return
		}
		for name, child := range k.set.all {
			if t.nodes.valid(child) {
				visit(joinPath(p, name), t.nodes.at(child))
			}
		}
	}
	visit("/", t.nodes.at(t.root))
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
