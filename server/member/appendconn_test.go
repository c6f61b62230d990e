package member

import (
	"bufio"
	"math/rand/v2"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendWire_FieldsAreAllEncoded fails when hashicorp/raft adds a field
// to what appendwire.go encodes field by field: the encoding must then learn
// it, or Raft would lose it between members.
func TestAppendWire_FieldsAreAllEncoded(t *testing.T) {
	for typ, fields := range map[reflect.Type]int{
		reflect.TypeFor[raft.AppendEntriesRequest]():  7,
		reflect.TypeFor[raft.AppendEntriesResponse](): 5,
		reflect.TypeFor[raft.RPCHeader]():             3,
		reflect.TypeFor[raft.Log]():                   6,
	} {
		assert.Equal(t, fields, typ.NumField(), "%s has a field appendwire.go does not encode", typ)
	}
}

func randomBytes(rng *rand.Rand, max int) []byte {
	n := rng.IntN(max + 1)
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestAppendWire_RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var w frameWriter
	for range 200 {
		req := &raft.AppendEntriesRequest{
			RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(rng.IntN(4)), ID: randomBytes(rng, 8), Addr: randomBytes(rng, 20)},
			Term:         rng.Uint64(),
			Leader:       randomBytes(rng, 20),
			PrevLogEntry: rng.Uint64(), PrevLogTerm: rng.Uint64(), LeaderCommitIndex: rng.Uint64(),
		}
		for range rng.IntN(5) {
			l := &raft.Log{Index: rng.Uint64(), Term: rng.Uint64(), Type: raft.LogType(rng.IntN(7)),
				Data: randomBytes(rng, 3000), Extensions: randomBytes(rng, 10)}
			if rng.IntN(2) == 0 {
				l.AppendedAt = time.Unix(0, rng.Int64N(1<<62))
			}
			req.Entries = append(req.Entries, l)
		}
		frame := encodeAppendRequest(&w, req)
		got, err := decodeAppendRequest(frame[4:])
		require.NoError(t, err)
		require.Equal(t, len(req.Entries), len(got.Entries))
		for i, l := range req.Entries {
			assert.True(t, l.AppendedAt.Equal(got.Entries[i].AppendedAt))
			got.Entries[i].AppendedAt = l.AppendedAt
		}
		require.Equal(t, req, got)

		resp := &raft.AppendEntriesResponse{
			RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: randomBytes(rng, 8), Addr: randomBytes(rng, 20)},
			Term:      rng.Uint64(), LastLog: rng.Uint64(), Success: rng.IntN(2) == 0, NoRetryBackoff: rng.IntN(2) == 0,
		}
		msg := string(randomBytes(rng, 30))
		frame = encodeAppendResponse(&w, msg, resp)
		var gotResp raft.AppendEntriesResponse
		answered, err := decodeAppendResponse(frame[4:], &gotResp)
		require.NoError(t, err)
		require.Equal(t, *resp, gotResp)
		if msg == "" {
			require.NoError(t, answered)
		} else {
			require.EqualError(t, answered, msg)
		}
	}
}

// Every cut of a valid frame, and bytes changed at random, is refused with
// an error (or decodes to something else), never a panic.
func TestAppendWire_MalformedFramesAreRefused(t *testing.T) {
	var w frameWriter
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("1"), Addr: []byte("127.0.0.1:1")}, Term: 3,
		Entries: []*raft.Log{{Index: 7, Term: 3, Data: []byte("data")}}}
	frame := append([]byte(nil), encodeAppendRequest(&w, req)[4:]...)
	for n := range len(frame) {
		_, err := decodeAppendRequest(frame[:n])
		require.ErrorIs(t, err, errAppendFrame, "cut at %d", n)
	}
	_, err := decodeAppendRequest(append(frame, 0))
	require.ErrorIs(t, err, errAppendFrame, "a byte left over")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		bad := append([]byte(nil), frame...)
		bad[rng.IntN(len(bad))] = byte(rng.Uint32())
		_, _ = decodeAppendRequest(bad)
		var resp raft.AppendEntriesResponse
		_, _ = decodeAppendResponse(bad, &resp)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	_, err = readFrame(bufio.NewReader(&sliceReader{huge}), nil)
	require.ErrorIs(t, err, errAppendFrame, "a length past maxAppendFrame")
}

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	n := copy(p, r.b)
	r.b = r.b[n:]
	if n == 0 {
		return 0, net.ErrClosed
	}
	return n, nil
}

