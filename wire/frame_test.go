package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func frameOf(payload []byte) []byte {
	f, start := StartFrame(nil)
	f = append(f, payload...)
	return EndFrame(f, start)
}

func TestStartEndFrame(t *testing.T) {
	dst, start := StartFrame([]byte{0xaa})
	require.Equal(t, 1, start)
	dst = (&PathRequest{"/a"}).Append(dst)
	dst = EndFrame(dst, start)
	require.Equal(t, "aa 00 00 00 06 "+hPathA, spaced(dst))
}

func TestFrameReader_SplitAcrossReads(t *testing.T) {
	payloads := [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{7}, 70000), []byte("last")}
	var stream []byte
	for _, p := range payloads {
		stream = append(stream, frameOf(p)...)
	}
	readers := map[string]io.Reader{
		"one byte per read": iotest.OneByteReader(bytes.NewReader(stream)),
		"half":              iotest.HalfReader(bytes.NewReader(stream)),
		"data with EOF":     iotest.DataErrReader(bytes.NewReader(stream)),
		"split mid-prefix":  &chunkReader{chunks: [][]byte{stream[:2], stream[2:11], stream[11:]}},
	}
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			fr := NewFrameReader(r, MaxBuffer)
			for _, want := range payloads {
				got, err := fr.Next()
				require.NoError(t, err)
				require.Equal(t, want, got)
			}
			_, err := fr.Next()
			require.ErrorIs(t, err, io.EOF)
		})
	}
}

func TestFrameReader_Buffered(t *testing.T) {
	stream := append(frameOf([]byte("a")), frameOf([]byte("bc"))...)
	fr := NewFrameReader(bytes.NewReader(stream), MaxBuffer)
	_, err := fr.Next()
	require.NoError(t, err)
	require.Equal(t, 6, fr.Buffered(), "the second frame was read along with the first")
	_, err = fr.Next()
	require.NoError(t, err)
	require.Zero(t, fr.Buffered())
}

func TestFrameReader_MaxAccepted(t *testing.T) {
	payload := bytes.Repeat([]byte{0x5a}, MaxBuffer)
	fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(frameOf(payload))), MaxBuffer)
	got, err := fr.Next()
	require.NoError(t, err)
	require.Len(t, got, MaxBuffer)
	require.Equal(t, payload, got)
}

// stingyReader hands out its data and then fails the test if read again.
type stingyReader struct {
	t    *testing.T
	data []byte
}

func (r *stingyReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		r.t.Errorf("read past the length prefix")
		return 0, errors.New("read past the length prefix")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestFrameReader_LengthOutOfRange(t *testing.T) {
	cases := []struct {
		name   string
		prefix []byte
		max    int
		length int32
	}{
		{"max+1", binary.BigEndian.AppendUint32(nil, MaxBuffer+1), MaxBuffer, MaxBuffer + 1},
		{"small limit", binary.BigEndian.AppendUint32(nil, 17), 16, 17},
		{"negative", []byte{0xff, 0xff, 0xff, 0xff}, MaxBuffer, -1},
		{"most negative", []byte{0x80, 0, 0, 0}, MaxBuffer, -1 << 31},
		{"four-letter word ruok", []byte("ruok"), MaxBuffer, 0x72756f6b},
		{"four-letter word srvr", []byte("srvr"), MaxBuffer, 0x73727672},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fr := NewFrameReader(&stingyReader{t: t, data: tc.prefix}, tc.max)
			_, err := fr.Next()
			var fle *FrameLengthError
			require.ErrorAs(t, err, &fle)
			require.Equal(t, tc.length, fle.Length)
			require.Equal(t, tc.max, fle.Max)
			require.ErrorIs(t, err, ErrFrameTooLarge)
			require.Contains(t, err.Error(), "wire: frame length")
		})
	}
}

func TestFrameReader_EOF(t *testing.T) {
	full := frameOf([]byte("abc"))
	cases := []struct {
		name   string
		stream []byte
		frames int
		want   error
	}{
		{"empty stream", nil, 0, io.EOF},
		{"between frames", full, 1, io.EOF},
		{"inside the prefix", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
		{"after the prefix", full[:4], 0, io.ErrUnexpectedEOF},
		{"inside the payload", full[:6], 0, io.ErrUnexpectedEOF},
		{"inside the second frame", append(append([]byte{}, full...), full[:5]...), 1, io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{bytes.NewReader(tc.stream), iotest.OneByteReader(bytes.NewReader(tc.stream))} {
				fr := NewFrameReader(r, MaxBuffer)
				for i := 0; i < tc.frames; i++ {
					_, err := fr.Next()
					require.NoError(t, err)
				}
				_, err := fr.Next()
				require.Equal(t, tc.want, err, "the error is returned as is, not wrapped")
			}
		})
	}
}

