package tree

import (
	"slices"

	"github.com/zkraft/zkraft/wire"
)

// Context carries what a write needs besides its request, all of it from the
// replicated command so that every replica decides the same way, and collects
// the watch triggers the write fires.
type Context struct {
	Zxid    int64     // the zxid the change gets
	Time    int64     // the proposer's wall clock, ms since the epoch
	Session int64     // the calling session
	Auth    []wire.Id // the caller's identities
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// Triggers receives the watch triggers of every change, in order.
	Triggers []Trigger
}

// Trigger is one watch trigger: an event on a path. The watch registry
// decides which watches it fires: NodeCreated and NodeDataChanged fire data
// (and exist) watches, NodeChildrenChanged child watches, NodeDeleted both.
type Trigger struct {
	Path  string
	Event wire.EventType
	// ACL decides who may receive the event: a watcher without READ on it
	// is not told, as ZooKeeper (with the fix for CVE-2024-23944) checks
	// at delivery. It is the ACL of the node the event is about, as it is
	// after the change (for NodeDeleted, as it was): the created, changed or
	// deleted node's own, and for NodeChildrenChanged the parent's.
	ACL []wire.ACL
}

func (c *Context) fire(path string, ev wire.EventType, acl []wire.ACL) {
	c.Triggers = append(c.Triggers, Trigger{Path: path, Event: ev, ACL: acl})
}

// CreateArgs is a create of any of the four create opcodes.
type CreateArgs struct {
	Op    wire.Op // OpCreate, OpCreate2, OpCreateContainer or OpCreateTTL
	Path  string
	Data  []byte
	ACL   []wire.ACL
	Flags int32
	TTL   int64 // OpCreateTTL only; -1 for the others, as ZooKeeper passes
}

type createMode struct {
	kind       Kind
	sequential bool
	ttlMode    bool
}

func parseFlags(flags int32) (createMode, bool) {
	switch flags {
	case wire.FlagPersistent:
		return createMode{kind: KindPersistent}, true
	case wire.FlagEphemeral:
		return createMode{kind: KindEphemeral}, true
	case wire.FlagPersistentSequential:
		return createMode{kind: KindPersistent, sequential: true}, true
	case wire.FlagEphemeralSequential:
		return createMode{kind: KindEphemeral, sequential: true}, true
	case wire.FlagContainer:
		return createMode{kind: KindContainer}, true
	case wire.FlagPersistentWithTTL:
		return createMode{kind: KindTTL, ttlMode: true}, true
	case wire.FlagPersistentSequentialWithTTL:
		return createMode{kind: KindTTL, sequential: true, ttlMode: true}, true
	}
	return createMode{}, false
}

// resolveMode applies ZooKeeper's validateCreateRequest and picks the node
// kind the opcode makes: create and create2 with the container flag make a
// plain persistent node, createContainer always makes a container.
func resolveMode(c *Context, a *CreateArgs) (createMode, wire.Code) {
	m, ok := parseFlags(a.Flags)
	if !ok {
		return m, wire.CodeBadArguments
	}
	if m.ttlMode && !c.ExtendedTypes {
		return m, wire.CodeUnimplemented
	}
	if m.ttlMode && (a.TTL <= 0 || a.TTL > MaxTTL) || !m.ttlMode && a.TTL >= 0 {
		return m, wire.CodeBadArguments
	}
	switch a.Op {
	case wire.OpCreateContainer:
		m.kind = KindContainer
	case wire.OpCreateTTL:
		m.kind = KindTTL
	default:
		if m.kind == KindContainer {
			m.kind = KindPersistent
		}
	}
	return m, wire.CodeOK
}

