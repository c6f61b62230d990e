package tree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"

	"github.com/zkraft/zkraft/wire"
)

// ErrBadSnapshot means a snapshot stream is not one this package wrote, or is
// truncated or corrupt.
var ErrBadSnapshot = errors.New("tree: bad snapshot")

const (
	snapshotMagic   = "ZKTREE"
	snapshotVersion = 1
	// maxSnapshotRecord bounds one node record: a path, data up to a large
	// jute.maxbuffer, an ACL list and the stat.
	maxSnapshotRecord = 256 << 20
)

// Snapshot is a point-in-time copy of a tree, cheap to take (node records are
// copied, data slices shared, since they are never modified in place) and
// written out later by WriteTo, while the tree goes on changing.
type Snapshot struct {
	records []record
}

// record is one node as a snapshot holds it. Besides the node, it keeps the
// node's places in ZooKeeper's iteration orders, so that a restored tree
// lists children and ephemerals as the original did.
type record struct {
	path   string
	n      node   // children empty: restore rebuilds the links
	seq    uint32 // the node's place among its parent's children
	kids   setState
	eph    setState // an ephemeral's session set, and ephSeq its place in it
	ephSeq uint32
}

// setState is what a javaSet needs besides its members.
type setState struct {
	next uint32
	bits uint8
}

// Snapshot captures the tree's current state.
func (t *Tree) Snapshot() *Snapshot {
	s := &Snapshot{records: make([]record, 0, len(t.nodes))}
	for p, n := range t.nodes {
		s.records = append(s.records, t.record(p, n))
	}
	return s
}

func (t *Tree) record(p string, n *node) record {
	r := record{path: p, n: n.withoutChildren(), kids: setState{n.children.next, n.children.bits}}
	if p != "/" {
		r.seq = t.nodes[parentOf(p)].children.seqOf(baseName(p))
	}
	if n.kind == KindEphemeral {
		set := t.ephemerals[n.owner]
		r.eph, r.ephSeq = setState{set.next, set.bits}, set.seqOf(p)
	}
	return r
}

// Len returns the number of nodes in the snapshot.
func (s *Snapshot) Len() int { return len(s.records) }

