package member

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/wire"
)

// The encoding of AppendEntries between members (appendconn.go).
//
// hashicorp/raft's network transport encodes every RPC with msgpack, by
// reflection, entry by entry: under a write load on three members that was
// 6-8% of the leader's CPU (encoding) and 13-16% of each follower's
// (decoding, and an allocation for every entry's data). AppendEntries,
// which carry every write, go over connections of their own in this
// encoding instead: each message is a frame, its length (4 bytes, big
// endian) then its fields as unsigned varints and length-prefixed bytes, in
// the order of the structs' fields. A request's entries keep their data in
// the frame they came in, one allocation for them all.

// maxAppendFrame bounds a frame read: more is a broken or hostile peer.
// A sender keeps its requests under sendAppendFrame by sending fewer
// entries (Raft sends the rest next), so no request of Raft's, however
// large its entries (jute.maxbuffer), is refused for its size. An answer
// is a few dozen bytes.
const (
	maxAppendFrame  = 512 << 20
	sendAppendFrame = 64 << 20
	maxAnswerFrame  = 64 << 10
)

// maxFrameEntries bounds the entries a frame may say it holds (Raft sends
// at most MaxAppendEntries, 512), so that a small frame cannot make the
// decoder allocate much.
const maxFrameEntries = 1 << 16

var errAppendFrame = errors.New("malformed AppendEntries frame")

// frameWriter builds a frame in buf, reused from one frame to the next.
type frameWriter struct{ buf []byte }

func (w *frameWriter) begin()         { w.buf, _ = wire.StartFrame(w.buf[:0]) }
func (w *frameWriter) uint(v uint64)  { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *frameWriter) bytes(b []byte) { w.uint(uint64(len(b))); w.buf = append(w.buf, b...) }
func (w *frameWriter) bool(v bool)    { w.buf = append(w.buf, b2u8(v)) }
func (w *frameWriter) header(h raft.RPCHeader) {
	w.uint(uint64(h.ProtocolVersion))
	w.bytes(h.ID)
	w.bytes(h.Addr)
}

// finish fills in the frame's length and returns it.
func (w *frameWriter) finish() []byte { return wire.EndFrame(w.buf, 0) }

// encodeAppendRequest returns the frame of req, in w's buffer. If req's
// entries would take the frame past sendAppendFrame, it sends only those
// that fit (at least one) and cuts req.Entries to them: Raft takes the next
// entry to send, and what the answer acknowledges, from req.Entries once
// the call returns. An entry that alone exceeds maxAppendFrame is an error.
func encodeAppendRequest(w *frameWriter, req *raft.AppendEntriesRequest) ([]byte, error) {
	size := 64 + len(req.ID) + len(req.Addr) + len(req.Leader)
	for i, l := range req.Entries {
		size += 40 + len(l.Data) + len(l.Extensions)
		if size > maxAppendFrame && i == 0 {
			return nil, fmt.Errorf("raft log entry %d: %d bytes, more than an AppendEntries may carry", l.Index, len(l.Data)+len(l.Extensions))
		}
		if size > sendAppendFrame && i > 0 {
			req.Entries = req.Entries[:i]
			break
		}
	}
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
	return w.finish(), nil
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

// readFrame reads a request's frame, of at most limit bytes, into a slice
// of its own: the request's entries keep pointing into it (wire.FrameReader
// hands out frames in a buffer it reuses). A large body is read in pieces,
// so that what is allocated follows what arrives, not what the length
// claims.
func readFrame(r *bufio.Reader, limit int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(n[:]))
	if size > limit {
		return nil, fmt.Errorf("%w: %d bytes", errAppendFrame, size)
	}
	const piece = 1 << 20
	buf := make([]byte, 0, min(size, piece))
	for len(buf) < size {
		want := min(size-len(buf), max(cap(buf)-len(buf), piece))
		if len(buf)+want > cap(buf) {
			buf = slices.Grow(buf, want)
		}
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+got]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
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
	if n > uint64(len(r.buf)/6) || n > maxFrameEntries { // an entry takes six bytes at least
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
// the error the far side answered with, or err for a malformed frame (resp
// is then left alone: Raft reads only resp, never the future's error).
func decodeAppendResponse(frame []byte, resp *raft.AppendEntriesResponse) (answered, err error) {
	r := frameReader{buf: frame}
	msg := r.bytes()
	got := raft.AppendEntriesResponse{RPCHeader: r.header(), Term: r.uint(), LastLog: r.uint(),
		Success: r.bool(), NoRetryBackoff: r.bool()}
	if err := r.done(); err != nil {
		return nil, err
	}
	// The header's bytes must not keep the frame (a reused buffer).
	got.ID, got.Addr = bytes.Clone(got.ID), bytes.Clone(got.Addr)
	*resp = got
	if len(msg) > 0 {
		return errors.New(string(msg)), nil
	}
	return nil, nil
}
