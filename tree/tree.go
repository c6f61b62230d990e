package tree

import (
	"strings"

	"github.com/zkraft/zkraft/wire"
)

// Tree is the znode tree. The zero value is not usable; call New.
type Tree struct {
	// root is the root node; every other node is found from it, through
	// its ancestors' child sets (lookup).
	root  nodeID
	count int // nodes, the root included
	// nodes, kidsTab and arena hold the nodes, their child sets and their
	// data (store.go).
	nodes   nodeTable
	kidsTab table[*kids]
	arena   dataArena
	// held are the nodes a multi under way removed: released when it
	// succeeds, given back by its undo when it fails.
	held []nodeID
	// ephemerals indexes each session's ephemeral nodes, in ZooKeeper's
	// order; a session's set lives, even empty, until the session closes.
	ephemerals map[int64]*javaSet[member]
	acls       aclTable // the nodes' ACL lists
	// reapable holds every container and TTL node, the candidates of Reapable.
	reapable map[string]struct{}
	// dataSize is the sum of path and data lengths of all nodes, as
	// ZooKeeper's approximate data size.
	dataSize int64
	// maxCzxid is the largest czxid of a node made so far.
	maxCzxid int64
	// open are the open snapshots, which keep what the tree changes
	// (preserve) until they close.
	open []*Snapshot
	// undo, when non-nil, collects the inverse of every mutation so that a
	// failed multi can be rolled back.
	undo []func()
}

// New returns a tree holding what a fresh ZooKeeper has: the root,
// /zookeeper, /zookeeper/quota and /zookeeper/config (world-readable only,
// aversion -1).
func New() *Tree {
	t := &Tree{
		ephemerals: make(map[int64]*javaSet[member]),
		reapable:   make(map[string]struct{}),
		acls:       newACLTable(),
	}
	t.addSystemNode("/", wire.OpenACLUnsafe, 0)
	t.addSystemNode("/zookeeper", wire.OpenACLUnsafe, 0)
	t.addSystemNode("/zookeeper/quota", wire.OpenACLUnsafe, 0)
	t.addSystemNode(ConfigPath, wire.ReadACLUnsafe, -1)
	return t
}

// ConfigPath is where ZooKeeper keeps the ensemble's configuration.
const ConfigPath = "/zookeeper/config"

// SetConfig makes /zookeeper/config hold data, as a ZooKeeper member sets it
// when it starts or loads a snapshot: not a write of the replicated log, so
// its mzxid stays 0 and its version -1 (ZooKeeper stores the -1 it passes as
// the expected version), and its mtime (ms) is the member's own.
func (t *Tree) SetConfig(data []byte, mtime int64) {
	id, n := t.findID(ConfigPath)
	t.preserve(id, n)
	t.dataSize += int64(len(data)) - int64(n.dataLen)
	t.setNodeData(id, n, data)
	n.mzxid, n.mtime, n.version = 0, mtime, -1
}

// Reconfigure makes /zookeeper/config hold data as a committed reconfig
// does: its mzxid and mtime are the reconfig's, its version stays -1 (as
// ZooKeeper's does), and watchers of its data hear NodeDataChanged. The
// caller checked the ACL (ZooKeeper's leader does, before it proposes). A
// reconfig is never part of a multi, so there is nothing to undo.
func (t *Tree) Reconfigure(c *Context, data []byte) wire.Stat {
	id, n := t.findID(ConfigPath)
	t.preserve(id, n)
	t.dataSize += int64(len(data)) - int64(n.dataLen)
	t.setNodeData(id, n, data)
	n.version = -1
	n.mzxid, n.mtime = c.Zxid, c.Time
	c.fire(ConfigPath, wire.EventNodeDataChanged, t.acls.get(n.acl))
	return t.stat(n)
}

// Allowed reports whether a node exists and its ACL grants a caller with
// identities ids one of the permissions in perm.
func (t *Tree) Allowed(path string, perm int32, ids []wire.Id) bool {
	n := t.lookup(path)
	return n != nil && CheckACL(t.acls.get(n.acl), perm, ids)
}

// ConfigZxid returns the mzxid of /zookeeper/config: 0 unless a reconfig
// changed it.
func (t *Tree) ConfigZxid() int64 { return t.lookup(ConfigPath).mzxid }

func (t *Tree) addSystemNode(p string, acl []wire.ACL, aversion int32) {
	id, n := t.nodes.alloc()
	n.acl, n.aversion = t.acls.ref(acl), aversion
	t.setNodeData(id, n, []byte{})
	t.count++
	t.dataSize += int64(len(p))
	if p == "/" {
		t.root = id
		return
	}
	t.link(t.lookup(parentOf(p)), baseName(p), id)
}

// link adds the node id to parent's children as name, without the
// bookkeeping of a create (the system nodes, and tests).
func (t *Tree) link(parent *node, name string, id nodeID) {
	t.parentKids(parent).set.add(name, id)
}

// Len returns the number of znodes, the root included. (ZooKeeper's "Node
// count" is one more, because it also stores the root under "".)
func (t *Tree) Len() int { return t.count }

// ApproximateDataSize returns the sum of the lengths of all paths and data.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// EphemeralCount returns the number of ephemeral nodes.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, set := range t.ephemerals {
		n += set.len()
	}
	return n
}

// lookup finds a node for a read. As in ZooKeeper's DataTree, which keeps
// the root under both "" and "/", reads of "" see the root.
func (t *Tree) lookup(path string) *node {
	if path == "" {
		return t.nodes.at(t.root)
	}
	return t.find(path)
}

