package tree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

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

// record is one node as the stream holds it, besides its path and ACL.
// Besides the node, it keeps the node's places in ZooKeeper's iteration
// orders, so that a restored tree lists children and ephemerals as the
// original did.
type record struct {
	n       node   // its data and kids refs unused
	data    []byte // the node's data
	seq     uint32 // its place among its parent's children
	pzxid   int64
	creates int32
	kids    setState
	eph     setState // an ephemeral's session set, and ephSeq its place in it
	ephSeq  uint32
}

// nodeRecord returns the record of the node k, whose place among its
// parent's children is seq, but for an ephemeral's place.
func nodeRecord(k *kept, seq uint32) record {
	r := record{n: k.n, data: k.data, seq: seq, pzxid: k.n.czxid}
	r.n.kids, r.n.data = 0, dataRef{}
	if k.kids != nil {
		r.pzxid, r.creates = k.kids.pzxid, k.kids.creates
		r.kids = setState{k.kids.set.next, k.kids.set.bits}
	}
	return r
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

// eachRecord calls fn with the path and record of every node, parents
// before their children. The path's bytes are valid only during the call.
func (t *Tree) eachRecord(fn func(path []byte, r *record)) {
	var visit func(path []byte, n *node, seq uint32)
	visit = func(path []byte, n *node, seq uint32) {
		r := t.record(path, n, seq)
		fn(path, &r)
		k := t.kidsOf(n)
		if k == nil {
			return
		}
		base := path
		if len(path) > 1 {
			base = append(path, '/')
		}
		for i := range k.set.slots {
			if sl := &k.set.slots[i]; sl.size != 0 {
				visit(append(base, k.set.key(sl)...), t.nodes.at(sl.e), sl.seq)
			}
		}
	}
	visit(append(make([]byte, 0, 256), '/'), t.nodes.at(t.root), 0)
}

// record returns the record of the node n at path, whose place among its
// parent's children is seq.
func (t *Tree) record(path []byte, n *node, seq uint32) record {
	r := nodeRecord(&kept{n: *n, data: t.dataOf(n), kids: t.kidsOf(n)}, seq)
	if n.kind == KindEphemeral {
		set := t.ephemerals[n.owner()]
		r.eph, r.ephSeq = setState{set.next, set.bits}, set.seqOf(string(path))
	}
	return r
}

// kidsPerFrame bounds the children one frame of a version 2 snapshot lists,
// so that a parent of millions stays within maxSnapshotRecord.
const kidsPerFrame = 1 << 16

// encoder encodes a snapshot stream into a buffer that its caller writes
// out (flush) whenever it suits it: the header and node count, one
// length-prefixed record per node, with its path, then for each parent one
// or more length-prefixed lists of its children's names and places.
type encoder struct {
	w    countingWriter
	buf  []byte
	acls [][]wire.ACL // the records' ACL lists, by the index nodes hold
	// pause, when set, is called each time the walk lets go of the tree's
	// lock (Snapshot.Digest's pacing).
	pause func()
}

func newEncoder(w io.Writer, count int, acls [][]wire.ACL) *encoder {
	e := &encoder{w: countingWriter{w: w}, acls: acls, buf: make([]byte, 0, 64<<10)}
	e.buf = append(e.buf, snapshotMagic...)
	e.buf = append(e.buf, snapshotVersion)
	e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(count))
	return e
}

// record encodes a node's record.
func (e *encoder) record(path []byte, r *record) {
	var start int
	e.buf, start = wire.StartFrame(e.buf)
	e.buf = wire.EndFrame(appendRecord(e.buf, path, e.acls[r.n.acl], r), start)
}

// kids encodes a list of children of the node at parent.
func (e *encoder) kids(parent []byte, names []string, seqs []uint32) {
	var start int
	e.buf, start = wire.StartFrame(e.buf)
	e.buf = wire.AppendBuffer(e.buf, parent) // as a string: never null
	e.buf = wire.AppendInt(e.buf, int32(len(names)))
	for i, name := range names {
		e.buf = wire.AppendString(e.buf, name)
		e.buf = wire.AppendInt(e.buf, int32(seqs[i]))
	}
	e.buf = wire.EndFrame(e.buf, start)
}

// full reports whether the buffer should be written out.
func (e *encoder) full() bool { return len(e.buf) >= 1<<20 }

// flush writes out what is buffered.
func (e *encoder) flush() error {
	_, err := e.w.Write(e.buf)
	if cap(e.buf) > 4<<20 {
		e.buf = make([]byte, 0, 64<<10) // one huge record does not pin its buffer
	}
	e.buf = e.buf[:0]
	return err
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
	b = wire.AppendBuffer(b, r.data)
	b = wire.AppendACLs(b, acl)
	for _, v := range []int64{n.czxid, n.mzxid, r.pzxid, n.ctime, n.mtime, n.ttl(), n.owner()} {
		b = wire.AppendLong(b, v)
	}
	for _, v := range []int32{n.version, r.creates, n.aversion} {
		b = wire.AppendInt(b, v)
	}
	b = wire.AppendInt(b, int32(n.kind))
	for _, v := range []uint32{r.seq, r.kids.next, uint32(r.kids.bits), r.ephSeq, r.eph.next, uint32(r.eph.bits)} {
		b = wire.AppendInt(b, int32(v))
	}
	return b
}

