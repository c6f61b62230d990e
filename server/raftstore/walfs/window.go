package walfs

import (
	"io"
	"sync"
)

const (
	// windowSize is how much of a segment one stretch of the cache holds:
	// a raft-wal read of one entry (64 KiB) is then a copy from memory for
	// the next several thousand small entries.
	windowSize = 512 << 10
	// windowRead is the longest read the cache serves; longer ones go to
	// the file.
	windowRead = windowSize / 4
	// cacheSpans is how many stretches an FS keeps, over all its files:
	// three readers at once (the state machine replaying, and a leader's
	// two followers catching up), each reading an entry's place in a
	// sealed segment's index and then the entry. At most 3 MiB.
	cacheSpans = 6
)

// cache serves the reads of an FS's segment files from the stretches of
// windowSize bytes read from them last. raft-wal reads at least 64 KiB
// from the file for each entry it is asked for (its
// segment.Reader.readFrame), and Raft asks for the entries it applies
// after a restart, or sends a follower behind, one at a time: without the
// cache each entry of a hundred bytes cost a 64 KiB pread, about 11.5 µs
// here, 2.7 to 3.2 s for the 180k entries a million-znode server killed
// before its snapshot finished replays (1.0 to 1.1 s with it).
//
// A write to a file drops its stretches (window.drop), after the write
// and so before raft-wal makes what it wrote readable; a stretch read
// across a write is not kept (window.gen), so no read is served bytes
// older than a write that came before it.
type cache struct {
	mu    sync.Mutex
	spans [cacheSpans]span // the most recently used first; a nil file is none
	free  [][]byte         // buffers of stretches dropped, for the next
}

// span is a file's bytes from off on; with eof, all of them to its end.
type span struct {
	file *window
	buf  []byte
	off  int64
	eof  bool
}

// read reads len(p) bytes at off from the span, as the file's ReadAt
// would, if the span holds them or holds the file's end.
func (s *span) read(p []byte, off int64) (n int, err error, ok bool) {
	end := s.off + int64(len(s.buf))
	switch {
	case s.file == nil || off < s.off:
		return 0, nil, false
	case off+int64(len(p)) <= end:
		return copy(p, s.buf[off-s.off:]), nil, true
	case !s.eof:
		return 0, nil, false
	case off >= end:
		return 0, io.EOF, true
	}
	return copy(p, s.buf[off-s.off:]), io.EOF, true
}

// window is one file's place in its FS's cache.
type window struct {
	c   *cache
	gen uint64 // writes to the file; guarded by c.mu
}

// readAt reads len(p) bytes at off from r, the file, as r.ReadAt does.
func (w *window) readAt(r io.ReaderAt, p []byte, off int64) (int, error) {
	if len(p) == 0 || len(p) > windowRead || off < 0 {
		return r.ReadAt(p, off)
	}
	c := w.c
	c.mu.Lock()
	for i := range c.spans {
		if c.spans[i].file != w {
			continue
		}
		if n, err, ok := c.spans[i].read(p, off); ok {
			s := c.spans[i]
			copy(c.spans[1:i+1], c.spans[:i])
			c.spans[0] = s
			c.mu.Unlock()
			return n, err
		}
	}
	gen := w.gen
	var buf []byte
	if k := len(c.free); k > 0 {
		buf, c.free = c.free[k-1], c.free[:k-1]
	}
	c.mu.Unlock()
	if buf == nil {
		buf = make([]byte, windowSize)
	}
	n, err := r.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		c.give(buf)
		return r.ReadAt(p, off) // the file's own answer to p
	}
	s := span{w, buf[:n], off, err == io.EOF}
	n, err, _ = s.read(p, off) // before s is shared, and can be dropped
	c.mu.Lock()
	if w.gen == gen {
		c.dropLocked(len(c.spans) - 1)
		copy(c.spans[1:], c.spans[:len(c.spans)-1])
		c.spans[0] = s
	} else {
		c.freeLocked(buf)
	}
	c.mu.Unlock()
	return n, err
}

// drop drops the file's stretches, and any being read meanwhile: it is
// called once each write to the file has returned, and as it is closed.
func (w *window) drop() {
	c := w.c
	c.mu.Lock()
	w.gen++
	for i := range c.spans {
		if c.spans[i].file == w {
			c.dropLocked(i)
		}
	}
	c.mu.Unlock()
}

// dropLocked empties spans[i], keeping its buffer for the next stretch.
func (c *cache) dropLocked(i int) {
	if c.spans[i].file != nil {
		c.freeLocked(c.spans[i].buf)
	}
	c.spans[i] = span{}
}

func (c *cache) give(buf []byte) {
	c.mu.Lock()
	c.freeLocked(buf)
	c.mu.Unlock()
}

// freeLocked keeps buf for the next stretch, two at most.
func (c *cache) freeLocked(buf []byte) {
	if len(c.free) < 2 {
		c.free = append(c.free, buf[:cap(buf)])
	}
}

// readerFile is a sealed segment read through the cache; nothing writes
// to it any more.
type readerFile struct {
	file interface {
		io.ReaderAt
		io.Closer
	}
	w window
}

func (f *readerFile) ReadAt(p []byte, off int64) (int, error) { return f.w.readAt(f.file, p, off) }

func (f *readerFile) Close() error {
	f.w.drop()
	return f.file.Close()
}
