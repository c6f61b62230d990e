package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixedRecords are decoded from every FuzzDecode input, whatever its op.
var fixedRecords = []func() Record{
	func() Record { return &ConnectRequest{} },
	func() Record { return &ConnectResponse{} },
	func() Record { return &RequestHeader{} },
	func() Record { return &ReplyHeader{} },
	func() Record { return &WatcherEvent{} },
	func() Record { return &MultiHeader{} },
	func() Record { return &MultiResult{} },
	func() Record { return &ClientInfo{} },
	func() Record { return &Stat{} },
	func() Record { return &ACL{} },
	func() Record { return &Id{} },
}

// checkStable decodes body into a fresh record and, if that succeeds,
// checks that decode -> append -> decode is stable.
func checkStable(t *testing.T, what string, mk func() Record, body []byte) {
	r1 := mk()
	n, err := r1.Decode(body)
	if err != nil {
		return
	}
	require.LessOrEqual(t, n, len(body), what)
	enc1 := r1.Append(nil)
	r2 := mk()
	n2, err := r2.Decode(enc1)
	require.NoError(t, err, "%s: re-decoding %x", what, enc1)
	require.Equal(t, len(enc1), n2, what)
	require.Equal(t, r1, r2, what)
	require.Equal(t, enc1, r2.Append(nil), what)
}

func FuzzDecode(f *testing.F) {
	for _, tc := range append(requestGolden(), responseGolden()...) {
		for _, op := range []Op{OpCreate, OpMulti, OpMultiRead, OpSetWatches2, OpWhoAmI, OpGetACL} {
			f.Add(int32(op), tc.rec.Append(nil))
		}
	}
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		for _, lookup := range []func(Op) (Record, bool){RequestFor, ResponseFor} {
			if rec, ok := lookup(Op(op)); ok && rec != nil {
				mk := func() Record { r, _ := lookup(Op(op)); return r }
				checkStable(t, fmt.Sprintf("%T for op %d", rec, op), mk, body)
			}
		}
		for _, mk := range fixedRecords {
			checkStable(t, fmt.Sprintf("%T", mk()), mk, body)
		}
	})
}

// fuzzFrameMax is the frame limit under fuzzing: small, so that fuzzed
// length prefixes hit both sides of it.
const fuzzFrameMax = 64

// readAllFrames reads frames until an error and returns copies of them and
// a description of the error.
func readAllFrames(r io.Reader) ([][]byte, string) {
	fr := NewFrameReader(r, fuzzFrameMax)
	var frames [][]byte
	for {
		p, err := fr.Next()
		if err != nil {
			return frames, errorClass(err)
		}
		frames = append(frames, bytes.Clone(p))
	}
}

func errorClass(err error) string {
	var fle *FrameLengthError
	switch {
	case errors.As(err, &fle):
		return fmt.Sprintf("length %d", fle.Length)
	case err == io.EOF:
		return "EOF"
	case err == io.ErrUnexpectedEOF:
		return "unexpected EOF"
	}
	return "other: " + err.Error()
}

// parseFrames is an independent oracle: it splits data, held in memory,
// into frames as FrameReader should.
func parseFrames(data []byte) ([][]byte, string) {
	var frames [][]byte
	for {
		switch {
		case len(data) == 0:
			return frames, "EOF"
		case len(data) < 4:
			return frames, "unexpected EOF"
		}
		n := int32(binary.BigEndian.Uint32(data))
		if n < 0 || n > fuzzFrameMax {
			return frames, fmt.Sprintf("length %d", n)
		}
		if len(data) < 4+int(n) {
			return frames, "unexpected EOF"
		}
		frames = append(frames, bytes.Clone(data[4:4+n]))
		data = data[4+n:]
	}
}

func FuzzFrames(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("ruok"))
	f.Add(frameOf([]byte("hello")))
	f.Add(append(frameOf(nil), frameOf(make([]byte, fuzzFrameMax))...))
	f.Add(append(frameOf([]byte("x")), 0, 0, 0, fuzzFrameMax+1))
	f.Add(append(frameOf([]byte("x")), 0, 0, 0, 9, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := readAllFrames(&chunkReader{chunks: [][]byte{bytes.Clone(data)}})
		oracle, oracleErr := parseFrames(data)
		require.Equal(t, oracle, want, "one piece")
		require.Equal(t, oracleErr, wantErr, "one piece")
		for i := 0; i <= len(data); i++ {
			chunks := [][]byte{bytes.Clone(data[:i]), bytes.Clone(data[i:])}
			got, gotErr := readAllFrames(&chunkReader{chunks: chunks})
			require.Equal(t, want, got, "split at %d", i)
			require.Equal(t, wantErr, gotErr, "split at %d", i)
		}
		var bytewise [][]byte
		for i := range data {
			bytewise = append(bytewise, data[i:i+1])
		}
		got, gotErr := readAllFrames(&chunkReader{chunks: bytewise})
		require.Equal(t, want, got, "one byte per read")
		require.Equal(t, wantErr, gotErr, "one byte per read")
	})
}
