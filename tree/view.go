package tree

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/zkraft/zkraft/wire"
)

// Snapshot is the tree as it was when Snapshot was called, written out by
// WriteTo while the tree goes on changing, without a second copy of the
// tree: a node is copied only when the tree changes it while the snapshot
// is open (copy on write). Opening one costs a copy of the tree's ACL table
// and of its ephemerals' places; each node and child table the tree then
// changes is kept once as it was, until Close.
//
// A tree with open snapshots must be guarded by the lock passed to
// Snapshot: the tree changes only under its write lock, WriteTo reads
// under its read lock, taken for a thousand nodes at a time and released
// while the bytes are written, so that writes wait a fraction of a
// millisecond for it, and never for the sink it writes to.
type Snapshot struct {
	t     *Tree
	guard *sync.RWMutex
	count int // nodes, the root included
	// maxCzxid is the largest czxid of a node the tree had made: a node
	// with a larger one was made after the snapshot and is not in it.
	maxCzxid int64
	acls     [][]wire.ACL        // the tree's ACL lists, by the index nodes hold
	ephs     map[string]ephPlace // every ephemeral's place in its session's set, by path

	// pre holds, under the guard, each node the tree changed since, as it
	// was: with its data and the child set it had, which the tree no longer
	// changes.
	pre map[nodeID]*kept

	ended bool // under the guard: the tree keeps nothing more for it

	mu      sync.Mutex // guards writers and closing
	writers int        // WriteTo calls under way
	closing bool       // Close was called: no new writer, and the last one ends it
}

// ephPlace is an ephemeral's place in its session's set, and that set's state.
type ephPlace struct {
	seq uint32
	set setState
}

// ErrSnapshotClosed is what WriteTo gives for a closed snapshot.
var ErrSnapshotClosed = errors.New("tree: snapshot closed")

// snapshotChunk is how many nodes WriteTo reads under one hold of the read lock.
const snapshotChunk = 1024

// snapshotPaused, when set (by tests), is called each time WriteTo has
// released the read lock between two chunks.
var snapshotPaused func()

// Snapshot opens a snapshot of the tree as it is now. guard is the lock
// around every use of the tree, which the caller holds for writing (or is
// the tree's only user); nil for a tree that only one goroutine uses. The
// snapshot stays open, and the tree keeps what it changes, until Close.
func (t *Tree) Snapshot(guard *sync.RWMutex) *Snapshot {
	if guard == nil {
		guard = new(sync.RWMutex)
	}
	s := &Snapshot{
		t: t, guard: guard, count: t.count, maxCzxid: t.maxCzxid,
		acls: slices.Clone(t.acls.lists), pre: make(map[nodeID]*kept),
	}
	n := t.EphemeralCount()
	s.ephs = make(map[string]ephPlace, n)
	for _, set := range t.ephemerals {
		state := setState{set.next, set.bits}
		for i := range set.slots {
			if sl := &set.slots[i]; sl.size != 0 {
				s.ephs[set.key(sl)] = ephPlace{seq: sl.seq, set: state}
			}
		}
	}
	t.open = append(t.open, s)
	return s
}

// Len returns the number of nodes in the snapshot.
func (s *Snapshot) Len() int { return s.count }

// Close ends the snapshot: the tree stops keeping what it changes for it.
// A WriteTo under way finishes first (the last one ends it); later ones
// fail with ErrSnapshotClosed. Close must not be called with the guard held.
func (s *Snapshot) Close() {
	s.mu.Lock()
	s.closing = true
	idle := s.writers == 0
	s.mu.Unlock()
	if idle {
		s.end()
	}
}

func (s *Snapshot) end() {
	s.guard.Lock()
	defer s.guard.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.t.open = slices.DeleteFunc(s.t.open, func(o *Snapshot) bool { return o == s })
	s.pre = nil
}

// kept is a node as a snapshot has it: the node, its data and its child
// set (nil if it had none).
type kept struct {
	n    node
	data []byte
	kids *kids
}

// preserve keeps the node id, n, as it is for every open snapshot that
// holds it and has not kept it yet, before the tree changes n or its
// children. The copy keeps n's child set; n gets a copy of it to change.
// (A node id released and handed out again meanwhile is kept already, as
// its removal preserved it, so a snapshot never mistakes the new node for
// the one it holds.)
func (t *Tree) preserve(id nodeID, n *node) {
	if len(t.open) != 0 {
		t.preserveFor(id, n)
	}
}

func (t *Tree) preserveFor(id nodeID, n *node) {
	var was *kept
	for _, s := range t.open {
		if n.czxid > s.maxCzxid {
			continue // made after s
		}
		if _, ok := s.pre[id]; ok {
			continue
		}
		if was == nil {
			was = &kept{n: *n, data: t.dataOf(n), kids: t.kidsOf(n)}
			if was.kids != nil {
				t.kidsTab.items[n.kids] = was.kids.clone()
			}
		}
		s.pre[id] = was
	}
}

// clone returns a copy of k that shares nothing it changes with k.
func (k *kids) clone() *kids {
	c := &kids{pzxid: k.pzxid, creates: k.creates}
	k.set.cloneInto(&c.set)
	return c
}

// view returns the node id as the snapshot has it. Called under the guard.
func (s *Snapshot) view(id nodeID) kept {
	if was, ok := s.pre[id]; ok {
		return *was
	}
	t := s.t
	n := t.nodes.at(id)
	return kept{n: *n, data: t.dataOf(n), kids: t.kidsOf(n)}
}

