package servertest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Inspector reads a server's state for a test's assertions, as values,
// whatever the ACLs: the znode tree with Stat and ACL, the sessions with
// their ephemerals and watches, the watches, and the lock queues; and it
// waits for a condition on that state without sleeping. A Namespace's
// Inspector sees its own part of the tree, with paths relative to its
// root, and its own sessions only.
type Inspector struct {
	t    testing.TB
	srv  *server.Server
	root string           // "/", or a namespace's root
	owns func(int64) bool // the sessions shown; nil: all
}

// Inspect returns an Inspector of the server.
func (s *Server) Inspect() *Inspector { return &Inspector{t: s.t, srv: s.Server, root: "/"} }

// Inspect returns an Inspector of member i, which must be running. Each
// member has its own copy of the state, up to date with what it applied,
// and holds the watches of its own clients only.
func (c *Cluster) Inspect(i int) *Inspector {
	c.t.Helper()
	srv := c.members[i].srv
	if srv == nil {
		c.t.Fatalf("servertest: member %d is not running", i)
	}
	return &Inspector{t: c.t, srv: srv, root: "/"}
}

// Znode is a znode and its subtree as a value, for assertions and golden
// files. Children are in name order.
type Znode struct {
	Path     string
	Data     []byte
	Stat     zk.Stat
	ACL      []zk.ACL
	Kind     NodeKind
	TTL      time.Duration // TTL nodes only
	Children []*Znode
}

// NodeKind is a znode's lifetime class.
type NodeKind uint8

// The kinds of znodes.
const (
	Persistent NodeKind = iota
	Ephemeral
	Container
	TTLNode
)

// String returns "persistent", "ephemeral", "container" or "ttl".
func (k NodeKind) String() string {
	return [...]string{"persistent", "ephemeral", "container", "ttl"}[k]
}

// superIDs pass every ACL check.
var superIDs = []wire.Id{{Scheme: tree.SchemeSuper}}

// Tree returns the node at path with its whole subtree, or nil if there is
// none.
func (in *Inspector) Tree(path string) *Znode {
	var z *Znode
	in.srv.FSM().Read(func(t *tree.Tree) { z = in.read(t, in.abs(path), -1) })
	return z
}

// Node returns the node at path with its children's names only (each
// child a Znode with its Path alone), or nil if there is none.
func (in *Inspector) Node(path string) *Znode {
	var z *Znode
	in.srv.FSM().Read(func(t *tree.Tree) { z = in.read(t, in.abs(path), 1) })
	return z
}

// read builds the Znode of abs down depth levels (all of them if
// negative); at depth 0 it fills the path alone.
func (in *Inspector) read(t *tree.Tree, abs string, depth int) *Znode {
	kind, ttl, ok := t.KindOf(abs)
	if !ok {
		return nil
	}
	z := &Znode{Path: in.rel(abs)}
	if depth == 0 {
		return z
	}
	data, st, _ := t.Get(abs, superIDs)
	acl, _, _ := t.ACL(abs, superIDs)
	names, _, _ := t.Children(abs, superIDs)
	z.Data, z.Stat, z.ACL = slices.Clone(data), zk.Stat(st), zkACL(acl)
	z.Kind, z.TTL = NodeKind(kind), time.Duration(ttl)*time.Millisecond
	names = slices.Sorted(slices.Values(names)) // a copy: the tree's list is shared
	for _, name := range names {
		z.Children = append(z.Children, in.read(t, join(abs, name), depth-1))
	}
	return z
}

func zkACL(acl []wire.ACL) []zk.ACL {
	out := make([]zk.ACL, len(acl))
	for i, a := range acl {
		out[i] = zk.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID}
	}
	return out
}

// Walk calls fn for z and every node below it, parents first, children in
// name order.
func (z *Znode) Walk(fn func(*Znode)) {
	fn(z)
	for _, c := range z.Children {
		c.Walk(fn)
	}
}

// Paths returns the paths of z and every node below it, as Walk visits
// them.
func (z *Znode) Paths() []string {
	var out []string
	z.Walk(func(n *Znode) { out = append(out, n.Path) })
	return out
}