// Create creates a node, checking in ZooKeeper's order: flags, TTL, path
// shape, ACL, parent existence, CREATE permission on the parent, the final
// (sequential) path, existence, ephemeral parent. It returns the created
// path and the new node's Stat.
func (t *Tree) Create(c *Context, a CreateArgs) (string, wire.Stat, wire.Code) {
	m, code := resolveMode(c, &a)
	if code != wire.CodeOK {
		return "", wire.Stat{}, code
	}
	parentPath, _, ok := splitParent(a.Path)
	if !ok {
		return "", wire.Stat{}, wire.CodeBadArguments
	}
	acl, ok := fixupACL(a.ACL, c.Auth)
	if !ok {
		return "", wire.Stat{}, wire.CodeInvalidACL
	}
	parentID, parent := t.findID(parentPath)
	if parent == nil {
		return "", wire.Stat{}, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(parent.acl), wire.PermCreate, c.Auth) {
		return "", wire.Stat{}, wire.CodeNoAuth
	}
	path := a.Path
	if m.sequential {
		path += seqSuffix(t.childCreates(parent))
	}
	if !ValidPath(path) {
		return "", wire.Stat{}, wire.CodeBadArguments
	}
	if _, there := t.child(parent, baseName(path)); path == "/" || there != nil { // "/" is the root, not a child
		return "", wire.Stat{}, wire.CodeNodeExists
	}
	if parent.kind == KindEphemeral {
		return "", wire.Stat{}, wire.CodeNoChildrenForEphemerals
	}
	if a.Op == wire.OpCreateTTL && !m.ttlMode {
		// ZooKeeper fails to encode a TTL owner from a negative TTL here.
		return "", wire.Stat{}, wire.CodeMarshallingError
	}
	id, n := t.nodes.alloc()
	*n = node{
		acl: t.acls.ref(acl), kind: m.kind,
		czxid: c.Zxid, mzxid: c.Zxid, ctime: c.Time, mtime: c.Time,
	}
	t.setNodeData(id, n, a.Data)
	switch m.kind {
	case KindEphemeral:
		n.ownerTTL = c.Session
	case KindTTL:
		n.ownerTTL = a.TTL
	}
	t.insert(c, path, parentPath, parentID, parent, id, n)
	return path, t.stat(n), wire.CodeOK
}

// insert adds the node id, n, at path under parent and fires NodeCreated
// and the parent's NodeChildrenChanged. The child set keeps a copy of the
// node's name, not the path.
func (t *Tree) insert(c *Context, path, parentPath string, parentID nodeID, parent *node, id nodeID, n *node) {
	t.preserve(parentID, parent)
	name := baseName(path)
	if t.undo != nil {
		t.undoInsert(path, name, parent, id, n)
	}
	t.maxCzxid = max(t.maxCzxid, n.czxid)
	t.count++
	k := t.parentKids(parent)
	k.set.add(name, id)
	k.creates++
	k.pzxid = max(k.pzxid, c.Zxid)
	t.index(path, n)
	t.dataSize += int64(len(path) + int(n.dataLen))
	c.fire(path, wire.EventNodeCreated, t.acls.get(n.acl))
	c.fire(parentPath, wire.EventNodeChildrenChanged, t.acls.get(parent.acl))
}

// undoInsert records how to take back an insert of the node id, n, as
// name under parent.
func (t *Tree) undoInsert(path, name string, parent *node, id nodeID, n *node) {
	oldKids := t.kidsOf(parent)
	var old setState
	var oldPzxid int64
	var oldCreates int32
	if oldKids != nil {
		old, oldPzxid, oldCreates = setState{oldKids.set.next, oldKids.set.bits}, oldKids.pzxid, oldKids.creates
	}
	eph, hadEph := t.ephemerals[n.owner()], false
	var oldEph setState
	if n.kind == KindEphemeral && eph != nil {
		hadEph, oldEph = true, setState{eph.next, eph.bits}
	}
	t.undo = append(t.undo, func() {
		t.count--
		t.acls.unref(n.acl)
		k := t.kidsOf(parent)
		k.set.remove(name)
		if oldKids == nil {
			t.kidsTab.release(parent.kids) // the kids this create made
			parent.kids = 0
		} else {
			k.set.setState(old.next, old.bits)
			k.creates, k.pzxid = oldCreates, oldPzxid
		}
		t.unindex(path, n)
		if n.kind == KindEphemeral && !hadEph {
			delete(t.ephemerals, n.owner()) // the set this create made
		} else if hadEph {
			eph.setState(oldEph.next, oldEph.bits)
		}
		t.dataSize -= int64(len(path) + int(n.dataLen))
		t.releaseNode(id, n)
	})
}

// releaseNode lets a removed node's id, data and child set go.
func (t *Tree) releaseNode(id nodeID, n *node) {
	t.clearData(n)
	if n.kids != 0 {
		t.kidsTab.release(n.kids)
	}
	t.nodes.release(id)
}

// index adds a node to the ephemeral or reapable index its kind needs.
func (t *Tree) index(path string, n *node) {
	switch n.kind {
	case KindEphemeral:
		t.sessionSet(n.owner()).add(path, member{})
	case KindContainer, KindTTL:
		t.reapable[path] = struct{}{}
	}
}

