package member

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// The encoding of AppendEntries between members (appendconn.go).
//
// hashicorp/raft's network transport encodes every RPC with msgpack, by
// reflection, entry by entry: under a write load on three members that was
// an eighth of the leader's CPU (encoding) and a sixth of each follower's
// (decoding, and an allocation for every entry's data). AppendEntries,
// which carry every write, go over connections of their own in this
// encoding instead: each message is a frame, its length (4 bytes, big
// endian) then its fields as unsigned varints and length-prefixed bytes, in
// the order of the structs' fields. A request's entries keep their data in
// the frame they came in, one allocation for them all.

// maxAppendFrame bounds a frame: more is a broken or hostile peer. Raft
// sends at most MaxAppendEntries entries at once, each under jute's 1 MiB
// (and a snapshot, which can be larger, goes by InstallSnapshot).
const maxAppendFrame = 512 << 20

var errAppendFrame = errors.New("malformed AppendEntries frame")

// frameWriter builds a frame in buf, reused from one frame to the next.
type frameWriter struct{ buf []byte }

func (w *frameWriter) begin()         { w.buf = append(w.buf[:0], 0, 0, 0, 0) }
func (w *frameWriter) uint(v uint64)  { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *frameWriter) bytes(b []byte) { w.uint(uint64(len(b))); w.buf = append(w.buf, b...) }
func (w *frameWriter) bool(v bool)    { w.buf = append(w.buf, b2u8(v)) }
func (w *frameWriter) header(h raft.RPCHeader) {
	w.uint(uint64(h.ProtocolVersion))
	w.bytes(h.ID)
	w.bytes(h.Addr)
}

// finish fills in the frame's length and returns it.
func (w *frameWriter) finish() []byte {
	binary.BigEndian.PutUint32(w.buf, uint32(len(w.buf)-4))
	return w.buf
}

// encodeAppendRequest returns the frame of req, in w's buffer.
func encodeAppendRequest(w *frameWriter, req *raft.AppendEntriesRequest) []byte {
	w.begin()
	w.header(req.RPCHeader)
	w.uint(req.Term)
	w.bytes(req.Leader)
	w.uint(req.PrevLogEntry)
	w.uint(req.PrevLogTerm)
	w.uint(req.LeaderCommitIndex)
	w.uint(uint64(len(req.Entries)))
	for _, l := range req.Entries {
		w.uint(l.Index)
		w.uint(l.Term)
		w.uint(uint64(l.Type))
		w.bytes(l.Data)
		w.bytes(l.Extensions)
		var at uint64 // 0: the zero time; else Unix nanoseconds
		if !l.AppendedAt.IsZero() {
			at = uint64(l.AppendedAt.UnixNano())
		}
		w.uint(at)
	}
	return w.finish()
}

// encodeAppendResponse returns the frame of an answer: an error message
// (empty for none) and the response.
func encodeAppendResponse(w *frameWriter, errMsg string, resp *raft.AppendEntriesResponse) []byte {
	w.begin()
	w.bytes([]byte(errMsg))
	w.header(resp.RPCHeader)
	w.uint(resp.Term)
	w.uint(resp.LastLog)
	w.bool(resp.Success)
	w.bool(resp.NoRetryBackoff)
	return w.finish()
}

// readFrame reads a frame's body into a new slice (a request's entries keep
// pointing into it) or, given scratch, into scratch when it fits.
func readFrame(r *bufio.Reader, scratch []byte) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxAppendFrame {
		return nil, fmt.Errorf("%w: %d bytes", errAppendFrame, size)
	}
	buf := scratch[:0]
	if int(size) > cap(buf) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// frameReader decodes a frame's fields; the first malformed one sets err,
// after which every field reads as zero.
type frameReader struct {
	buf []byte
	err error
}

func (r *frameReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.err = errAppendFrame
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

// bytes returns the next bytes, aliasing the frame (capacity capped, so
// that an append copies); nil when empty.
func (r *frameReader) bytes() []byte {
	n := r.uint()
	if r.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(r.buf)) {
		r.err = errAppendFrame
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

func (r *frameReader) bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.buf) == 0 || r.buf[0] > 1 {
		r.err = errAppendFrame
		return false
	}
	v := r.buf[0] == 1
	r.buf = r.buf[1:]
	return v
}

func (r *frameReader) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(r.uint()), ID: r.bytes(), Addr: r.bytes()}
}

// done reports a malformed frame, or one with bytes left over.
func (r *frameReader) done() error {
	if r.err == nil && len(r.buf) > 0 {
		r.err = errAppendFrame
	}
	return r.err
}

// decodeAppendRequest decodes a request's frame; its entries' data and
// extensions point into frame.
func decodeAppendRequest(frame []byte) (*raft.AppendEntriesRequest, error) {
	r := frameReader{buf: frame}
	req := &raft.AppendEntriesRequest{RPCHeader: r.header(), Term: r.uint(), Leader: r.bytes(),
		PrevLogEntry: r.uint(), PrevLogTerm: r.uint(), LeaderCommitIndex: r.uint()}
	n := r.uint()
	if n > uint64(len(r.buf)) { // every entry takes bytes
		r.err = errAppendFrame
	}
	if r.err == nil && n > 0 {
		logs := make([]raft.Log, n)
		req.Entries = make([]*raft.Log, n)
		for i := range logs {
			l := &logs[i]
			l.Index, l.Term, l.Type = r.uint(), r.uint(), raft.LogType(r.uint())
			l.Data, l.Extensions = r.bytes(), r.bytes()
			if at := r.uint(); at != 0 {
				l.AppendedAt = time.Unix(0, int64(at))
			}
			req.Entries[i] = l
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return req, nil
}

// decodeAppendResponse decodes an answer's frame into resp, and returns
// the error the far side answered with, or err for a malformed frame.
func decodeAppendResponse(frame []byte, resp *raft.AppendEntriesResponse) (answered, err error) {
	r := frameReader{buf: frame}
	msg := r.bytes()
	*resp = raft.AppendEntriesResponse{RPCHeader: r.header(), Term: r.uint(), LastLog: r.uint(),
		Success: r.bool(), NoRetryBackoff: r.bool()}
	if err := r.done(); err != nil {
		return nil, err
	}
	// The header's bytes must not keep the frame (a reused buffer).
	resp.ID, resp.Addr = cloneBytes(resp.ID), cloneBytes(resp.Addr)
	if len(msg) > 0 {
		return errors.New(string(msg)), nil
	}
	return nil, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
