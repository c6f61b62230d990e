package tree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
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

// Snapshot is a point-in-time copy of a tree, cheap to take (node records are
// copied, data slices shared, since they are never modified in place) and
// written out later by WriteTo, while the tree goes on changing.
type Snapshot struct {
	records []record
	// kids holds each parent's child names with their places among its
	// children, as captured: written after the records.
	kids map[string]*kidSeqs
}

// kidSeqs is a parent's children, each name with its insertion sequence.
type kidSeqs struct {
	names []string
	seqs  []uint32
}

// record is one node as a snapshot holds it. Besides the node, it keeps the
// node's places in ZooKeeper's iteration orders, so that a restored tree
// lists children and ephemerals as the original did.
type record struct {
	path   string
	n      node   // children empty: restore rebuilds the links
	seq    uint32 // version 1: the node's place among its parent's children
	kids   setState
	eph    setState // an ephemeral's session set, and ephSeq its place in it
	ephSeq uint32
}

// setState is what a javaSet needs besides its members.
type setState struct {
	next uint32
	bits uint8
}

// Snapshot captures the tree's current state. It copies each node and,
// walking each parent's child set in its own memory, each child's place
// there, rather than looking every node's parent up, which costs a cache
// miss or two per node: a million nodes took a second, with the tree's
// writers waiting, and take a third of that so.
func (t *Tree) Snapshot() *Snapshot {
	s := &Snapshot{records: make([]record, 0, len(t.nodes)), kids: make(map[string]*kidSeqs)}
	for p, n := range t.nodes {
		r := record{path: p, n: n.withoutChildren(), kids: setState{n.children.next, n.children.bits}}
		if n.kind == KindEphemeral {
			r.eph, r.ephSeq = t.ephemeralPlace(p, n)
		}
		s.records = append(s.records, r)
		if k := n.children.len(); k > 0 {
			ks := &kidSeqs{names: make([]string, 0, k), seqs: make([]uint32, 0, k)}
			for name, m := range n.children.seq {
				ks.names = append(ks.names, name)
				ks.seqs = append(ks.seqs, m.seq)
			}
			s.kids[p] = ks
		}
	}
	return s
}

// record returns a node's snapshot record, its places looked up (Digest's).
func (t *Tree) record(p string, n *node) record {
	r := record{path: p, n: n.withoutChildren(), kids: setState{n.children.next, n.children.bits}}
	if p != "/" {
		r.seq = t.nodes[parentOf(p)].children.seqOf(baseName(p))
	}
	if n.kind == KindEphemeral {
		r.eph, r.ephSeq = t.ephemeralPlace(p, n)
	}
	return r
}

// ephemeralPlace returns an ephemeral's session set state and its place in it.
func (t *Tree) ephemeralPlace(p string, n *node) (setState, uint32) {
	set := t.ephemerals[n.owner]
	return setState{set.next, set.bits}, set.seqOf(p)
}

// Len returns the number of nodes in the snapshot.
func (s *Snapshot) Len() int { return len(s.records) }

// WriteTo writes the snapshot: a header, the node count, one
// length-prefixed record per node, then for each parent one or more
// length-prefixed lists of its children's names and places (kidsFrame).
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw}
	hdr := append([]byte(snapshotMagic), snapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(len(s.records)))
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
	for i := range s.records {
		if err := write(func(b []byte) []byte { return appendRecord(b, &s.records[i]) }); err != nil {
			return cw.n, err
		}
	}
	for parent, ks := range s.kids {
		for from := 0; from < len(ks.names); from += kidsPerFrame {
			to := min(from+kidsPerFrame, len(ks.names))
			err := write(func(b []byte) []byte {
				b = wire.AppendString(b, parent)
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

// kidsPerFrame bounds the children one frame of a version 2 snapshot lists,
// so that a parent of millions stays within maxSnapshotRecord.
const kidsPerFrame = 1 << 16

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

// openACLEncoded is the open ACL list as a record holds it.
var openACLEncoded = wire.AppendACLs(nil, wire.OpenACLUnsafe)

func decodeRecord(src []byte) (record, error) {
	d := wire.NewDecoder(src)
	var r record
	n := &r.n
	r.path = d.String()
	n.data = d.Buffer()
	if d.Prefixed(openACLEncoded) {
		n.acl = wire.OpenACLUnsafe // most nodes': shared, not decoded again
	} else {
		n.acl = d.ACLs()
	}
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
	version := hdr[len(snapshotMagic)]
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic || version < 1 || version > snapshotVersion {
		return nil, fmt.Errorf("%w: unknown header", ErrBadSnapshot)
	}
	count := binary.BigEndian.Uint64(hdr[len(snapshotMagic)+1:])
	t := &Tree{
		nodes:      make(map[string]*node, min(count, 1<<20)),
		ephemerals: make(map[int64]*javaSet),
		reapable:   make(map[string]struct{}),
	}
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
		if version == 1 && rec.path != "/" {
			links = append(links, link{rec.path, rec.seq})
		}
	}
	if t.nodes["/"] == nil {
		return nil, fmt.Errorf("%w: no root", ErrBadSnapshot)
	}
	var err error
	if version == 1 {
		if _, err := fr.Next(); err != io.EOF {
			return nil, fmt.Errorf("%w: data after the %d nodes the header counts", ErrBadSnapshot, count)
		}
		err = t.relink(links)
	} else {
		err = t.readKids(fr)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// readKids reads the child lists after a version 2 snapshot's records, to
// the end of the stream, and puts each child in its parent's set at its
// recorded place. Every parent must be a node of the snapshot, a name is
// listed once under it, and there must be as many names as nodes other
// than the root. Each name is not looked up as a node: that lookup, a
// cache miss per node, cost half the restore of a million, and a stream
// that passes the count with a bogus name must also have lost a node's
// name, which the file's or the transfer's checksum stands against.
func (t *Tree) readKids(fr *wire.FrameReader) error {
	linked := 0
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
		parent := t.nodes[parentPath]
		n := d.VectorLen(8)
		if d.Err() != nil || parent == nil {
			return fmt.Errorf("%w: children of %q: no such node (%v)", ErrBadSnapshot, parentPath, d.Err())
		}
		for range n {
			name, seq := d.String(), uint32(d.Int())
			if d.Err() != nil || name == "" || strings.IndexByte(name, '/') >= 0 || !parent.children.restoreMember(name, seq) {
				return fmt.Errorf("%w: child %q of %q: not a name, listed twice, or cut short (%v)",
					ErrBadSnapshot, name, parentPath, d.Err())
			}
		}
		if d.Remaining() != 0 {
			return fmt.Errorf("%w: children of %q: trailing bytes", ErrBadSnapshot, parentPath)
		}
		linked += n
	}
	if linked == len(t.nodes)-1 {
		return nil
	}
	for p := range t.nodes {
		if parent := t.nodes[parentOf(p)]; p != "/" && (parent == nil || !parent.children.has(baseName(p))) {
			return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, p)
		}
	}
	return fmt.Errorf("%w: %d children listed for %d nodes", ErrBadSnapshot, linked, len(t.nodes)-1)
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
		parent.children.restoreMember(baseName(l.path), l.seq) // a node once: duplicates were refused
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