func (t *Tree) unindex(path string, n *node) {
	switch n.kind {
	case KindEphemeral:
		if set := t.ephemerals[n.owner()]; set != nil {
			set.remove(path)
		}
	case KindContainer, KindTTL:
		delete(t.reapable, path)
	}
}

// reindex puts an ephemeral back at its old place in its session's order
// (undoing a delete); other kinds are indexed as usual.
func (t *Tree) reindex(path string, n *node, ephSeq uint32) {
	if n.kind != KindEphemeral {
		t.index(path, n)
		return
	}
	t.sessionSet(n.owner()).put(path, member{}, ephSeq)
}

// sessionSet returns a session's ephemeral set, making it if needed.
func (t *Tree) sessionSet(owner int64) *javaSet[member] {
	set := t.ephemerals[owner]
	if set == nil {
		set = &javaSet[member]{init: ephemeralsInitBits}
		t.ephemerals[owner] = set
	}
	return set
}

// Delete deletes a node, checking in ZooKeeper's order: path shape and
// special paths, parent existence, DELETE permission on the parent (before
// the node's own existence), existence, version, children.
func (t *Tree) Delete(c *Context, path string, version int32) wire.Code {
	parentPath, name, ok := splitParent(path)
	if !ok || isSpecial(path) {
		return wire.CodeBadArguments
	}
	parentID, parent := t.findID(parentPath)
	if parent == nil {
		return wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(parent.acl), wire.PermDelete, c.Auth) {
		return wire.CodeNoAuth
	}
	id, n := t.child(parent, name)
	if n == nil {
		return wire.CodeNoNode
	}
	if !versionMatches(version, n.version) {
		return wire.CodeBadVersion
	}
	if t.numChildren(n) > 0 {
		return wire.CodeNotEmpty
	}
	t.remove(c, path, parentPath, parentID, parent, id, n)
	return wire.CodeOK
}

// remove deletes the childless node id, n, and fires NodeDeleted and the
// parent's NodeChildrenChanged. The parent's stored cversion does not
// change. Inside a multi the node is held until the multi ends (its undo
// puts it back), otherwise released.
func (t *Tree) remove(c *Context, path, parentPath string, parentID nodeID, parent *node, id nodeID, n *node) {
	t.preserve(parentID, parent)
	t.preserve(id, n) // an undone remove may give it another ACL index
	name := baseName(path)
	k := t.kidsOf(parent)
	if t.undo != nil {
		oldPzxid, oldSeq, acl := k.pzxid, k.set.seqOf(name), t.acls.get(n.acl)
		var ephSeq uint32
		if n.kind == KindEphemeral {
			ephSeq = t.ephemerals[n.owner()].seqOf(path)
		}
		t.undo = append(t.undo, func() {
			t.count++
			n.acl = t.acls.ref(acl) // its index may have gone to another list

			k.set.put(name, id, oldSeq)
			k.pzxid = oldPzxid
			t.reindex(path, n, ephSeq)
			t.dataSize += int64(len(path) + int(n.dataLen))
		})
	}
	t.count--
	k.set.remove(name)
	k.pzxid = max(k.pzxid, c.Zxid)
	t.unindex(path, n)
	t.dataSize -= int64(len(path) + int(n.dataLen))
	c.fire(path, wire.EventNodeDeleted, t.acls.get(n.acl))
	c.fire(parentPath, wire.EventNodeChildrenChanged, t.acls.get(parent.acl))
	t.acls.unref(n.acl)
	if t.undo != nil {
		t.held = append(t.held, id)
	} else {
		t.releaseNode(id, n)
	}
}

// SetData replaces a node's data: path validity, existence, WRITE, version.
func (t *Tree) SetData(c *Context, path string, data []byte, version int32) (wire.Stat, wire.Code) {
	if !ValidPath(path) {
		return wire.Stat{}, wire.CodeBadArguments
	}
	id, n := t.findID(path)
	if n == nil {
		return wire.Stat{}, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermWrite, c.Auth) {
		return wire.Stat{}, wire.CodeNoAuth
	}
	if !versionMatches(version, n.version) {
		return wire.Stat{}, wire.CodeBadVersion
	}
	t.preserve(id, n)
	if t.undo != nil {
		oldData, oldVersion, oldMzxid, oldMtime := t.dataOf(n), n.version, n.mzxid, n.mtime
		t.undo = append(t.undo, func() {
			t.dataSize -= int64(n.dataLen) - int64(len(oldData))
			t.setNodeData(id, n, oldData)
			n.version, n.mzxid, n.mtime = oldVersion, oldMzxid, oldMtime
		})
	}
	t.dataSize += int64(len(data)) - int64(n.dataLen)
	t.setNodeData(id, n, data)
	n.version = nextVersion(n.version)
	n.mzxid, n.mtime = c.Zxid, c.Time
	c.fire(path, wire.EventNodeDataChanged, t.acls.get(n.acl))
	return t.stat(n), wire.CodeOK
}