func FuzzDecodeAppendRequest(f *testing.F) {
	var w frameWriter
	f.Add(append([]byte(nil), encodeAppendRequest(&w, &raft.AppendEntriesRequest{Term: 1,
		Entries: []*raft.Log{{Index: 1, Data: []byte("x")}}})[4:]...))
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := decodeAppendRequest(frame)
		if err != nil {
			return
		}
		// What decodes encodes back to the same frame, if canonical.
		again, err := decodeAppendRequest(encodeAppendRequest(&w, req)[4:])
		require.NoError(t, err)
		require.Equal(t, len(req.Entries), len(again.Entries))
	})
}

// answerAppends answers every AppendEntries that comes over c, successfully.
func answerAppends(c net.Conn) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	var enc frameWriter
	for {
		frame, err := readFrame(r, nil)
		if err != nil {
			return
		}
		req, err := decodeAppendRequest(frame)
		if err != nil {
			return
		}
		if _, err := w.Write(encodeAppendResponse(&enc, "", &raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry, Success: true})); err != nil {
			return
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

// A pipeline reads its answers even while Raft takes none (as after a
// failed answer), so its sender never waits on them; Raft gets them in
// order when it reads; the node stopping closes the pipeline.
func TestAppendPipe_AnswersAreReadWhileRaftReadsNone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err == nil {
			answerAppends(c)
			c.Close()
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	quit := make(chan struct{})
	p := &appendPipe{conn: newAppendConn(nc), sent: make(chan *appendFuture, maxAppendsInFlight),
		done: make(chan raft.AppendFuture, maxAppendsInFlight), shut: make(chan struct{})}
	stopped := make(chan struct{})
	go func() { p.readAnswers(quit); close(stopped) }()
	t.Cleanup(func() { p.Close() })

	const n = 3 * maxAppendsInFlight
	futures := make(chan raft.AppendFuture, n)
	go func() {
		for i := range n {
			f, err := p.AppendEntries(&raft.AppendEntriesRequest{Term: 1, PrevLogEntry: uint64(i + 1)}, new(raft.AppendEntriesResponse))
			if err != nil {
				close(futures)
				return
			}
			futures <- f
		}
		close(futures)
	}()
	var sent []raft.AppendFuture
	deadline := time.After(10 * time.Second)
	for len(sent) < n {
		select {
		case f, ok := <-futures:
			require.True(t, ok, "sending failed after %d", len(sent))
			sent = append(sent, f)
		case <-deadline:
			t.Fatalf("the sender waited while Raft read no answers (%d sent)", len(sent))
		}
	}
	for i := range 3 {
		got := <-p.Consumer()
		require.Same(t, sent[i], got, "answer %d in order", i)
		require.NoError(t, got.Error())
		assert.Equal(t, uint64(i+1), got.Response().LastLog)
	}
	close(quit)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer reader did not stop with the node")
	}
	_, err = p.AppendEntries(&raft.AppendEntriesRequest{}, new(raft.AppendEntriesResponse))
	require.Error(t, err, "stopping closed the pipeline")
}

func TestMergeAppends(t *testing.T) {
	hdr := raft.RPCHeader{ID: []byte("1"), Addr: []byte("a")}
	first := func() *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 2, Leader: []byte("a"), PrevLogEntry: 4, PrevLogTerm: 1,
			Entries: []*raft.Log{{Index: 5, Term: 2}, {Index: 6, Term: 2}}, LeaderCommitIndex: 4}
	}
	follows := func() *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 2, Leader: []byte("a"), PrevLogEntry: 6, PrevLogTerm: 2,
			Entries: []*raft.Log{{Index: 7, Term: 2}}, LeaderCommitIndex: 6}
	}
	req := first()
	require.True(t, mergeAppends(req, follows()))
	assert.Len(t, req.Entries, 3)
	assert.Equal(t, uint64(4), req.PrevLogEntry, "checked from the first one's previous entry")
	assert.Equal(t, uint64(6), req.LeaderCommitIndex, "the later commit index")

	for name, change := range map[string]func(*raft.AppendEntriesRequest){
		"a gap":               func(m *raft.AppendEntriesRequest) { m.PrevLogEntry = 7 },
		"another prev term":   func(m *raft.AppendEntriesRequest) { m.PrevLogTerm = 1 },
		"a later term":        func(m *raft.AppendEntriesRequest) { m.Term = 3 },
		"another leader":      func(m *raft.AppendEntriesRequest) { m.ID = []byte("2") },
		"no entries":          func(m *raft.AppendEntriesRequest) { m.Entries = nil },
		"another leader addr": func(m *raft.AppendEntriesRequest) { m.Addr = []byte("b") },
	} {
		req, more := first(), follows()
		change(more)
		assert.False(t, mergeAppends(req, more), name)
		assert.Len(t, req.Entries, 2, name)
	}
}

