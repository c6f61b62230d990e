package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
)

// Checking a bbolt file without bbolt.
//
// bbolt trusts its pages: a damaged one makes it panic, or read past the
// end of its mapping and fault, and raft-boltdb opens its file with the free
// page list kept in memory only, which bbolt rebuilds by walking every
// page and panicking, on a goroutine of its own, at the first it cannot
// account for. No recover reaches that goroutine. So before bbolt opens a
// file, checkBoltPages reads it as plain bytes and walks every page bbolt
// would (the newer of the two meta pages that check, the free list and the
// pages it lists, the root bucket, every branch, leaf and nested bucket),
// and refuses what bbolt would choke on: a page outside the file or past
// the meta's high-water mark, of the wrong kind, referenced twice (a free
// page among them), or whose elements run past it.

// bbolt's on-disk layout (go.etcd.io/bbolt/internal/common).
const (
	boltPageHeader  = 16
	boltElement     = 16
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltBranch      = 0x01
	boltLeaf        = 0x02
	boltMeta        = 0x04
	boltFreelist    = 0x10
	boltBucketLeaf  = 0x01
	boltNoFreelist  = ^uint64(0)
	boltInBucketLen = 16
)

// errBoltPage is a bbolt file that is damaged.
var errBoltPage = errors.New("damaged bbolt file")

// checkBoltPages checks the bbolt file at path (see above).
func checkBoltPages(path string) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w := boltWalk{buf: buf, seen: make(map[uint64]bool)}
	meta, err := w.meta()
	if err != nil {
		return err
	}
	w.pageSize, w.hwm = uint64(meta.pageSize), meta.pgid
	w.seen[0], w.seen[1] = true, true
	if meta.freelist != boltNoFreelist {
		if err := w.freelist(meta.freelist); err != nil {
			return err
		}
	}
	return w.bucket(meta.root, 0)
}

type boltMetaPage struct {
	pageSize             uint32
	root, freelist, pgid uint64
	txid                 uint64
}

type boltWalk struct {
	buf           []byte
	pageSize, hwm uint64
	seen          map[uint64]bool
}

// meta returns the newer meta page that checks.
func (w *boltWalk) meta() (boltMetaPage, error) {
	m0, ok0 := w.metaAt(0)
	sizes := []uint64{4096, 8192, 16384, 65536} // where the second may be, if the first does not say
	if ok0 {
		sizes = []uint64{uint64(m0.pageSize)}
	}
	var m1 boltMetaPage
	ok1 := false
	for _, size := range sizes {
		if m, ok := w.metaAt(size); ok && uint64(m.pageSize) == size {
			m1, ok1 = m, true
			break
		}
	}
	switch {
	case ok1 && (!ok0 || m1.txid > m0.txid):
		return m1, nil
	case ok0:
		return m0, nil
	}
	return boltMetaPage{}, fmt.Errorf("%w: no meta page checks", errBoltPage)
}

func (w *boltWalk) metaAt(off uint64) (boltMetaPage, bool) {
	if off+boltPageHeader+64 > uint64(len(w.buf)) {
		return boltMetaPage{}, false
	}
	b := w.buf[off+boltPageHeader:]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(b[:56])
	if le.Uint16(w.buf[off+8:]) != boltMeta || le.Uint32(b) != boltMagic || le.Uint32(b[4:]) != boltVersion || le.Uint64(b[56:]) != h.Sum64() {
		return boltMetaPage{}, false
	}
	m := boltMetaPage{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]), pgid: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}
	if m.pageSize < 512 || m.pageSize > 1<<20 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMetaPage{}, false
	}
	return m, true
}