// SetACL replaces a node's ACL: path validity, ACL validity, existence,
// ADMIN, aversion. It fires no watch and changes only the ACL and aversion.
func (t *Tree) SetACL(c *Context, path string, acl []wire.ACL, version int32) (wire.Stat, wire.Code) {
	if !ValidPath(path) {
		return wire.Stat{}, wire.CodeBadArguments
	}
	fixed, ok := fixupACL(acl, c.Auth)
	if !ok {
		return wire.Stat{}, wire.CodeInvalidACL
	}
	id, n := t.findID(path)
	if n == nil {
		return wire.Stat{}, wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermAdmin, c.Auth) {
		return wire.Stat{}, wire.CodeNoAuth
	}
	if !versionMatches(version, n.aversion) {
		return wire.Stat{}, wire.CodeBadVersion
	}
	t.preserve(id, n)
	if t.undo != nil {
		oldACL, oldVersion := t.acls.get(n.acl), n.aversion
		t.undo = append(t.undo, func() {
			undone := n.acl
			n.acl, n.aversion = t.acls.ref(oldACL), oldVersion
			t.acls.unref(undone)
		})
	}
	old := n.acl
	n.acl, n.aversion = t.acls.ref(fixed), nextVersion(n.aversion)
	t.acls.unref(old)
	return t.stat(n), wire.CodeOK
}

// CheckVersion is a multi's version check: path validity, existence, READ, version.
func (t *Tree) CheckVersion(c *Context, path string, version int32) wire.Code {
	if !ValidPath(path) {
		return wire.CodeBadArguments
	}
	n := t.find(path)
	if n == nil {
		return wire.CodeNoNode
	}
	if !CheckACL(t.acls.get(n.acl), wire.PermRead, c.Auth) {
		return wire.CodeNoAuth
	}
	if !versionMatches(version, n.version) {
		return wire.CodeBadVersion
	}
	return wire.CodeOK
}

// DeleteContainer deletes an empty node that is not a session's ephemeral,
// with no ACL or version check, as ZooKeeper's deleteContainer (issued by its
// container manager for empty containers and expired TTL nodes).
func (t *Tree) DeleteContainer(c *Context, path string) wire.Code {
	parentPath, name, ok := splitParent(path)
	if !ok || isSpecial(path) {
		return wire.CodeBadArguments
	}
	parentID, parent := t.findID(parentPath)
	var id nodeID
	var n *node
	if parent != nil {
		id, n = t.child(parent, name)
	}
	if n == nil {
		return wire.CodeNoNode
	}
	if t.numChildren(n) > 0 {
		return wire.CodeNotEmpty
	}
	if n.kind == KindEphemeral {
		return wire.CodeBadVersion
	}
	t.remove(c, path, parentPath, parentID, parent, id, n)
	return wire.CodeOK
}

// CloseSession deletes every ephemeral node of session, in the order
// ZooKeeper does (that of a copy of the session's set), so that every replica
// fires the same triggers in the same order as ZooKeeper, and returns their
// paths.
func (t *Tree) CloseSession(c *Context, session int64) []string {
	set := t.ephemerals[session]
	if set == nil {
		return []string{}
	}
	paths := set.orderedCopy()
	delete(t.ephemerals, session)
	for _, p := range paths {
		parentPath, name, _ := splitParent(p)
		parentID, parent := t.findID(parentPath)
		id, n := t.child(parent, name)
		t.remove(c, p, parentPath, parentID, parent, id, n)
	}
	return paths
}

// Reapable returns up to limit containers and TTL nodes that the container
// manager should delete at time now (ms since the epoch): containers that
// are empty and have had a child, and TTL nodes that are empty and whose
// mtime is more than their TTL ago. The order is sorted, for repeatability.
func (t *Tree) Reapable(now int64, limit int) []string {
	var out []string
	for p := range t.reapable {
		n := t.find(p)
		if t.numChildren(n) > 0 {
			continue
		}
		if n.kind == KindContainer && t.childCreates(n) > 0 || n.kind == KindTTL && now-n.mtime > n.ttl() {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	if len(out) > max(limit, 0) {
		out = out[:max(limit, 0)]
	}
	return out
}
