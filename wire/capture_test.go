package wire

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// A captured conversation: the client's frames and the server's, each
// starting with the connect request or response. See the files' comments
// for how they were produced.
var captures = []struct {
	name, requests, replies string
	readOnlyByte            bool           // whether the client sent the optional byte
	rejected                map[int32]bool // xids of multis that must fail with ErrBadMulti
}{
	{"go-zookeeper v1.0.4 and ZooKeeper 3.8.0", "testdata/gozk_requests.hex", "testdata/zk38_replies.hex", false, nil},
	{"wire encoder and ZooKeeper 3.8.0", "testdata/raw_requests.hex", "testdata/zk38_raw_replies.hex", true,
		map[int32]bool{36: true, 37: true}}, // mixed read/write; create flag 5 without TTL
}

// decoded is one frame of a capture after decoding.
type decoded struct {
	header Record // *RequestHeader or *ReplyHeader, nil for connect frames
	body   Record // nil when the frame has no body
}

// reencode decodes payload as header+body with the given records and
// checks that appending them gives payload back byte for byte.
func reencode(t *testing.T, what string, payload []byte, hdr, body Record) {
	t.Helper()
	n := 0
	if hdr != nil {
		var err error
		n, err = hdr.Decode(payload)
		require.NoError(t, err, what)
	}
	if body == nil {
		require.Len(t, payload, n, "%s: unexpected body", what)
	} else {
		m, err := body.Decode(payload[n:])
		require.NoError(t, err, what)
		require.Equal(t, len(payload)-n, m, "%s: body not fully consumed", what)
	}
	var out []byte
	if hdr != nil {
		out = hdr.Append(out)
	}
	if body != nil {
		out = body.Append(out)
	}
	require.Equal(t, spaced(payload), spaced(out), "%s: re-encoding differs", what)
}

// decodeRequests decodes every client frame and returns the opcode of
// each xid.
// Requests whose xid is in rejected must fail with ErrBadMulti instead.
func decodeRequests(t *testing.T, frames [][]byte, readOnly bool, rejected map[int32]bool) (map[int32]Op, []decoded) {
	var cr ConnectRequest
	reencode(t, "connect request", frames[0][4:], nil, &cr)
	require.Equal(t, readOnly, cr.HasReadOnly)
	require.Len(t, frames[0], 4+44+btoi(readOnly))
	ops := map[int32]Op{}
	var out []decoded
	for i, f := range frames[1:] {
		var h RequestHeader
		_, err := h.Decode(f[4:])
		require.NoError(t, err)
		body, ok := RequestFor(h.OpCode)
		require.True(t, ok, "request %d: op %s", i+2, h.OpCode)
		ops[h.Xid] = h.OpCode
		if rejected[h.Xid] {
			_, err := body.Decode(f[4+RequestHeaderSize:])
			require.ErrorIs(t, err, ErrBadMulti, "request %d", i+2)
			out = append(out, decoded{&h, nil})
			continue
		}
		reencode(t, fmt.Sprintf("request %d (%s)", i+2, h.OpCode), f[4:], &h, body)
		out = append(out, decoded{&h, body})
	}
	return ops, out
}

