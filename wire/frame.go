package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// Record is any jute record: it appends its encoding and decodes itself.
type Record interface {
	Append(dst []byte) []byte
	Decode(src []byte) (int, error)
}

// StartFrame reserves room for a frame's 4-byte length prefix at the end of
// dst and returns the extended slice and the prefix's offset, to be passed to
// EndFrame once the frame's payload has been appended.
func StartFrame(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// EndFrame writes the length of the payload appended since StartFrame into
// the reserved prefix at offset start.
func EndFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// FrameLengthError reports a frame whose length prefix is negative or above
// the reader's limit. errors.Is(err, ErrFrameTooLarge) is true for it. The
// raw Length lets a server recognise a four-letter word, whose four ASCII
// bytes read as a large length.
type FrameLengthError struct {
	Length int32
	Max    int
}

func (e *FrameLengthError) Error() string {
	return fmt.Sprintf("wire: frame length %d out of range [0, %d]", e.Length, e.Max)
}

// Is makes errors.Is(err, ErrFrameTooLarge) hold.
func (e *FrameLengthError) Is(target error) bool { return target == ErrFrameTooLarge }

// FrameReader reads length-prefixed frames from a stream through its own
// buffer. The limit is checked on the length prefix before any payload is
// read. The buffer grows with the bytes that arrive, never by more than
// doubling, rather than to the length a prefix announces: a peer that
// announces a large frame and sends it slowly, or never, holds no more
// memory than it has sent. Between frames a grown buffer is given up, so a
// connection that once sent a large frame does not keep its room.
type FrameReader struct {
	r          io.Reader
	max        int
	buf        []byte // buf[start:end] holds bytes read but not yet returned; nil while idle (ReleaseIdle)
	start, end int
	size, kept int        // a new buffer's size, and the largest kept between frames
	idle       IdleReader // see ReleaseIdle
}

// IdleReader reads from a stream into a buffer it takes only once bytes
// have arrived: it waits for them holding none, then calls get for the
// buffer to read into (and put with it, if it found nothing after all,
// before waiting again). It returns the buffer and how many bytes it read
// (at least one, or an error; io.EOF at the stream's end).
type IdleReader interface {
	ReadIdle(get func() []byte, put func([]byte)) ([]byte, int, error)
}

// frameBuffers are the buffers of readers that hold none while idle: a
// server with ten thousand quiet sessions keeps a buffer only for those
// whose requests are being read.
var frameBuffers = sync.Pool{New: func() any { return new([minFrameBuffer]byte) }}

func getFrameBuffer() []byte { return frameBuffers.Get().(*[minFrameBuffer]byte)[:] }

func putFrameBuffer(b []byte) {
	if cap(b) == minFrameBuffer {
		frameBuffers.Put((*[minFrameBuffer]byte)(b[:minFrameBuffer]))
	}
}

// ReleaseIdle makes fr give up its buffer whenever it has returned every
// byte it read, and read the next bytes through idle, which takes a buffer
// only once they have arrived. The buffer goes to other readers meanwhile,
// so a frame Next returns must no longer be used once Next is called
// again, which FrameReader's callers otherwise need only for the frame's
// bytes to stay put.
func (fr *FrameReader) ReleaseIdle(idle IdleReader) {
	fr.idle = idle
	if fr.start == fr.end {
		fr.release()
	}
}

// release gives the buffer back, having nothing unread in it.
func (fr *FrameReader) release() {
	if fr.buf != nil {
		putFrameBuffer(fr.buf)
	}
	fr.buf, fr.start, fr.end = nil, 0, 0
}

// readIdle waits for bytes holding no buffer and reads them (ReleaseIdle).
func (fr *FrameReader) readIdle() error {
	fr.release()
	buf, n, err := fr.idle.ReadIdle(getFrameBuffer, putFrameBuffer)
	if n > 0 {
		fr.buf, fr.end = buf, n
		return nil
	}
	if buf != nil {
		putFrameBuffer(buf)
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

const (
	// minFrameBuffer is a FrameReader's buffer while it holds no frame
	// larger than that: room for many small requests per read.
	minFrameBuffer = 4 << 10
	// keptFrameBuffer is the largest buffer kept between frames.
	keptFrameBuffer = 16 << 10
)

// NewFrameReader returns a FrameReader that refuses frames longer than max bytes.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: r, max: max, buf: make([]byte, minFrameBuffer), size: minFrameBuffer, kept: keptFrameBuffer}
}

// NewFrameReaderSize returns a FrameReader that reads into a buffer of
// size bytes and keeps it: for a long stream of small frames (a
// snapshot's), read in few large reads straight from r, with no
// buffered reader in between to copy them once more.
func NewFrameReaderSize(r io.Reader, max, size int) *FrameReader {
	return &FrameReader{r: r, max: max, buf: make([]byte, size), size: size, kept: size}
}

// NewIdleFrameReader returns a FrameReader that reads through idle from the
// start (ReleaseIdle), holding no buffer until the first bytes come, and
// through r for the rest of a frame they begin.
func NewIdleFrameReader(r io.Reader, idle IdleReader, max int) *FrameReader {
	return &FrameReader{r: r, max: max, idle: idle, size: minFrameBuffer, kept: keptFrameBuffer}
}

// Buffered reports how many bytes have been read from the stream but not yet
// returned as frames. A server uses it to flush replies only when no further
// request is already waiting.
func (fr *FrameReader) Buffered() int { return fr.end - fr.start }

// maxEmptyReads is how many reads in a row may return nothing and no
// error before fill gives up on the reader, as bufio's does.
const maxEmptyReads = 100

// fill makes at least n bytes available in buf[start:end], reading as
// much as the buffer has room for.
func (fr *FrameReader) fill(n int) error {
	for empty := 0; fr.end-fr.start < n; {
		if fr.end == len(fr.buf) {
			fr.makeRoom(n)
		}
		m, err := fr.r.Read(fr.buf[fr.end:])
		fr.end += m
		switch {
		case m > 0 || err != nil:
			empty = 0
		case empty+1 == maxEmptyReads:
			return io.ErrNoProgress
		default:
			empty++
		}
		if err != nil {
			if fr.end-fr.start >= n {
				return nil
			}
			if err == io.EOF && fr.end > fr.start {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// makeRoom makes room after buf[end] for more of the n bytes wanted from
// start: it moves the unread bytes to the front of the buffer, or, if they
// fill it, grows it to twice its size (at most to n).
func (fr *FrameReader) makeRoom(n int) {
	if fr.start > 0 {
		fr.end = copy(fr.buf, fr.buf[fr.start:fr.end])
		fr.start = 0
		return
	}
	nb := make([]byte, min(n, 2*len(fr.buf)))
	fr.end = copy(nb, fr.buf[:fr.end])
	fr.buf = nb
}

// Next returns the next frame's payload. The slice is only valid until the
// next call. At a clean end of stream between frames it returns io.EOF; a
// stream that ends inside a frame gives io.ErrUnexpectedEOF; a length prefix
// out of range gives a *FrameLengthError and leaves the stream unusable.
func (fr *FrameReader) Next() ([]byte, error) {
	switch {
	case fr.start < fr.end:
	case fr.idle != nil:
		if err := fr.readIdle(); err != nil {
			return nil, err
		}
	case len(fr.buf) > fr.kept:
		// The last frame returned may still be in use: leave it its array.
		fr.buf, fr.start, fr.end = make([]byte, fr.size), 0, 0
	}
	if err := fr.fill(4); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(fr.buf[fr.start:]))
	if n < 0 || int(n) > fr.max {
		return nil, &FrameLengthError{Length: n, Max: fr.max}
	}
	if err := fr.fill(4 + int(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	p := fr.buf[fr.start+4 : fr.start+4+int(n)]
	fr.start += 4 + int(n)
	if fr.start == fr.end {
		fr.start, fr.end = 0, 0
	}
	return p, nil
}