// bufferedConn is a connection whose far side has sent everything at once:
// its reads return what is left of in, then wait until it closes.
type bufferedConn struct {
	net.Conn // nil: only the methods below are used
	in       []byte
	out      chan []byte
	closed   chan struct{}
}

func (c *bufferedConn) Read(p []byte) (int, error) {
	if len(c.in) > 0 {
		n := copy(p, c.in)
		c.in = c.in[n:]
		return n, nil
	}
	<-c.closed
	return 0, net.ErrClosed
}

func (c *bufferedConn) Write(p []byte) (int, error) {
	c.out <- append([]byte(nil), p...)
	return len(p), nil
}

func (c *bufferedConn) Close() error         { return nil }
func (c *bufferedConn) RemoteAddr() net.Addr { return tcpAddr("peer") }

// Requests already waiting that carry the entries following one's go to
// Raft with it, as one; each is answered, in order. One that does not
// follow goes on its own.
func TestServeAppends_MergesWaitingRequests(t *testing.T) {
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	pt := newPeerTransport(nil, nil, raft.RPCHeader{}, nil, quit, time.Second, quietLogger())
	hdr := raft.RPCHeader{ID: []byte("1"), Addr: []byte("a")}
	var in []byte
	var w frameWriter
	for i := range uint64(3) { // entries 1, 2 and 3, one per request
		in = append(in, encodeAppendRequest(&w, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 1, Leader: []byte("a"),
			PrevLogEntry: i, PrevLogTerm: min(i, 1), Entries: []*raft.Log{{Index: i + 1, Term: 1}}, LeaderCommitIndex: i})...)
	}
	in = append(in, encodeAppendRequest(&w, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 2, Leader: []byte("a"),
		PrevLogEntry: 3, PrevLogTerm: 1, Entries: []*raft.Log{{Index: 4, Term: 2}}, LeaderCommitIndex: 3})...)
	conn := &bufferedConn{in: in, out: make(chan []byte, 16), closed: make(chan struct{})}
	t.Cleanup(func() { close(conn.closed) })
	go pt.serveAppends(conn)

	for _, want := range []struct{ entries, term uint64 }{{3, 1}, {1, 2}} {
		var rpc raft.RPC
		select {
		case rpc = <-pt.appendsIn:
		case <-time.After(10 * time.Second):
			t.Fatal("no request reached Raft")
		}
		req := rpc.Command.(*raft.AppendEntriesRequest)
		require.Len(t, req.Entries, int(want.entries))
		require.Equal(t, want.term, req.Term)
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.Entries[len(req.Entries)-1].Index, Success: true}, nil)
	}
	var answers []raft.AppendEntriesResponse
	r := bufio.NewReader(&chanReader{ch: conn.out})
	for range 4 {
		frame, err := readFrame(r, nil)
		require.NoError(t, err)
		var resp raft.AppendEntriesResponse
		_, err = decodeAppendResponse(frame, &resp)
		require.NoError(t, err)
		answers = append(answers, resp)
	}
	for i, want := range []uint64{3, 3, 3, 4} {
		assert.Equal(t, want, answers[i].LastLog, "answer %d", i)
		assert.True(t, answers[i].Success)
	}
}

// chanReader reads what comes on ch.
type chanReader struct {
	ch   chan []byte
	rest []byte
}

func (r *chanReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		select {
		case r.rest = <-r.ch:
		case <-time.After(10 * time.Second):
			return 0, net.ErrClosed
		}
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}
