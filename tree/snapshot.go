package tree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"

	"github.com/zkraft/zkraft/wire"
)

// ErrBadSnapshot means a snapshot stream is not one this package wrote, or is
// truncated or corrupt.
var ErrBadSnapshot = errors.New("tree: bad snapshot")

const (
	snapshotMagic = "ZKTREE"
	// snapshotVersion 2 lists each parent's children with their places
	// after the nodes; version 1 (still read) kept each node's place in
	// its record.
	snapshotVersion = 2
	// maxSnapshotRecord bounds one node record: a path, data up to a large
	// jute.maxbuffer, an ACL list and the stat.
	maxSnapshotRecord = 256 << 20
)

// Snapshot is a point-in-time copy of a tree, cheap to take (nodes are
// copied, data and names shared, since they are never modified in place)
// and written out later by WriteTo, while the tree goes on changing.
type Snapshot struct {
	nodes []captured // parents before their children
	// kids and ephs hold what only some nodes have, by their index in
	// nodes, in its order.
	kids []capturedKids
	ephs []capturedEph
	acls [][]wire.ACL // the tree's ACL lists, by the index nodes hold
}

// captured is a node as a Snapshot keeps it: a copy, and its name. It
// names its parent by index; the stream holds each node's path instead.
type captured struct {
	name   string // "" for the root
	parent int32  // the parent's index among the nodes; -1 for the root
	n      node   // kids nil
}

// capturedKids is the state of the kids of the node at index.
type capturedKids struct {
	index   int32
	creates int32
	pzxid   int64
	kids    setState
}

// capturedEph is the place of the ephemeral at index in its session's set.
type capturedEph struct {
	index  int32
	ephSeq uint32
	eph    setState
}

// record is one node as the stream holds it, besides its path and ACL.
// Besides the node, it keeps the node's places in ZooKeeper's iteration
// orders, so that a restored tree lists children and ephemerals as the
// original did.
type record struct {
	n       node // kids nil; seq is its place among its parent's children
	pzxid   int64
	creates int32
	kids    setState
	eph     setState // an ephemeral's session set, and ephSeq its place in it
	ephSeq  uint32
}

// hasKids reports whether the node had a child (so that it needs kids).
func (r *record) hasKids() bool {
	return r.pzxid != r.n.czxid || r.creates != 0 || r.kids != (setState{})
}

// setState is what a javaSet needs besides its members.
type setState struct {
	next uint32
	bits uint8
}

// Snapshot captures the tree's current state.
func (t *Tree) Snapshot() *Snapshot {
	s := &Snapshot{nodes: make([]captured, 0, t.count), acls: slices.Clone(t.acls.lists)}
	t.eachRecord(func(_ []byte, name string, parent int32, r *record) {
		i := int32(len(s.nodes))
		s.nodes = append(s.nodes, captured{name: name, parent: parent, n: r.n})
		if r.hasKids() {
			s.kids = append(s.kids, capturedKids{index: i, creates: r.creates, pzxid: r.pzxid, kids: r.kids})
		}
		if r.n.kind == KindEphemeral {
			s.ephs = append(s.ephs, capturedEph{index: i, ephSeq: r.ephSeq, eph: r.eph})
		}
	})
	return s
}

// eachRecord calls fn with the path, name, parent's index and record of
// every node, parents before their children, counted from 0 in that order.
// The path's bytes are valid only during the call.
func (t *Tree) eachRecord(fn func(path []byte, name string, parent int32, r *record)) {
	next := int32(0)
	var visit func(path []byte, name string, parent int32, n *node)
	visit = func(path []byte, name string, parent int32, n *node) {
		r := t.record(path, n)
		self := next
		next++
		fn(path, name, parent, &r)
		if n.kids == nil {
			return
		}
		base := path
		if len(path) > 1 {
			base = append(path, '/')
		}
		for name, child := range n.kids.set.all {
			visit(append(base, name...), name, self, child)
		}
	}
	visit(append(make([]byte, 0, 256), '/'), "", -1, t.root)
}

func (t *Tree) record(path []byte, n *node) record {
	r := record{n: *n, pzxid: n.pzxid(), creates: n.childCreates()}
	r.n.kids = nil
	if n.kids != nil {
		r.kids = setState{n.kids.set.next, n.kids.set.bits}
	}
	if n.kind == KindEphemeral {
		set := t.ephemerals[n.owner()]
		r.eph, r.ephSeq = setState{set.next, set.bits}, set.seqOf(string(path))
	}
	return r
}