// decodeReplies decodes every server frame, matching replies to requests
// by xid; notifications have xid -1.
func decodeReplies(t *testing.T, frames [][]byte, readOnly bool, ops map[int32]Op) map[int32]decoded {
	var cr ConnectResponse
	reencode(t, "connect response", frames[0][4:], nil, &cr)
	require.Equal(t, readOnly, cr.HasReadOnly)
	require.Len(t, frames[0], 4+36+btoi(readOnly))
	out := map[int32]decoded{}
	for i, f := range frames[1:] {
		var h ReplyHeader
		_, err := h.Decode(f[4:])
		require.NoError(t, err)
		what := fmt.Sprintf("reply %d (xid %d)", i+2, h.Xid)
		var body Record = &WatcherEvent{}
		if h.Xid != XidNotification {
			op, ok := ops[h.Xid]
			require.True(t, ok, "%s: no request with this xid", what)
			body = nil
			if h.Err == CodeOK {
				body, _ = ResponseFor(op)
			}
			what += " to " + op.String()
			out[h.Xid] = decoded{&h, body}
		}
		reencode(t, what, f[4:], &h, body)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCapture_ReencodeExactly(t *testing.T) {
	for _, c := range captures {
		t.Run(c.name, func(t *testing.T) {
			ops, _ := decodeRequests(t, readHexFrames(t, c.requests), c.readOnlyByte, c.rejected)
			decodeReplies(t, readHexFrames(t, c.replies), c.readOnlyByte, ops)
		})
	}
}

// TestCapture_FrameReader feeds each capture, as one stream, through
// FrameReader, one byte per Read.
func TestCapture_FrameReader(t *testing.T) {
	for _, c := range captures {
		for _, path := range []string{c.requests, c.replies} {
			frames := readHexFrames(t, path)
			var stream []byte
			var chunks [][]byte
			for _, f := range frames {
				stream = append(stream, f...)
			}
			for i := range stream {
				chunks = append(chunks, stream[i:i+1])
			}
			fr := NewFrameReader(&chunkReader{chunks: chunks}, MaxBuffer)
			for i, f := range frames {
				p, err := fr.Next()
				require.NoError(t, err, "%s frame %d", path, i+1)
				require.Equal(t, f[4:], p)
			}
			_, err := fr.Next()
			require.ErrorIs(t, err, io.EOF)
		}
	}
}

// TestCapture_Facts pins what the captures show about the real server and
// client, which the rest of the project relies on.
func TestCapture_Facts(t *testing.T) {
	gozk, reqs := decodeRequests(t, readHexFrames(t, captures[0].requests), false, nil)
	replies := decodeReplies(t, readHexFrames(t, captures[0].replies), false, gozk)

	// go-zk: nil data is a null buffer, []byte{} an empty one.
	require.Nil(t, reqs[1].body.(*CreateRequest).Data)
	require.Equal(t, []byte{}, reqs[2].body.(*CreateRequest).Data)
	// go-zk sends auth with an ordinary xid, and ZooKeeper 3.8 answers it with zxid 0.
	auth := reqs[10].header.(*RequestHeader)
	require.Equal(t, OpAuth, auth.OpCode)
	require.Positive(t, auth.Xid)
	require.Zero(t, replies[auth.Xid].header.(*ReplyHeader).Zxid)
	// A failed multi: header err 0, every result type -1 with 0, the code, then -2.
	failed := reqs[9].header.(*RequestHeader)
	require.Equal(t, OpMulti, failed.OpCode)
	r := replies[failed.Xid]
	require.Equal(t, CodeOK, r.header.(*ReplyHeader).Err)
	require.Equal(t, []MultiResult{{Type: OpError, Err: CodeOK}, {Type: OpError, Err: CodeNodeExists},
		{Type: OpError, Err: CodeRuntimeInconsistency}}, r.body.(*MultiResponse).Results)
}

// TestCapture_RawFacts pins what ZooKeeper 3.8.0 answered to the requests
// go-zookeeper cannot send.
func TestCapture_RawFacts(t *testing.T) {
	raw, _ := decodeRequests(t, readHexFrames(t, captures[1].requests), true, captures[1].rejected)
	rawReplies := decodeReplies(t, readHexFrames(t, captures[1].replies), true, raw)
	resultTypes := func(xid int32) []Op {
		var types []Op
		for _, res := range rawReplies[xid].body.(*MultiResponse).Results {
			types = append(types, res.Type)
		}
		return types
	}
	require.Equal(t, []Op{OpGetData, OpGetChildren, OpError}, resultTypes(7), "multiRead")
	require.Equal(t, []Op{OpCreate}, resultTypes(8), "a create2-typed sub-op gets a create result in 3.8.0")
	require.Equal(t, []Op{OpCreate2}, resultTypes(9), "create with flag 4 becomes createContainer")
	require.Equal(t, []Op{OpCreate2}, resultTypes(10), "createTTL sub-op")
	require.Empty(t, resultTypes(11), "empty multi")
	require.Equal(t, &ErrorResponse{CodeOK}, rawReplies[16].body, "addWatch replies with a 4-byte ErrorResponse")
	require.Equal(t, []MultiResult{{Type: OpError, Err: CodeBadArguments}}, rawReplies[38].body.(*MultiResponse).Results,
		"create flag 7 in a multi decodes; the op fails with BADARGUMENTS")
	for xid := range captures[1].rejected { // what we refuse to decode, ZooKeeper refuses too
		require.Equal(t, CodeMarshallingError, rawReplies[xid].header.(*ReplyHeader).Err)
	}
	require.Equal(t, CodeMarshallingError, rawReplies[20].header.(*ReplyHeader).Err,
		"3.8.0 rejects removeWatches type 5 (persistent recursive)")
	require.Equal(t, &WhoAmIResponse{[]ClientInfo{{"ip", "127.0.0.1"}, {"digest", "u"}}}, rawReplies[15].body)
	_, answered := rawReplies[27]
	require.False(t, answered, "3.8.0 sends no reply to a successful standalone check")
}

func TestCapture_FilesStartWithProvenance(t *testing.T) {
	for _, c := range captures {
		for _, path := range []string{c.requests, c.replies} {
			frames := readHexFrames(t, path)
			require.NotEmpty(t, frames)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.HasPrefix(data, []byte("# Captured ")), path)
			require.Contains(t, string(data), "ZooKeeper 3.8.0", path)
		}
	}
}