// Text renders z and its subtree one node a line, for golden files: the
// path, the data (quoted, at most 64 bytes of it), the data, child and ACL
// versions, and the kind unless persistent. What differs from run to run
// (zxids, times, session ids) is left out; the values keep it.
func (z *Znode) Text() string {
	var b strings.Builder
	z.Walk(func(n *Znode) {
		data := n.Data
		more := ""
		if len(data) > 64 {
			data, more = data[:64], fmt.Sprintf("...(%d bytes)", len(n.Data))
		}
		fmt.Fprintf(&b, "%s %q%s v%d cv%d av%d", n.Path, data, more, n.Stat.Version, n.Stat.Cversion, n.Stat.Aversion)
		if n.Kind != Persistent {
			fmt.Fprintf(&b, " %s", n.Kind)
		}
		b.WriteByte('\n')
	})
	return b.String()
}

// Session is a session as the server knows it.
type Session struct {
	ID         int64
	Timeout    time.Duration // negotiated
	Ephemerals []string      // the paths of its ephemeral nodes, sorted
	Watches    []server.Watch
}

// Sessions returns the live sessions, ordered by id, each with its
// ephemerals and the watches it holds on this server. A namespace's are
// those made through its address, and those that own ephemerals or hold
// watches under its root (clients that use its chroot).
func (in *Inspector) Sessions() []Session {
	byID := make(map[int64][]server.Watch)
	for _, w := range in.Watches() {
		byID[w.Session] = append(byID[w.Session], w)
	}
	var out []Session
	sessions := in.srv.FSM().Sessions() // not inside Read: its lock is not reentrant
	in.srv.FSM().Read(func(t *tree.Tree) {
		for _, s := range sessions {
			var eph []string
			for _, p := range t.Ephemerals(s.ID, "/") {
				if in.inside(p) {
					eph = append(eph, in.rel(p))
				}
			}
			if in.owns != nil && !in.owns(s.ID) && len(eph) == 0 && len(byID[s.ID]) == 0 {
				continue
			}
			slices.Sort(eph)
			out = append(out, Session{ID: s.ID, Timeout: time.Duration(s.Timeout) * time.Millisecond,
				Ephemerals: eph, Watches: byID[s.ID]})
		}
	})
	return out
}

// Watches returns the watches held on this server (a namespace's: on its
// subtree), ordered by path, kind and session.
func (in *Inspector) Watches() []server.Watch {
	var out []server.Watch
	for _, w := range in.srv.Watches() {
		if !in.inside(w.Path) {
			continue
		}
		w.Path = in.rel(w.Path)
		out = append(out, w)
	}
	return out
}

// abs turns a path of the inspected namespace into the server's.
func (in *Inspector) abs(p string) string {
	switch {
	case in.root == "/":
		return p
	case p == "/":
		return in.root
	}
	return in.root + p
}

// rel turns a server path into the inspected namespace's.
func (in *Inspector) rel(p string) string {
	switch {
	case in.root == "/":
		return p
	case p == in.root:
		return "/"
	}
	return strings.TrimPrefix(p, in.root)
}

// inside reports whether a server path is in the inspected namespace.
func (in *Inspector) inside(p string) bool {
	return in.root == "/" || p == in.root || strings.HasPrefix(p, in.root+"/")
}

func join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// waitBound is how long the WaitFor helpers wait at most, unless the test's
// deadline comes sooner.
const waitBound = 30 * time.Second

// WaitFor waits until cond holds, checking it again at each change of the
// server's state (a write or session change applied, a watch set or
// removed: server.Server.Changed), never on a timer. It fails the test if
// cond does not hold within 30 seconds or before the test's deadline.
func (in *Inspector) WaitFor(what string, cond func(*Inspector) bool) {
	in.t.Helper()
	deadline := time.Now().Add(waitBound)
	if d, ok := in.t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := d.Deadline(); ok && td.Before(deadline) {
			deadline = td.Add(-time.Second)
		}
	}
	start := time.Now()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		changed := in.srv.Changed()
		if cond(in) {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			in.t.Fatalf("servertest: waited %v for %s\n%s", time.Since(start).Round(time.Millisecond), what, in.Dump())
			return
		}
	}
}

