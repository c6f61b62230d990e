package wire

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// unhex parses a spaced hex string such as "00 00 00 01 ff".
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err, "bad hex %q", s)
	return b
}

// spaced formats b as spaced hex, the inverse of unhex.
func spaced(b []byte) string {
	h := hex.EncodeToString(b)
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}

// fresh returns a new zero value of rec's type (tests only: the codec
// itself uses no reflection).
func fresh(rec Record) Record {
	return reflect.New(reflect.TypeOf(rec).Elem()).Interface().(Record)
}

// readHexFrames reads a testdata/*.hex file: '#' comment lines and blank
// lines are skipped, every other line is one frame (length prefix
// included) in spaced hex. It checks each prefix against the frame's size.
func readHexFrames(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var frames [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fr := unhex(t, line)
		require.GreaterOrEqual(t, len(fr), 4, "frame %d of %s", len(frames)+1, path)
		require.Equal(t, len(fr)-4, int(binary.BigEndian.Uint32(fr)), "length prefix of frame %d of %s", len(frames)+1, path)
		frames = append(frames, fr)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, frames, path)
	return frames
}

// chunkReader returns one chunk per Read call (or part of one, if p is
// smaller), then io.EOF.
type chunkReader struct {
	chunks [][]byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	return n, nil
}