// maxSetBits is the largest table a set's record may claim (2^32 bins, as
// many as a set's 32-bit counts can use): a table size past it would
// overflow what is computed from it.
const maxSetBits = 32

// decodeRecord decodes a record, its path and its ACL list. The record's
// data is a slice of src.
func decodeRecord(src []byte) (string, []wire.ACL, record, error) {
	d := wire.NewDecoder(src)
	var r record
	n := &r.n
	path := d.String()
	r.data = d.BufferAliasing() // the tree copies it into its own storage
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
	r.seq, r.kids.next = uint32(d.Int()), uint32(d.Int())
	r.kids.bits = uint8(d.Int())
	r.ephSeq, r.eph.next = uint32(d.Int()), uint32(d.Int())
	r.eph.bits = uint8(d.Int())
	if err := d.Err(); err != nil {
		return path, acl, r, err
	}
	if d.Remaining() != 0 || kind < 0 || kind > int32(KindTTL) || !ValidPath(path) ||
		r.kids.bits > maxSetBits || r.eph.bits > maxSetBits {
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
// the stream, and builds a new tree from it, indexes included. A version 2
// stream has each node's record after its parent's, as WriteTo writes it;
// a version 1 stream's records may come in any order (that layout wrote
// them in its map's). A truncated or corrupt stream gives an error
// wrapping ErrBadSnapshot (or the reader's error) and no tree.
func Restore(r io.Reader) (*Tree, error) {
	hdr := make([]byte, len(snapshotMagic)+1+8)
	if _, err := io.ReadFull(r, hdr); err != nil {
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
	fr := wire.NewFrameReaderSize(r, maxSnapshotRecord, 256<<10)
	var err error
	if version == 1 {
		err = t.restoreVersion1(fr, count)
	} else {
		err = t.restoreRecords(fr, count)
		if err == nil {
			err = t.readKids(fr)
		}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// restored is what the restore of one record tells its caller about the
// node, by value: a record kept past restoreRecord would be allocated for
// each of a million nodes.
type restored struct {
	path    string
	id      nodeID
	seq     uint32 // its place among its parent's children
	hasKids bool
}

// restoreRecord makes the node of a snapshot's next record and indexes it.
func (t *Tree) restoreRecord(fr *wire.FrameReader, i uint64) (restored, error) {
	frame, err := fr.Next()
	if err != nil {
		return restored{}, fmt.Errorf("%w: node %d: %w", ErrBadSnapshot, i, err)
	}
	path, acl, rec, err := decodeRecord(frame)
	if err != nil {
		return restored{}, fmt.Errorf("%w: node %d: %w", ErrBadSnapshot, i, err)
	}
	id, n := t.restoredNode(&rec)
	n.acl = t.acls.ref(acl)
	t.count++
	t.restoreIndex(path, &rec, n)
	t.maxCzxid = max(t.maxCzxid, n.czxid)
	t.dataSize += int64(len(path) + int(n.dataLen))
	return restored{path: path, id: id, seq: rec.seq, hasKids: rec.hasKids()}, nil
}

// restoreRecords reads a version 2 snapshot's records, which come parents
// first (each node after its parent), and puts each node in its parent's
// set at the place its record holds, so that no index of paths is needed:
// the parent is one of the ancestors of the record before, kept on a
// stack, or else found from the root.
func (t *Tree) restoreRecords(fr *wire.FrameReader, count uint64) error {
	type ancestor struct {
		path string
		id   nodeID
	}
	var stack []ancestor
	for i := range count {
		r, err := t.restoreRecord(fr, i)
		if err != nil {
			return err
		}
		path, id := r.path, r.id
		if path == "/" {
			if t.root != 0 {
				return fmt.Errorf("%w: duplicate node /", ErrBadSnapshot)
			}
			t.root = id
			stack = append(stack[:0], ancestor{path, id})
			continue
		}
		parentPath := parentOf(path)
		for len(stack) > 0 && stack[len(stack)-1].path != parentPath {
			stack = stack[:len(stack)-1]
		}
		var parent *node
		if len(stack) > 0 {
			parent = t.nodes.at(stack[len(stack)-1].id)
		} else if parent = t.find(parentPath); parent == nil {
			return fmt.Errorf("%w: %s has no parent before it", ErrBadSnapshot, path)
		}
		if !t.parentKids(parent).set.restoreMember(baseName(path), id, r.seq) {
			return fmt.Errorf("%w: duplicate node %s", ErrBadSnapshot, path)
		}
		if r.hasKids {
			stack = append(stack, ancestor{path, id})
		}
	}
	if t.root == 0 {
		return fmt.Errorf("%w: no root", ErrBadSnapshot)
	}
	return nil
}

// restoreVersion1 reads a version 1 snapshot, whose records came in any
// order, each with its place among its parent's children, and links them
// once all are read.
func (t *Tree) restoreVersion1(fr *wire.FrameReader, count uint64) error {
	// byPath finds each restored node's parent; it is dropped once the
	// tree is linked.
	byPath := make(map[string]nodeID, min(count, 1<<20))
	links := make([]link, 0, min(count, 1<<20))
	for i := range count {
		r, err := t.restoreRecord(fr, i)
		if err != nil {
			return err
		}
		path, id := r.path, r.id
		byPath[path] = id
		if len(byPath) != t.count {
			return fmt.Errorf("%w: duplicate node %s", ErrBadSnapshot, path)
		}
		if path != "/" {
			links = append(links, link{path, id, r.seq})
		}
	}
	if t.root = byPath["/"]; t.root == 0 {
		return fmt.Errorf("%w: no root", ErrBadSnapshot)
	}
	if _, err := fr.Next(); err != io.EOF {
		return fmt.Errorf("%w: data after the %d nodes the header counts", ErrBadSnapshot, count)
	}
	return t.relink(byPath, links)
}

// readKids reads the child lists after a version 2 snapshot's records, to
// the end of the stream: each child is a node the records put under its
// parent, listed once, and takes the place listed; there must be as many
// names as nodes other than the root.
func (t *Tree) readKids(fr *wire.FrameReader) error {
	linked := 0
	listed := make([]uint64, (t.nodes.next+63)/64) // by node id
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
		parent := t.find(parentPath)
		n := d.VectorLen(8)
		if d.Err() != nil || parent == nil {
			return fmt.Errorf("%w: children of %q: no such node (%v)", ErrBadSnapshot, parentPath, d.Err())
		}
		k := t.kidsOf(parent)
		for range n {
			name, seq := d.StringBytes(), uint32(d.Int())
			i, ok := -1, false
			if d.Err() == nil && k != nil {
				i, ok = k.set.lookup(unsafe.String(unsafe.SliceData(name), len(name)))
			}
			if !ok || listed[k.set.slots[i].e/64]&(1<<(k.set.slots[i].e%64)) != 0 {
				return fmt.Errorf("%w: child %q of %q: not a node, listed twice, or cut short (%v)",
					ErrBadSnapshot, name, parentPath, d.Err())
			}
			sl := &k.set.slots[i]
			listed[sl.e/64] |= 1 << (sl.e % 64)
			sl.seq = seq
		}
		if d.Remaining() != 0 {
			return fmt.Errorf("%w: children of %q: trailing bytes", ErrBadSnapshot, parentPath)
		}
		linked += n
	}
	if linked != t.count-1 {
		return fmt.Errorf("%w: %d children listed for %d nodes", ErrBadSnapshot, linked, t.count-1)
	}
	return nil
}

// restoredNode makes the node a record describes, with kids if it ever had
// a child.
func (t *Tree) restoredNode(rec *record) (nodeID, *node) {
	id, n := t.nodes.alloc()
	*n = rec.n
	t.setNodeData(id, n, rec.data)
	if rec.hasKids() {
		n.kids = t.kidsTab.add(&kids{
			set:   javaSet[nodeID]{init: childrenInitBits, next: rec.kids.next, bits: rec.kids.bits},
			pzxid: rec.pzxid, creates: rec.creates,
		})
	}
	return id, n
}

// link is a restored node to put in its parent's child set, at the place
// it holds (seq).
type link struct {
	path string
	id   nodeID
	seq  uint32
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
func (t *Tree) relink(byPath map[string]nodeID, links []link) error {
	var parent *node
	parentPath := ""
	for _, l := range links {
		// Consecutive children of one parent share one lookup.
		if p := parentOf(l.path); parent == nil || p != parentPath {
			id := byPath[p]
			if id == 0 {
				return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, l.path)
			}
			parent, parentPath = t.nodes.at(id), p
		}
		t.parentKids(parent).set.restoreMember(baseName(l.path), l.id, l.seq) // a node once: duplicates were refused
	}
	return nil
}

// Digest returns a hash of the whole tree's content that does not depend on
// map order: equal trees have equal digests on every replica. It leaves out
// /zookeeper/config, which each member sets for itself (SetConfig), as
// ZooKeeper's digest leaves out its /zookeeper nodes.
func (t *Tree) Digest() uint64 {
	var d digester
	t.eachRecord(func(path []byte, r *record) { d.add(path, t.acls.get(r.n.acl), r) })
	return d.sum
}

// digester sums the hashes of node records, as Digest does.
type digester struct {
	sum uint64
	buf []byte
}

func (d *digester) add(path []byte, acl []wire.ACL, r *record) {
	if string(path) == ConfigPath {
		return
	}
	d.buf = appendRecord(d.buf[:0], path, acl, r)
	d.sum += fnv64a(d.buf)
}

// fnv64a is FNV-1a, 64 bits, as hash/fnv's New64a sums it, without the
// allocation of one per node.
func fnv64a(b []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return h
}