// WaitForNode waits until the node at path exists.
func (in *Inspector) WaitForNode(path string) {
	in.t.Helper()
	in.WaitFor(path+" to exist", func(in *Inspector) bool { return in.Node(path) != nil })
}

// WaitForGone waits until there is no node at path.
func (in *Inspector) WaitForGone(path string) {
	in.t.Helper()
	in.WaitFor(path+" to be gone", func(in *Inspector) bool { return in.Node(path) == nil })
}

// WaitForChildren waits until the node at path has n children.
func (in *Inspector) WaitForChildren(path string, n int) {
	in.t.Helper()
	in.WaitFor(fmt.Sprintf("%s to have %d children", path, n), func(in *Inspector) bool {
		z := in.Node(path)
		return z != nil && len(z.Children) == n
	})
}

// WaitForWatches waits until n watches are held on path (of any kind, by
// any session).
func (in *Inspector) WaitForWatches(path string, n int) {
	in.t.Helper()
	in.WaitFor(fmt.Sprintf("%d watches on %s", n, path), func(in *Inspector) bool {
		count := 0
		for _, w := range in.Watches() {
			if w.Path == path {
				count++
			}
		}
		return count >= n
	})
}

// Dump renders the tree (as Znode.Text does, with ephemeral owners) and
// the sessions with their ephemerals and watches, for a failing test's log.
func (in *Inspector) Dump() string {
	var b strings.Builder
	b.WriteString("tree:\n")
	if z := in.Tree("/"); z != nil {
		z.Walk(func(n *Znode) {
			fmt.Fprintf(&b, "  %s %q v%d cv%d", n.Path, truncate(n.Data, 64), n.Stat.Version, n.Stat.Cversion)
			if n.Kind != Persistent {
				fmt.Fprintf(&b, " %s", n.Kind)
			}
			if n.Stat.EphemeralOwner != 0 {
				fmt.Fprintf(&b, " owner=%#x", n.Stat.EphemeralOwner)
			}
			b.WriteByte('\n')
		})
	}
	b.WriteString("sessions:\n")
	for _, s := range in.Sessions() {
		fmt.Fprintf(&b, "  %#x timeout=%v ephemerals=%v\n", s.ID, s.Timeout, s.Ephemerals)
		for _, w := range s.Watches {
			fmt.Fprintf(&b, "    watch %s %s %s\n", w.Kind, w.Mode, w.Path)
		}
	}
	if locks := in.Locks(); len(locks) > 0 {
		b.WriteString("locks:\n")
		for _, q := range locks {
			fmt.Fprintf(&b, "  %s (%s):", q.Path, q.Kind)
			for _, n := range q.Nodes {
				mark := ""
				if n.Holds {
					mark = "*"
				}
				fmt.Fprintf(&b, " %s%s[%#x]", mark, n.Name, n.Session)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func truncate(b []byte, n int) []byte { return b[:min(len(b), n)] }

// DumpOnFailure logs Dump to the test's output when the test fails, before
// the server stops.
func (in *Inspector) DumpOnFailure() {
	in.t.Cleanup(func() {
		if in.t.Failed() {
			in.t.Logf("servertest: state at the end of the failed test:\n%s", in.Dump())
		}
	})
}

// LockQueue is a lock recipe's queue: the contenders' nodes under one
// parent, in the order the recipe grants them.
type LockQueue struct {
	Path  string   // the lock's node, the parent of the queue
	Kind  LockKind // which recipe's names the nodes carry
	Nodes []LockNode
}

// LockNode is one contender in a lock queue.
type LockNode struct {
	Name    string
	Session int64 // the ephemeral node's owner
	Write   bool  // read-write locks: a writer (else a reader)
	Holds   bool  // holds the lock now, by the recipe's rule
}

// Holder returns the first node that holds the lock, if any.
func (q LockQueue) Holder() (LockNode, bool) {
	for _, n := range q.Nodes {
		if n.Holds {
			return n, true
		}
	}
	return LockNode{}, false
}

// Waiters returns the nodes that wait, in order.
func (q LockQueue) Waiters() []LockNode {
	var out []LockNode
	for _, n := range q.Nodes {
		if !n.Holds {
			out = append(out, n)
		}
	}
	return out
}

// LockKind names the recipe a lock queue's nodes come from.
type LockKind string

// The lock recipes Locks recognises by their nodes' names (each name ends
// with a ten-digit sequence number; Curator's protected mode, which
// lockrecipe and go-zookeeper's zk.Lock also use, prefixes _c_<id>-).
const (
	// Mutex: lockrecipe.Mutex, Curator's InterProcessMutex and
	// go-zookeeper's zk.Lock ("lock-"): the first node holds.
	Mutex LockKind = "mutex"
	// ReadWrite: lockrecipe.RWMutex and Curator's InterProcessReadWriteLock
	// ("__READ__", "__WRIT__"): a writer holds when first, a reader when no
	// writer is ahead of it.
	ReadWrite LockKind = "read-write"
	// Latch: lockrecipe's election and Curator's LeaderLatch ("latch-"):
	// the first node leads.
	Latch LockKind = "leader latch"
	// Leases: lockrecipe.Semaphore and Curator's InterProcessSemaphoreV2
	// ("lease-" under leases/): every node is a lease taken or wanted; the
	// limit is the application's, so none is marked as holding.
	Leases LockKind = "semaphore leases"
	// Kazoo: kazoo's Lock, WriteLock ("__lock__") and ReadLock
	// ("__rlock__"): as ReadWrite, with "__lock__" for writers.
	Kazoo LockKind = "kazoo lock"
)

// lockName is one recipe's node name and what it means.
type lockName struct {
	name  string
	kind  LockKind
	write bool
}

var lockNames = []lockName{
	{"__READ__", ReadWrite, false}, {"__WRIT__", ReadWrite, true},
	{"__rlock__", Kazoo, false}, {"__lock__", Kazoo, true},
	{"lock-", Mutex, true}, {"latch-", Latch, true}, {"lease-", Leases, false},
}

// Locks returns every lock queue in the tree: each node whose ephemeral
// children all carry one recipe's names, ordered by path.
func (in *Inspector) Locks() []LockQueue {
	var out []LockQueue
	root := in.Tree("/")
	if root == nil {
		return nil
	}
	root.Walk(func(z *Znode) {
		if q, ok := lockQueue(z); ok {
			out = append(out, q)
		}
	})
	return out
}

// lockQueue recognises z's children as a lock queue.
func lockQueue(z *Znode) (LockQueue, bool) {
	q := LockQueue{Path: z.Path}
	type entry struct {
		node LockNode
		seq  string
	}
	var entries []entry
	for _, c := range z.Children {
		if c.Stat.EphemeralOwner == 0 {
			continue
		}
		name := c.Path[strings.LastIndexByte(c.Path, '/')+1:]
		ln, seq, ok := matchLockName(name)
		if !ok || q.Kind != "" && q.Kind != ln.kind {
			return LockQueue{}, false
		}
		q.Kind = ln.kind
		entries = append(entries, entry{LockNode{Name: name, Session: c.Stat.EphemeralOwner, Write: ln.write}, seq})
	}
	if len(entries) == 0 {
		return LockQueue{}, false
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	writerAhead := false
	for i, e := range entries {
		n := e.node
		switch q.Kind {
		case Mutex, Latch:
			n.Holds = i == 0
		case ReadWrite, Kazoo:
			n.Holds = (n.Write && i == 0) || (!n.Write && !writerAhead)
			writerAhead = writerAhead || n.Write
		}
		q.Nodes = append(q.Nodes, n)
	}
	return q, true
}

// matchLockName finds the recipe name in a node's name and its sequence
// number (the ten digits that end it).
func matchLockName(name string) (lockName, string, bool) {
	if len(name) < 10 {
		return lockName{}, "", false
	}
	seq := name[len(name)-10:]
	if strings.Trim(seq, "0123456789") != "" {
		return lockName{}, "", false
	}
	for _, ln := range lockNames {
		if strings.HasSuffix(name[:len(name)-10], ln.name) {
			return ln, seq, true
		}
	}
	return lockName{}, "", false
}