// Len returns the number of nodes in the snapshot.
func (s *Snapshot) Len() int { return len(s.nodes) }

// WriteTo writes the snapshot: a header, the node count, one
// length-prefixed record per node, with its path, then for each parent one
// or more length-prefixed lists of its children's names and places.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	lists := make([]kidSeqs, len(s.kids)) // by the parent's place in s.kids
	for i := range s.nodes {
		if c := &s.nodes[i]; c.parent >= 0 {
			k, _ := slices.BinarySearchFunc(s.kids, c.parent, func(k capturedKids, i int32) int { return int(k.index - i) })
			lists[k].names, lists[k].seqs = append(lists[k].names, c.name), append(lists[k].seqs, c.n.seq)
		}
	}
	each := func(fn func(path []byte, r *record) error) error {
		k := 0
		return s.each(func(path []byte, r *record) error {
			if r.hasKids() { // the nodes of s.kids, in its order
				lists[k].parent = string(path)
				k++
			}
			return fn(path, r)
		})
	}
	return writeSnapshot(w, len(s.nodes), s.acls, each, lists)
}

// kidSeqs is a parent's children, each name with its insertion sequence,
// as a version 2 stream lists them.
type kidSeqs struct {
	parent string
	names  []string
	seqs   []uint32
}

// kidsPerFrame bounds the children one frame of a version 2 snapshot lists,
// so that a parent of millions stays within maxSnapshotRecord.
const kidsPerFrame = 1 << 16

// each calls fn with every node's record and path, which it builds from
// the parent's: the nodes come parents first, so a stack of the paths of
// the current node's ancestors holds every parent a node can name.
func (s *Snapshot) each(fn func(path []byte, r *record) error) error {
	type ancestor struct {
		index int32
		end   int // its path is path[:end]
	}
	var stack []ancestor
	path := make([]byte, 0, 256)
	kids, ephs := s.kids, s.ephs
	for i := range s.nodes {
		c := &s.nodes[i]
		r := record{n: c.n, pzxid: c.n.czxid}
		if len(kids) > 0 && kids[0].index == int32(i) {
			r.creates, r.pzxid, r.kids = kids[0].creates, kids[0].pzxid, kids[0].kids
			kids = kids[1:]
		}
		if len(ephs) > 0 && ephs[0].index == int32(i) {
			r.ephSeq, r.eph = ephs[0].ephSeq, ephs[0].eph
			ephs = ephs[1:]
		}
		if c.parent < 0 {
			stack, path = stack[:0], append(path[:0], '/')
		} else {
			for stack[len(stack)-1].index != c.parent {
				stack = stack[:len(stack)-1]
			}
			path = path[:stack[len(stack)-1].end]
			if len(path) > 1 {
				path = append(path, '/')
			}
			path = append(path, c.name...)
		}
		stack = append(stack, ancestor{index: int32(i), end: len(path)})
		if err := fn(path, &r); err != nil {
			return err
		}
	}
	return nil
}

// writeSnapshot writes a snapshot stream of count records, which each
// hands to its function, then the child lists; acls holds the records' ACL
// lists.
func writeSnapshot(w io.Writer, count int, acls [][]wire.ACL, each func(func(path []byte, r *record) error) error,
	lists []kidSeqs) (int64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw}
	hdr := append([]byte(snapshotMagic), snapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(count))
	if _, err := cw.Write(hdr); err != nil {
		return cw.n, err
	}
	var buf []byte
	write := func(body func([]byte) []byte) error {
		var start int
		buf, start = wire.StartFrame(buf[:0])
		buf = wire.EndFrame(body(buf), start)
		_, err := cw.Write(buf)
		return err
	}
	err := each(func(path []byte, r *record) error {
		return write(func(b []byte) []byte { return appendRecord(b, path, acls[r.n.acl], r) })
	})
	if err != nil {
		return cw.n, err
	}
	for _, ks := range lists {
		for from := 0; from < len(ks.names); from += kidsPerFrame {
			to := min(from+kidsPerFrame, len(ks.names))
			err := write(func(b []byte) []byte {
				b = wire.AppendString(b, ks.parent)
				b = wire.AppendInt(b, int32(to-from))
				for i := from; i < to; i++ {
					b = wire.AppendString(b, ks.names[i])
					b = wire.AppendInt(b, int32(ks.seqs[i]))
				}
				return b
			})
			if err != nil {
				return cw.n, err
			}
		}
	}
	return cw.n, bw.Flush()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func appendRecord(b []byte, path []byte, acl []wire.ACL, r *record) []byte {
	n := &r.n
	b = wire.AppendBuffer(b, path) // as a string: never null
	b = wire.AppendBuffer(b, n.data())
	b = wire.AppendACLs(b, acl)
	for _, v := range []int64{n.czxid, n.mzxid, r.pzxid, n.ctime, n.mtime, n.ttl(), n.owner()} {
		b = wire.AppendLong(b, v)
	}
	for _, v := range []int32{n.version, r.creates, n.aversion} {
		b = wire.AppendInt(b, v)
	}
	b = wire.AppendInt(b, int32(n.kind))
	for _, v := range []uint32{n.seq, r.kids.next, uint32(r.kids.bits), r.ephSeq, r.eph.next, uint32(r.eph.bits)} {
		b = wire.AppendInt(b, int32(v))
	}
	return b
}

