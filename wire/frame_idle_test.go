package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// chunkedIdle is an IdleReader over a stream that arrives in the given
// chunks: each ReadIdle takes a buffer and reads at most one chunk (or
// what is left of it), as a socket read returns what has arrived.
type chunkedIdle struct {
	chunks [][]byte
	err    error // after the chunks; io.EOF if nil
	gets   int
	holds  *bool // set while the reader is idle: it must hold no buffer
	fr     *FrameReader
}

func (c *chunkedIdle) ReadIdle(get func() []byte, put func([]byte)) ([]byte, int, error) {
	if c.fr != nil && c.fr.buf != nil {
		*c.holds = true
	}
	if len(c.chunks) == 0 {
		if c.err != nil {
			return nil, 0, c.err
		}
		return nil, 0, io.EOF
	}
	buf := get()
	c.gets++
	n := copy(buf, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return buf, n, nil
}

// TestFrameReader_ReleaseIdle reads frames split every way over chunks
// that arrive one per read, and checks that the reader holds no buffer
// while it waits for the next one, and reads what a plain reader reads.
func TestFrameReader_ReleaseIdle(t *testing.T) {
	payloads := [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{7}, 70000), []byte("a"), []byte("last")}
	var stream []byte
	for _, p := range payloads {
		stream = append(stream, frameOf(p)...)
	}
	for _, idleFromStart := range []bool{false, true} { // ReleaseIdle, or NewIdleFrameReader
		for _, size := range []int{1, 3, 4, 5, 9, 4096, 5000, len(stream)} {
			var chunks [][]byte
			for rest := stream; len(rest) > 0; {
				n := min(size, len(rest))
				chunks, rest = append(chunks, rest[:n]), rest[n:]
			}
			var held bool
			src := &chunkedIdle{chunks: chunks, holds: &held}
			// The plain reader behind it gets the rest of a frame begun.
			plain := readerFunc(func(p []byte) (int, error) {
				if len(src.chunks) == 0 {
					return 0, io.EOF
				}
				n := copy(p, src.chunks[0])
				if src.chunks[0] = src.chunks[0][n:]; len(src.chunks[0]) == 0 {
					src.chunks = src.chunks[1:]
				}
				return n, nil
			})
			var fr *FrameReader
			if idleFromStart {
				fr = NewIdleFrameReader(plain, src, 1<<20)
			} else {
				fr = NewFrameReader(plain, 1<<20)
				fr.ReleaseIdle(src)
			}
			src.fr = fr
			require.Nil(t, fr.buf, "size %d: idle from the start", size)
			for i, want := range payloads {
				got, err := fr.Next()
				require.NoError(t, err, "size %d frame %d", size, i)
				require.Equal(t, want, got, "size %d frame %d", size, i)
			}
			_, err := fr.Next()
			require.ErrorIs(t, err, io.EOF, "size %d: a clean end between frames", size)
			require.False(t, held, "size %d: held a buffer while idle", size)
			require.Nil(t, fr.buf)
			require.Positive(t, src.gets)
		}
	}
}

func TestFrameReader_ReleaseIdleErrors(t *testing.T) {
	boom := errors.New("boom")
	fr := NewFrameReader(readerFunc(func([]byte) (int, error) { return 0, io.EOF }), 100)
	fr.ReleaseIdle(&chunkedIdle{chunks: [][]byte{frameOf([]byte("abc"))[:5]}})
	_, err := fr.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the stream ended inside a frame")

	fr = NewFrameReader(nil, 100)
	fr.ReleaseIdle(&chunkedIdle{err: boom})
	_, err = fr.Next()
	require.ErrorIs(t, err, boom)

	fr = NewFrameReader(nil, 2)
	fr.ReleaseIdle(&chunkedIdle{chunks: [][]byte{frameOf([]byte("abc"))}})
	_, err = fr.Next()
	var lenErr *FrameLengthError
	require.ErrorAs(t, err, &lenErr)
	require.EqualValues(t, 3, lenErr.Length)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