// WriteTo writes the snapshot: a header, the node count, then one
// length-prefixed record per node.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw}
	hdr := append([]byte(snapshotMagic), snapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(len(s.records)))
	if _, err := cw.Write(hdr); err != nil {
		return cw.n, err
	}
	var buf []byte
	for i := range s.records {
		var start int
		buf, start = wire.StartFrame(buf[:0])
		buf = appendRecord(buf, &s.records[i])
		buf = wire.EndFrame(buf, start)
		if _, err := cw.Write(buf); err != nil {
			return cw.n, err
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

func appendRecord(b []byte, r *record) []byte {
	n := &r.n
	b = wire.AppendString(b, r.path)
	b = wire.AppendBuffer(b, n.data)
	b = wire.AppendACLs(b, n.acl)
	for _, v := range []int64{n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime, n.ttl, n.owner} {
		b = wire.AppendLong(b, v)
	}
	for _, v := range []int32{n.version, n.childCreates, n.aversion} {
		b = wire.AppendInt(b, v)
	}
	b = wire.AppendInt(b, int32(n.kind))
	for _, v := range []uint32{r.seq, r.kids.next, uint32(r.kids.bits), r.ephSeq, r.eph.next, uint32(r.eph.bits)} {
		b = wire.AppendInt(b, int32(v))
	}
	return b
}

func decodeRecord(src []byte) (record, error) {
	d := wire.NewDecoder(src)
	var r record
	n := &r.n
	r.path = d.String()
	n.data = d.Buffer()
	n.acl = d.ACLs()
	for _, v := range []*int64{&n.czxid, &n.mzxid, &n.pzxid, &n.ctime, &n.mtime, &n.ttl, &n.owner} {
		*v = d.Long()
	}
	for _, v := range []*int32{&n.version, &n.childCreates, &n.aversion} {
		*v = d.Int()
	}
	kind := d.Int()
	n.kind = Kind(kind)
	r.seq, r.kids.next = uint32(d.Int()), uint32(d.Int())
	r.kids.bits = uint8(d.Int())
	r.ephSeq, r.eph.next = uint32(d.Int()), uint32(d.Int())
	r.eph.bits = uint8(d.Int())
	if err := d.Err(); err != nil {
		return r, err
	}
	if d.Remaining() != 0 || kind < 0 || kind > int32(KindTTL) || !ValidPath(r.path) {
		return r, ErrBadSnapshot
	}
	if len(n.acl) == 1 && n.acl[0] == wire.OpenACLUnsafe[0] {
		n.acl = wire.OpenACLUnsafe
	}
	return r, nil
}

// Restore reads a snapshot written by WriteTo, which must be the rest of
// the stream, and builds a new tree from it, indexes included. A truncated or corrupt stream gives an error wrapping
// ErrBadSnapshot (or the reader's error) and no tree.
func Restore(r io.Reader) (*Tree, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	hdr := make([]byte, len(snapshotMagic)+1+8)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic || hdr[len(snapshotMagic)] != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown header", ErrBadSnapshot)
	}
	count := binary.BigEndian.Uint64(hdr[len(snapshotMagic)+1:])
	t := &Tree{
		nodes:      make(map[string]*node, min(count, 1<<20)),
		ephemerals: make(map[int64]*javaSet),
		reapable:   make(map[string]struct{}),
	}
	fr := wire.NewFrameReader(br, maxSnapshotRecord)
	links := make([]link, 0, min(count, 1<<20))
	for i := uint64(0); i < count; i++ {
		frame, err := fr.Next()
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrBadSnapshot, i, err)
		}
		rec, err := decodeRecord(frame)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrBadSnapshot, i, err)
		}
		n := rec.n
		n.children = javaSet{init: childrenInitBits, next: rec.kids.next, bits: rec.kids.bits}
		before := len(t.nodes)
		t.nodes[rec.path] = &n
		if len(t.nodes) == before {
			return nil, fmt.Errorf("%w: duplicate node %s", ErrBadSnapshot, rec.path)
		}
		t.restoreIndex(&rec, &n)
		t.dataSize += int64(len(rec.path) + len(n.data))
		if rec.path != "/" {
			links = append(links, link{rec.path, rec.seq})
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the %d nodes the header counts", ErrBadSnapshot, count)
	}
	if err := t.relink(links); err != nil {
		return nil, err
	}
	return t, nil
}

// link is a restored node to put in its parent's child set, at its
// recorded place.
type link struct {
	path string
	seq  uint32
}

// restoreIndex indexes a restored node, an ephemeral at its recorded place
// in its session's set.
func (t *Tree) restoreIndex(rec *record, n *node) {
	if n.kind != KindEphemeral {
		t.index(rec.path, n)
		return
	}
	set := t.sessionSet(n.owner)
	set.put(rec.path, rec.ephSeq)
	set.next, set.bits = rec.eph.next, rec.eph.bits
}

// relink rebuilds every parent's child set after a restore, each child at
// its recorded place. The sets' table sizes came with the nodes, so the
// names go in as they are (restoreMember), without the resizing an add
// does.
func (t *Tree) relink(links []link) error {
	if t.nodes["/"] == nil {
		return fmt.Errorf("%w: no root", ErrBadSnapshot)
	}
	var parent *node
	parentPath := ""
	for _, l := range links {
		// Consecutive children of one parent share one lookup.
		if p := parentOf(l.path); parent == nil || p != parentPath {
			parent, parentPath = t.nodes[p], p
			if parent == nil {
				return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, l.path)
			}
		}
		parent.children.restoreMember(baseName(l.path), l.seq)
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
	for p, n := range t.nodes {
		if p == ConfigPath {
			continue
		}
		r := t.record(p, n)
		buf = appendRecord(buf[:0], &r)
		h := fnv.New64a()
		h.Write(buf)
		sum += h.Sum64()
	}
	return sum
}