// find returns the node at path, or nil: the path's names are looked up
// one after the other, from the root. A path that is not exactly a node's
// (relative, empty, with an empty name or a trailing slash) finds nothing.
func (t *Tree) find(path string) *node {
	_, n := t.findID(path)
	return n
}

// findID returns the node at path and its id, or 0 and nil (see find).
func (t *Tree) findID(path string) (nodeID, *node) {
	if path == "" || path[0] != '/' || t.root == 0 {
		return 0, nil
	}
	id, n := t.root, t.nodes.at(t.root)
	if len(path) == 1 {
		return id, n
	}
	for rest := path[1:]; n != nil; {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return t.child(n, rest)
		}
		id, n = t.child(n, rest[:i])
		rest = rest[i+1:]
	}
	return 0, nil
}

// Stat returns the Stat of the node at path, if it exists.
func (t *Tree) Stat(path string) (wire.Stat, bool) {
	n := t.lookup(path)
	if n == nil {
		return wire.Stat{}, false
	}
	return t.stat(n), true
}

// Get returns a node's data and Stat for a caller with identities ids:
// NONODE if it does not exist, NOAUTH without READ. Data is shared, not
// copied: callers must not modify it.
func (t *Tree) Get(path string, ids []wire.Id) ([]byte, wire.Stat, wire.Code) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermRead, ids) {
		return nil, wire.Stat{}, wire.CodeNoAuth
	}
	return t.dataOf(n), t.stat(n), wire.CodeOK
}

// Children returns the names of a node's children, in the order ZooKeeper
// lists them (its HashSet's), and its Stat; NONODE or NOAUTH as Get.
func (t *Tree) Children(path string, ids []wire.Id) ([]string, wire.Stat, wire.Code) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermRead, ids) {
		return nil, wire.Stat{}, wire.CodeNoAuth
	}
	k := t.kidsOf(n)
	if k == nil {
		return []string{}, t.stat(n), wire.CodeOK
	}
	return k.set.ordered(), t.stat(n), wire.CodeOK
}

// Exists returns a node's Stat, as ZooKeeper 3.8.0's exists: BADARGUMENTS for
// a path with a NUL, NONODE when missing, and no ACL check.
func (t *Tree) Exists(path string) (wire.Stat, wire.Code) {
	if strings.IndexByte(path, 0) >= 0 {
		return wire.Stat{}, wire.CodeBadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return wire.Stat{}, wire.CodeNoNode
	}
	return t.stat(n), wire.CodeOK
}

// ACL returns a node's ACL and Stat. The caller needs READ or ADMIN; with
// READ but not ADMIN, digest ids are masked to "user:x" as ZooKeeper does.
func (t *Tree) ACL(path string, ids []wire.Id) ([]wire.ACL, wire.Stat, wire.Code) {
	n := t.lookup(path)
	if n == nil {
		return nil, wire.Stat{}, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermRead|wire.PermAdmin, ids) {
		return nil, wire.Stat{}, wire.CodeNoAuth
	}
	acl := t.acls.get(n.acl)
	if CheckACL(acl, wire.PermAdmin, ids) {
		return acl, t.stat(n), wire.CodeOK
	}
	masked := make([]wire.ACL, len(acl))
	for i, a := range acl {
		masked[i] = a
		if a.ID.Scheme == SchemeDigest {
			user, _, _ := strings.Cut(a.ID.ID, ":")
			masked[i].ID.ID = user + ":x"
		}
	}
	return masked, t.stat(n), wire.CodeOK
}

// AllChildrenNumber returns the number of all descendants of path; NONODE or
// NOAUTH as Get.
func (t *Tree) AllChildrenNumber(path string, ids []wire.Id) (int32, wire.Code) {
	n := t.lookup(path)
	if n == nil {
		return 0, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermRead, ids) {
		return 0, wire.CodeNoAuth
	}
	switch path {
	case "/":
		return int32(t.count - 1), wire.CodeOK
	case "": // ZooKeeper counts every key under "" + "/": all nodes
		return int32(t.count), wire.CodeOK
	}
	return int32(t.countDescendants(n)), wire.CodeOK
}

func (t *Tree) countDescendants(n *node) int {
	k := t.kidsOf(n)
	if k == nil {
		return 0
	}
	total := 0
	for _, child := range k.set.all {
		total += 1 + t.countDescendants(t.nodes.at(child))
	}
	return total
}

// Ephemerals returns the paths of session's ephemeral nodes that start with
// prefix; an empty (or blank) prefix or "/" means all of them. Blank is
// judged as Java's String.trim does (every char up to U+0020, and nothing
// else), as ZooKeeper's getEphemerals.
func (t *Tree) Ephemerals(session int64, prefix string) []string {
	set := t.ephemerals[session]
	if set == nil {
		return []string{}
	}
	trimmed := strings.TrimFunc(prefix, func(r rune) bool { return r <= ' ' })
	out := make([]string, 0, set.len())
	for _, p := range set.orderedCopy() { // ZooKeeper lists a copy of the set
		if trimmed == "" || trimmed == "/" || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// HasEphemerals reports whether session owns any ephemeral node.
func (t *Tree) HasEphemerals(session int64) bool {
	set := t.ephemerals[session]
	return set != nil && set.len() > 0
}

// KindOf returns the kind of the node at path (persistent, ephemeral,
// container or TTL) and, for a TTL node, its TTL in milliseconds.
func (t *Tree) KindOf(path string) (kind Kind, ttl int64, ok bool) {
	n := t.lookup(path)
	if n == nil {
		return 0, 0, false
	}
	return n.kind, n.ttl(), true
}