// span returns page id's bytes, overflow pages included, once checked to
// be in the file, under the high-water mark and of kind want.
func (w *boltWalk) span(id uint64, want uint16) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("%w: page %d is out of bounds (high-water mark %d)", errBoltPage, id, w.hwm)
	}
	off := id * w.pageSize
	if off+boltPageHeader > uint64(len(w.buf)) {
		return nil, fmt.Errorf("%w: page %d is past the file's end", errBoltPage, id)
	}
	le := binary.LittleEndian
	p := w.buf[off:]
	overflow := uint64(le.Uint32(p[12:]))
	if le.Uint64(p) != id || le.Uint16(p[8:]) != want && !(want == boltBranch|boltLeaf && (le.Uint16(p[8:]) == boltBranch || le.Uint16(p[8:]) == boltLeaf)) {
		return nil, fmt.Errorf("%w: page %d is not a page of the kind it is referenced as", errBoltPage, id)
	}
	if id+overflow >= w.hwm || off+(overflow+1)*w.pageSize > uint64(len(w.buf)) {
		return nil, fmt.Errorf("%w: page %d runs past the file's end", errBoltPage, id)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return nil, fmt.Errorf("%w: page %d is referenced twice", errBoltPage, i)
		}
		w.seen[i] = true
	}
	return p[:(overflow+1)*w.pageSize], nil
}

// freelist checks the free list page id and the pages it lists: each
// under the high-water mark, and none reachable (bbolt would hand it out
// while it is in use). They are marked seen, so that a page both free and
// reachable is caught as referenced twice.
func (w *boltWalk) freelist(id uint64) error {
	p, err := w.span(id, boltFreelist)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	count, ids := uint64(le.Uint16(p[10:])), p[boltPageHeader:]
	if count == 0xFFFF { // the count overflows into the first element
		if len(ids) < 8 {
			return fmt.Errorf("%w: the free list is cut short", errBoltPage)
		}
		count, ids = le.Uint64(ids), ids[8:]
	}
	if count > uint64(len(ids)/8) {
		return fmt.Errorf("%w: the free list holds more pages than fit", errBoltPage)
	}
	for i := range count {
		free := le.Uint64(ids[8*i:])
		if free < 2 || free >= w.hwm || w.seen[free] {
			return fmt.Errorf("%w: the free list names page %d, which is not free", errBoltPage, free)
		}
		w.seen[free] = true
	}
	return nil
}

// bucket walks the bucket whose root page is root, or whose inline page
// is inline (root 0).
func (w *boltWalk) bucket(root uint64, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%w: buckets nested too deep", errBoltPage)
	}
	p, err := w.span(root, boltBranch|boltLeaf)
	if err != nil {
		return err
	}
	return w.node(p, depth, 0)
}

// node checks the branch or leaf page p and walks what it references.
func (w *boltWalk) node(p []byte, depth, level int) error {
	if level > 64 {
		return fmt.Errorf("%w: a tree too deep", errBoltPage)
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	if boltPageHeader+count*boltElement > len(p) {
		return fmt.Errorf("%w: page %d holds more elements than fit", errBoltPage, le.Uint64(p))
	}
	for i := range count {
		e := p[boltPageHeader+i*boltElement:]
		at := boltPageHeader + i*boltElement
		switch flags {
		case boltBranch:
			pos, ksize := int(le.Uint32(e)), int(le.Uint32(e[4:]))
			if at+pos+ksize > len(p) {
				return fmt.Errorf("%w: a key runs past page %d", errBoltPage, le.Uint64(p))
			}
			child, err := w.span(le.Uint64(e[8:]), boltBranch|boltLeaf)
			if err != nil {
				return err
			}
			if err := w.node(child, depth, level+1); err != nil {
				return err
			}
		case boltLeaf:
			eflags, pos, ksize, vsize := le.Uint32(e), int(le.Uint32(e[4:])), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
			if at+pos+ksize+vsize > len(p) {
				return fmt.Errorf("%w: a value runs past page %d", errBoltPage, le.Uint64(p))
			}
			if eflags&boltBucketLeaf == 0 {
				continue
			}
			v := p[at+pos+ksize : at+pos+ksize+vsize]
			if len(v) < boltInBucketLen {
				return fmt.Errorf("%w: a bucket's value is too short", errBoltPage)
			}
			if root := le.Uint64(v); root != 0 {
				if err := w.bucket(root, depth+1); err != nil {
					return err
				}
				continue
			}
			inline := v[boltInBucketLen:]
			if len(inline) < boltPageHeader || le.Uint16(inline[8:]) != boltLeaf {
				return fmt.Errorf("%w: an inline bucket is damaged", errBoltPage)
			}
			if err := w.node(inline, depth+1, 0); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: page %d is neither a branch nor a leaf", errBoltPage, le.Uint64(p))
		}
	}
	return nil
}