// decodeRecord decodes a record, its path and its ACL list.
func decodeRecord(src []byte) (string, []wire.ACL, record, error) {
	d := wire.NewDecoder(src)
	var r record
	n := &r.n
	path := d.String()
	n.setData(d.Buffer())
	acl := d.ACLs()
	var ttl, owner int64
	for _, v := range []*int64{&n.czxid, &n.mzxid, &r.pzxid, &n.ctime, &n.mtime, &ttl, &owner} {
		*v = d.Long()
	}
	for _, v := range []*int32{&n.version, &r.creates, &n.aversion} {
		*v = d.Int()
	}
	kind := d.Int()
	n.kind = Kind(kind)
	n.seq, r.kids.next = uint32(d.Int()), uint32(d.Int())
	r.kids.bits = uint8(d.Int())
	r.ephSeq, r.eph.next = uint32(d.Int()), uint32(d.Int())
	r.eph.bits = uint8(d.Int())
	if err := d.Err(); err != nil {
		return path, acl, r, err
	}
	if d.Remaining() != 0 || kind < 0 || kind > int32(KindTTL) || !ValidPath(path) {
		return path, acl, r, ErrBadSnapshot
	}
	switch n.kind {
	case KindEphemeral:
		n.ownerTTL = owner
	case KindTTL:
		n.ownerTTL = ttl
	}
	return path, acl, r, nil
}

// Restore reads a snapshot written by WriteTo, which must be the rest of
// the stream, and builds a new tree from it, indexes included. The records
// may come in any order (the first layout wrote them in its map's). A
// truncated or corrupt stream gives an error wrapping ErrBadSnapshot (or
// the reader's error) and no tree.
func Restore(r io.Reader) (*Tree, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	hdr := make([]byte, len(snapshotMagic)+1+8)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	version := hdr[len(snapshotMagic)]
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic || version < 1 || version > snapshotVersion {
		return nil, fmt.Errorf("%w: unknown header", ErrBadSnapshot)
	}
	count := binary.BigEndian.Uint64(hdr[len(snapshotMagic)+1:])
	t := &Tree{
		ephemerals: make(map[int64]*javaSet[member]),
		reapable:   make(map[string]struct{}),
		acls:       newACLTable(),
	}
	// byPath finds each restored node's parent; it is dropped once the
	// tree is linked.
	byPath := make(map[string]*node, min(count, 1<<20))
	fr := wire.NewFrameReader(br, maxSnapshotRecord)
	var links []link // version 1's
	if version == 1 {
		links = make([]link, 0, min(count, 1<<20))
	}
	for i := uint64(0); i < count; i++ {
		frame, err := fr.Next()
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrBadSnapshot, i, err)
		}
		path, acl, rec, err := decodeRecord(frame)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrBadSnapshot, i, err)
		}
		n := restoredNode(&rec)
		n.acl = t.acls.ref(acl)
		byPath[path] = n
		if t.count++; len(byPath) != t.count {
			return nil, fmt.Errorf("%w: duplicate node %s", ErrBadSnapshot, path)
		}
		t.restoreIndex(path, &rec, n)
		t.dataSize += int64(len(path) + int(n.dataLen))
		if version == 1 && path != "/" {
			links = append(links, link{path, n})
		}
	}
	if t.root = byPath["/"]; t.root == nil {
		return nil, fmt.Errorf("%w: no root", ErrBadSnapshot)
	}
	var err error
	if version == 1 {
		if _, err := fr.Next(); err != io.EOF {
			return nil, fmt.Errorf("%w: data after the %d nodes the header counts", ErrBadSnapshot, count)
		}
		err = relink(byPath, links)
	} else {
		err = readKids(fr, byPath)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// readKids reads the child lists after a version 2 snapshot's records, to
// the end of the stream, and puts each child in its parent's set at its
// recorded place. Every parent and child must be a node of the snapshot,
// a name is listed once under its parent, and there must be as many names
// as nodes other than the root.
func readKids(fr *wire.FrameReader, byPath map[string]*node) error {
	linked := 0
	var path []byte
	for {
		frame, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: children: %w", ErrBadSnapshot, err)
		}
		d := wire.NewDecoder(frame)
		parentPath := d.String()
		parent := byPath[parentPath]
		n := d.VectorLen(8)
		if d.Err() != nil || parent == nil {
			return fmt.Errorf("%w: children of %q: no such node (%v)", ErrBadSnapshot, parentPath, d.Err())
		}
		base := append(path[:0], parentPath...)
		if len(base) > 1 {
			base = append(base, '/')
		}
		for range n {
			name, seq := d.String(), uint32(d.Int())
			var child *node
			if d.Err() == nil && name != "" && strings.IndexByte(name, '/') < 0 {
				path = append(base, name...)
				child = byPath[string(path)]
			}
			if child == nil || !parent.parentKids().set.restoreMember(name, child, seq) {
				return fmt.Errorf("%w: child %q of %q: not a node, listed twice, or cut short (%v)",
					ErrBadSnapshot, name, parentPath, d.Err())
			}
		}
		if d.Remaining() != 0 {
			return fmt.Errorf("%w: children of %q: trailing bytes", ErrBadSnapshot, parentPath)
		}
		linked += n
	}
	if linked == len(byPath)-1 {
		return nil
	}
	for p, n := range byPath {
		if parent := byPath[parentOf(p)]; p != "/" && (parent == nil || parent.child(baseName(p)) != n) {
			return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, p)
		}
	}
	return fmt.Errorf("%w: %d children listed for %d nodes", ErrBadSnapshot, linked, len(byPath)-1)
}