// record returns the record of the node k (as the snapshot has it) at
// path, whose place among its parent's children is seq.
func (s *Snapshot) record(path []byte, k *kept, seq uint32) record {
	r := nodeRecord(k, seq)
	if k.n.kind == KindEphemeral {
		p := s.ephs[string(path)]
		r.eph, r.ephSeq = p.set, p.seq
	}
	return r
}

// WriteTo writes the snapshot as a stream that Restore reads: its nodes,
// parents first, then each parent's children with their places. It may be
// called several times, at once too. It must not be called with the guard
// held.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	if !s.begin() {
		return 0, ErrSnapshotClosed
	}
	defer s.done()

	e := newEncoder(w, s.count, s.acls)
	records := 0
	err := s.walk(e, func(parent *walkFrame, path []byte, k *kept) {
		var seq uint32
		if parent != nil {
			seq = parent.seq
		}
		r := s.record(path, k, seq)
		e.record(path, &r)
		records++
	}, nil)
	if err == nil && records != s.count {
		err = fmt.Errorf("tree: snapshot of %d nodes found %d", s.count, records)
	}
	if err != nil {
		return e.w.n, err
	}
	err = s.walk(e, func(parent *walkFrame, path []byte, _ *kept) {
		if parent == nil {
			return // the root
		}
		parent.names, parent.seqs = append(parent.names, parent.name), append(parent.seqs, parent.seq)
		if len(parent.names) == kidsPerFrame {
			parent.flush(e, path)
		}
	}, func(f *walkFrame, path []byte) { f.flush(e, path) })
	if err == nil {
		err = e.flush()
	}
	return e.w.n, err
}

// Digest returns the digest of the tree as the snapshot holds it: what
// Tree.Digest returned when the snapshot was taken, however the tree has
// changed since. It must not be called with the guard held. pause, if not
// nil, is called, without the guard, between the chunks of nodes it reads
// under one hold of it: a caller may pace the walk there.
func (s *Snapshot) Digest(pause func()) (uint64, error) {
	if !s.begin() {
		return 0, ErrSnapshotClosed
	}
	defer s.done()
	var d digester
	e := newEncoder(io.Discard, 0, nil) // nothing is encoded: walk only pauses on it
	e.pause = pause
	err := s.walk(e, func(parent *walkFrame, path []byte, k *kept) {
		var seq uint32
		if parent != nil {
			seq = parent.seq
		}
		r := s.record(path, k, seq)
		d.add(path, s.acls[k.n.acl], &r)
	}, nil)
	return d.sum, err
}

// begin counts a reader of the snapshot (WriteTo, Digest), unless it is
// closing; done ends the last reader's read of a snapshot Close was called
// on meanwhile.
func (s *Snapshot) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.writers++
	return true
}

func (s *Snapshot) done() {
	s.mu.Lock()
	s.writers--
	last := s.writers == 0 && s.closing
	s.mu.Unlock()
	if last {
		s.end()
	}
}

// walkFrame is a parent on walk's path: its children as the snapshot has
// them, and the place of the next one to visit.
type walkFrame struct {
	set  *javaSet[nodeID] // a child set the tree no longer changes, or does only after keeping it
	next int
	end  int    // the parent's path is path[:end]
	name string // the name of the child being visited
	seq  uint32 // and its place
	// names and seqs are children visited and not yet encoded.
	names []string
	seqs  []uint32
}

// flush encodes the children the frame has gathered; path starts with the
// parent's.
func (f *walkFrame) flush(e *encoder, path []byte) {
	if len(f.names) > 0 {
		e.kids(path[:f.end], f.names, f.seqs)
		f.names, f.seqs = f.names[:0], f.seqs[:0]
	}
}

// walk calls visit with every node of the snapshot (a copy, and its
// parent's frame, nil for the root), parents before their children, then
// leave, if not nil, with each parent's frame and path after its last
// child. Both
// run under the guard's read lock, which walk releases every
// snapshotChunk nodes, and whenever e is full, to write e out.
func (s *Snapshot) walk(e *encoder, visit func(parent *walkFrame, path []byte, k *kept),
	leave func(f *walkFrame, path []byte)) error {
	s.guard.RLock()
	locked := true
	defer func() {
		if locked {
			s.guard.RUnlock()
		}
	}()
	if s.ended {
		return ErrSnapshotClosed // s.pre is gone: nothing to read
	}
	path := append(make([]byte, 0, 256), '/')
	var stack []walkFrame
	push := func(k *kept) {
		if k.kids != nil && k.kids.set.n > 0 {
			stack = append(stack, walkFrame{set: &k.kids.set, end: len(path)})
		}
	}
	root := s.view(s.t.root)
	visit(nil, path, &root)
	push(&root)
	for visited := 1; len(stack) > 0; {
		if visited >= snapshotChunk || e.full() {
			s.guard.RUnlock()
			locked = false
			if snapshotPaused != nil {
				snapshotPaused()
			}
			if e.pause != nil {
				e.pause()
			}
			if err := e.flush(); err != nil {
				return err
			}
			s.guard.RLock()
			locked = true
			visited = 0
		}
		f := &stack[len(stack)-1]
		slots := f.set.slots
		for f.next < len(slots) && slots[f.next].size == 0 {
			f.next++
		}
		if f.next == len(slots) {
			if leave != nil {
				leave(f, path)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		sl := &slots[f.next]
		f.next++
		f.name, f.seq = f.set.key(sl), sl.seq
		path = path[:f.end]
		if len(path) > 1 {
			path = append(path, '/')
		}
		path = append(path, f.name...)
		child := s.view(sl.e)
		visit(f, path, &child)
		visited++
		push(&child)
	}
	return nil
}