func TestFrameReader_ReadErrorPassesThrough(t *testing.T) {
	boom := errors.New("boom")
	fr := NewFrameReader(io.MultiReader(bytes.NewReader([]byte{0, 0, 0, 5, 1}), iotest.ErrReader(boom)), MaxBuffer)
	_, err := fr.Next()
	require.ErrorIs(t, err, boom)
}

// TestFrameReader_RoomFollowsBytesReceived checks that the buffer grows
// with the bytes that arrive, not to the length a prefix announces: a peer
// that announces jute.maxbuffer and sends a little holds a little.
func TestFrameReader_RoomFollowsBytesReceived(t *testing.T) {
	cases := []struct {
		name string
		sent int // payload bytes sent after the prefix, then the stream fails
		room int // the most the buffer may have grown to
	}{
		{"prefix only", 0, minFrameBuffer},
		{"a few bytes", 100, minFrameBuffer},
		{"just over the first buffer", minFrameBuffer, 2 * minFrameBuffer},
		{"100 KiB", 100 << 10, 256 << 10},
	}
	boom := errors.New("boom")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream := append(binary.BigEndian.AppendUint32(nil, MaxBuffer), make([]byte, tc.sent)...)
			fr := NewFrameReader(io.MultiReader(bytes.NewReader(stream), iotest.ErrReader(boom)), MaxBuffer)
			_, err := fr.Next()
			require.ErrorIs(t, err, boom)
			require.Equal(t, 4+tc.sent, fr.Buffered())
			require.LessOrEqual(t, len(fr.buf), tc.room)
		})
	}
}

// TestFrameReader_GivesUpRoomBetweenFrames checks that a buffer grown for a
// large frame is not kept once the frames after it are small.
func TestFrameReader_GivesUpRoomBetweenFrames(t *testing.T) {
	large := bytes.Repeat([]byte{7}, 300<<10)
	stream := append(frameOf(large), frameOf([]byte("small"))...)
	fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(stream)), MaxBuffer)
	got, err := fr.Next()
	require.NoError(t, err)
	require.Equal(t, large, got)
	small, err := fr.Next()
	require.NoError(t, err)
	require.Equal(t, "small", string(small))
	_, err = fr.Next()
	require.ErrorIs(t, err, io.EOF)
	require.LessOrEqual(t, len(fr.buf), keptFrameBuffer)
}

// TestFrameReaderSize_KeepsItsBuffer checks that a sized reader reads many
// small frames into its one buffer, in reads of up to its size, and comes
// back to that size after a frame larger than it.
func TestFrameReaderSize_KeepsItsBuffer(t *testing.T) {
	const size = 1 << 10
	var stream []byte
	for i := range 100 {
		stream = append(stream, frameOf(bytes.Repeat([]byte{byte(i)}, 50))...)
	}
	large := bytes.Repeat([]byte{9}, 3*size)
	stream = append(stream, frameOf(large)...)
	stream = append(stream, frameOf([]byte("after"))...)
	reads := &countingReader{r: bytes.NewReader(stream)}
	fr := NewFrameReaderSize(reads, MaxBuffer, size)
	for i := range 100 {
		got, err := fr.Next()
		require.NoError(t, err)
		require.Equal(t, bytes.Repeat([]byte{byte(i)}, 50), got)
		require.Len(t, fr.buf, size)
	}
	require.LessOrEqual(t, reads.n, 100*54/(size/2), "reads of the small frames")
	got, err := fr.Next()
	require.NoError(t, err)
	require.Equal(t, large, got)
	got, err = fr.Next()
	require.NoError(t, err)
	require.Equal(t, "after", string(got))
	_, err = fr.Next()
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, fr.buf, size)
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.n++
	return c.r.Read(p)
}

// stalledReader returns nothing and no error, for ever.
type stalledReader struct{}

func (stalledReader) Read([]byte) (int, error) { return 0, nil }

func TestFrameReader_GivesUpOnAStalledReader(t *testing.T) {
	_, err := NewFrameReaderSize(stalledReader{}, MaxBuffer, 1<<10).Next()
	require.ErrorIs(t, err, io.ErrNoProgress)
}