// restoredNode makes the node a record describes, with kids if it ever had
// a child.
func restoredNode(rec *record) *node {
	n := new(node)
	*n = rec.n
	if rec.hasKids() {
		n.kids = &kids{
			set:   javaSet[*node]{init: childrenInitBits, next: rec.kids.next, bits: rec.kids.bits},
			pzxid: rec.pzxid, creates: rec.creates,
		}
	}
	return n
}

// link is a restored node to put in its parent's child set, at the place
// it holds (its seq).
type link struct {
	path string
	n    *node
}

// restoreIndex indexes a restored node, an ephemeral at its recorded place
// in its session's set.
func (t *Tree) restoreIndex(path string, rec *record, n *node) {
	if n.kind != KindEphemeral {
		t.index(path, n)
		return
	}
	set := t.sessionSet(n.owner())
	set.put(path, member{}, rec.ephSeq)
	set.setState(rec.eph.next, rec.eph.bits)
}

// relink puts every restored node in its parent's child set, at its
// recorded place. The sets' table sizes came with the nodes, so the names
// go in as they are (restoreMember), without the resizing an add does.
// A name is a copy, so that the tree does not keep the whole path, unless
// an index keeps the path anyway.
func relink(byPath map[string]*node, links []link) error {
	var parent *node
	parentPath := ""
	for _, l := range links {
		// Consecutive children of one parent share one lookup.
		if p := parentOf(l.path); parent == nil || p != parentPath {
			parent, parentPath = byPath[p], p
			if parent == nil {
				return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, l.path)
			}
		}
		name := baseName(l.path)
		if l.n.kind == KindPersistent {
			name = strings.Clone(name)
		}
		parent.parentKids().set.restoreMember(name, l.n, l.n.seq) // a node once: duplicates were refused
	}
	return nil
}

// Digest returns a hash of the whole tree's content that does not depend on
// map order: equal trees have equal digests on every replica. It leaves out
// /zookeeper/config, which each member sets for itself (SetConfig), as
// ZooKeeper's digest leaves out its /zookeeper nodes.
func (t *Tree) Digest() uint64 {
	var sum uint64
	var buf []byte
	t.eachRecord(func(path []byte, _ string, _ int32, r *record) {
		if string(path) == ConfigPath {
			return
		}
		buf = appendRecord(buf[:0], path, t.acls.get(r.n.acl), r)
		h := fnv.New64a()
		h.Write(buf)
		sum += h.Sum64()
	})
	return sum
}
