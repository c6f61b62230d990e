package walfs

import (
	"io"
	"sync"
)

// windowSize is how much of a segment a window holds. The cap on the
// reads it serves keeps a raft-wal read of one entry (64 KiB) a copy from
// memory for the next several thousand small entries.
const (
	windowSize = 512 << 10
	windowRead = windowSize / 4 // longer reads go to the file
)

// window serves a segment's reads from the last stretches of windowSize
// bytes read from it, two of them: a sealed segment's reader reads each
// entry's place in the index at the file's end, then the entry itself.
// raft-wal reads at least 64 KiB from the file for each entry it is asked
// for (its segment.Reader.readFrame), and Raft asks for the entries it
// applies after a restart one at a time: without the window each entry of
// a hundred bytes cost a 64 KiB pread, about 11.5 µs here, half a second
// for the 50k entries written since the latest snapshot.
//
// A write to the file drops the window (wrote), after the write and so
// before raft-wal makes what it wrote readable; a stretch read across a
// write is not kept (gen), so no read is served bytes older than a write
// that came before it.
type window struct {
	mu    sync.Mutex
	spans [2]span // spans[0] the one used last
	gen   uint64  // writes to the file
}

// span is the file's bytes from off on; with eof, all of them to its end.
type span struct {
	buf []byte
	off int64
	eof bool
}

// read reads len(p) bytes at off from the span, as the file's ReadAt
// would, if the span holds them or holds the file's end.
func (s *span) read(p []byte, off int64) (n int, err error, ok bool) {
	end := s.off + int64(len(s.buf))
	switch {
	case s.buf == nil || off < s.off:
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

// readAt reads len(p) bytes at off from r, the file, as r.ReadAt does.
func (w *window) readAt(r io.ReaderAt, p []byte, off int64) (int, error) {
	if len(p) > windowRead || off < 0 {
		return r.ReadAt(p, off)
	}
	w.mu.Lock()
	for i := range w.spans {
		if n, err, ok := w.spans[i].read(p, off); ok {
			w.spans[0], w.spans[i] = w.spans[i], w.spans[0]
			w.mu.Unlock()
			return n, err
		}
	}
	gen := w.gen
	w.mu.Unlock()
	buf := make([]byte, windowSize)
	n, err := r.ReadAt(buf, off)
	eof := err == io.EOF
	if err != nil && !eof {
		return r.ReadAt(p, off) // the file's own answer to p
	}
	s := span{buf[:n], off, eof}
	w.mu.Lock()
	if w.gen == gen {
		w.spans[1], w.spans[0] = w.spans[0], s
	}
	w.mu.Unlock()
	n, err, _ = s.read(p, off)
	return n, err
}

// wrote drops the window; it is called once each write to the file has
// returned.
func (w *window) wrote() {
	w.mu.Lock()
	w.gen++
	w.spans = [2]span{}
	w.mu.Unlock()
}

// readerFile is a sealed segment read through a window; nothing writes
// to it any more.
type readerFile struct {
	file interface {
		io.ReaderAt
		io.Closer
	}
	w window
}

func (f *readerFile) ReadAt(p []byte, off int64) (int, error) { return f.w.readAt(f.file, p, off) }

func (f *readerFile) Close() error { return f.file.Close() }
