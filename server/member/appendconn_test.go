package member

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
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
		frame, err := encodeAppendRequest(&w, req)
		require.NoError(t, err)
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
	encoded, err := encodeAppendRequest(&w, req)
	require.NoError(t, err)
	frame := append([]byte(nil), encoded[4:]...)
	for n := range len(frame) {
		_, err := decodeAppendRequest(frame[:n])
		require.ErrorIs(t, err, errAppendFrame, "cut at %d", n)
	}
	_, err = decodeAppendRequest(append(frame, 0))
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
	_, err = readFrame(bufio.NewReader(&sliceReader{huge}), maxAppendFrame)
	require.ErrorIs(t, err, errAppendFrame, "a length past maxAppendFrame")

	// A frame that claims more entries than its bytes could hold is refused
	// before anything is made for them.
	var claim frameWriter
	claim.begin()
	claim.header(raft.RPCHeader{})
	for range 5 {
		claim.uint(1)
	}
	claim.uint(1 << 20) // entries
	claim.buf = append(claim.buf, make([]byte, 1<<10)...)
	allocs := testing.AllocsPerRun(10, func() {
		_, err = decodeAppendRequest(claim.buf[4:])
	})
	require.ErrorIs(t, err, errAppendFrame)
	require.Less(t, allocs, float64(5), "nothing made for entries that cannot be there")

	// A body is read as it comes: a length that claims much more than
	// arrives costs what arrived, not what was claimed.
	claimed := []byte{0x10, 0, 0, 0} // 256 MiB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = readFrame(bufio.NewReader(&sliceReader{append(claimed, "short"...)}), maxAppendFrame)
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20))
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
	seed, err := encodeAppendRequest(&w, &raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{{Index: 1, Data: []byte("x")}}})
	require.NoError(f, err)
	f.Add(append([]byte(nil), seed[4:]...))
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := decodeAppendRequest(frame)
		if err != nil {
			return
		}
		// What decodes encodes back and decodes to as many entries.
		encoded, err := encodeAppendRequest(&w, req)
		require.NoError(t, err)
		again, err := decodeAppendRequest(encoded[4:])
		require.NoError(t, err)
		require.Equal(t, len(req.Entries), len(again.Entries))
	})
}

// answerAppends answers every AppendEntries that comes over c, successfully.
func answerAppends(c net.Conn) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	var enc frameWriter
	for {
		frame, err := readFrame(r, maxAppendFrame)
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
	p := &appendPipe{conn: newAppendConn(nc, nil), sent: make(chan *appendFuture, maxAppendsInFlight),
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

func (c *bufferedConn) Close() error                    { return nil }
func (c *bufferedConn) RemoteAddr() net.Addr            { return tcpAddr("peer") }
func (c *bufferedConn) SetReadDeadline(time.Time) error { return nil }

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
	add := func(req *raft.AppendEntriesRequest) {
		frame, err := encodeAppendRequest(&w, req)
		require.NoError(t, err)
		in = append(in, frame...)
	}
	for i := range uint64(3) { // entries 1, 2 and 3, one per request
		add(&raft.AppendEntriesRequest{RPCHeader: hdr, Term: 1, Leader: []byte("a"),
			PrevLogEntry: i, PrevLogTerm: min(i, 1), Entries: []*raft.Log{{Index: i + 1, Term: 1}}, LeaderCommitIndex: i})
	}
	add(&raft.AppendEntriesRequest{RPCHeader: hdr, Term: 2, Leader: []byte("a"),
		PrevLogEntry: 3, PrevLogTerm: 1, Entries: []*raft.Log{{Index: 4, Term: 2}}, LeaderCommitIndex: 3})
	conn := &bufferedConn{in: in, out: make(chan []byte, 16), closed: make(chan struct{})}
	t.Cleanup(func() { close(conn.closed) })
	go pt.serveAppends(conn)

	for _, want := range []struct{ entries, term uint64 }{{3, 1}, {1, 2}} {
		rpc := nextToRaft(t, pt)
		req := rpc.Command.(*raft.AppendEntriesRequest)
		require.Len(t, req.Entries, int(want.entries))
		require.Equal(t, want.term, req.Term)
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.Entries[len(req.Entries)-1].Index, Success: true}, nil)
	}
	var answers []raft.AppendEntriesResponse
	r := bufio.NewReader(&chanReader{ch: conn.out})
	for range 4 {
		frame, err := readFrame(r, maxAnswerFrame)
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

// nextToRaft returns the next request serveAppends hands Raft.
func nextToRaft(t *testing.T, pt *peerTransport) raft.RPC {
	t.Helper()
	select {
	case rpc := <-pt.appendsIn:
		return rpc
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached Raft")
		return raft.RPC{}
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

// A request whose entries would make a frame past sendAppendFrame carries
// as many as fit, at least one, and says so in its entries (Raft sends the
// rest next).
func TestAppendWire_LargeRequestsCarryWhatFits(t *testing.T) {
	data := make([]byte, 24<<20)
	req := &raft.AppendEntriesRequest{Term: 1}
	for i := range uint64(4) {
		req.Entries = append(req.Entries, &raft.Log{Index: i + 1, Term: 1, Data: data})
	}
	var w frameWriter
	frame, err := encodeAppendRequest(&w, req)
	require.NoError(t, err)
	require.LessOrEqual(t, len(frame), sendAppendFrame)
	require.Len(t, req.Entries, 2, "the entries sent")
	got, err := decodeAppendRequest(frame[4:])
	require.NoError(t, err)
	require.Len(t, got.Entries, 2)

	one := &raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{{Index: 1, Data: make([]byte, sendAppendFrame)}}}
	frame, err = encodeAppendRequest(&w, one)
	require.NoError(t, err, "one entry goes, however large, up to maxAppendFrame")
	require.Len(t, one.Entries, 1)
	require.Greater(t, len(frame), sendAppendFrame)
}

// An answer that is refused leaves the response as it was: Raft reads the
// response, not the error.
func TestAppendWire_RefusedAnswerLeavesTheResponse(t *testing.T) {
	var w frameWriter
	frame := encodeAppendResponse(&w, "", &raft.AppendEntriesResponse{Term: 2, Success: true})
	resp := raft.AppendEntriesResponse{Term: 1}
	_, err := decodeAppendResponse(append(append([]byte(nil), frame[4:]...), 7), &resp)
	require.ErrorIs(t, err, errAppendFrame)
	require.Equal(t, raft.AppendEntriesResponse{Term: 1}, resp)
}

// An answer goes out although part of the next request has come: it may
// take a while to come whole.
func TestServeAppends_AnswersWhileAFrameIsPartial(t *testing.T) {
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	pt := newPeerTransport(nil, nil, raft.RPCHeader{}, nil, quit, time.Second, quietLogger())
	var w frameWriter
	frame, err := encodeAppendRequest(&w, &raft.AppendEntriesRequest{Term: 1, Leader: []byte("a"),
		Entries: []*raft.Log{{Index: 1, Term: 1}}})
	require.NoError(t, err)
	in := append([]byte(nil), frame...)
	in = append(in, frame[:len(frame)/2]...)
	conn := &bufferedConn{in: in, out: make(chan []byte, 16), closed: make(chan struct{})}
	t.Cleanup(func() { close(conn.closed) })
	go pt.serveAppends(conn)
	var rpc raft.RPC
	select {
	case rpc = <-pt.appendsIn:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach Raft")
	}
	rpc.Respond(&raft.AppendEntriesResponse{Term: 1, LastLog: 1, Success: true}, nil)
	r := bufio.NewReader(&chanReader{ch: conn.out})
	answer, err := readFrame(r, maxAnswerFrame)
	require.NoError(t, err, "the answer was written")
	var resp raft.AppendEntriesResponse
	_, err = decodeAppendResponse(answer, &resp)
	require.NoError(t, err)
	require.True(t, resp.Success)
}

// TestPeerTransport_AnOlderMemberIsSentAppendsOverRaftsTransport shows a
// cluster upgraded member by member: a member that refuses AppendEntries
// connections and sends its own over Raft's network transport, as a zkraft
// from before them did, follows a leader of this build (entries and commit
// notices reach it over Raft's transport) and leads the others.
func TestPeerTransport_AnOlderMemberIsSentAppendsOverRaftsTransport(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "durable"}[durable], func(t *testing.T) {
			testOlderMember(t, durable)
		})
	}
}

func testOlderMember(t *testing.T, durable bool) {
	nodes := startNodes(t, 3, func(c *Config) {
		c.commitTimeout = time.Hour // followers learn of commits by notice only
		c.olderPeerNet = c.ServerID == 3
		if durable {
			c.DataDir = t.TempDir()
		}
	})
	older := nodes[2]
	addrOf := func(n *Node) raft.ServerAddress { p, _ := n.cfg.Self(); return raft.ServerAddress(p.RaftAddr) }
	var session int64
	writeAndSee := func(leader *Node) {
		t.Helper()
		for range 5 {
			session++
			cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: session, Timeout: 30000,
				Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
			leader.Propose(cmd.Encode(), 0)
			for _, n := range nodes {
				eventually(t, fmt.Sprintf("member %d to apply session %d", n.cfg.ServerID, session), func() bool {
					_, ok := n.fsm.Session(session)
					return ok
				})
			}
		}
	}
	lead := func(n *Node) {
		t.Helper()
		eventually(t, fmt.Sprintf("member %d to lead", n.cfg.ServerID), func() bool {
			if cur := leaderOf(nodes); cur != nil && cur != n {
				_ = cur.Raft().LeadershipTransferToServer(raft.ServerID(strconv.Itoa(n.cfg.ServerID)), addrOf(n)).Error()
			}
			return n.Leading()
		})
	}

	lead(nodes[0])
	writeAndSee(nodes[0])
	assert.True(t, nodes[0].trans.older.refusing(addrOf(older)), "the older member refused a connection")
	assert.False(t, nodes[0].trans.older.refusing(addrOf(nodes[1])), "the other member took one")

	lead(older)
	writeAndSee(older)

	lead(nodes[1])
	writeAndSee(nodes[1])
	assert.True(t, nodes[1].trans.older.refusing(addrOf(older)))
	assert.False(t, nodes[1].trans.older.refusing(addrOf(nodes[0])))
}

// refusing reports whether the member at target refused a connection since
// it last took one.
func (o *olderPeers) refusing(target raft.ServerAddress) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.members[target] != nil
}

// A member that refuses is offered a connection again after a second, then
// after twice as long each time, up to olderRecheck; one that takes a
// connection is forgotten.
func TestOlderPeers_RecheckBacksOff(t *testing.T) {
	var o olderPeers
	const m = raft.ServerAddress("m")
	assert.False(t, o.is(m))
	var waits []time.Duration
	for i := range 7 {
		assert.Equal(t, i == 1, o.refused(m), "told as older once, when it refuses having answered")
		assert.True(t, o.is(m))
		waits = append(waits, o.members[m].wait)
		o.refused(m) // within the wait: the same round, no longer wait
		assert.Equal(t, waits[i], o.members[m].wait)
		o.members[m].until = time.Now() // the wait is over
		o.answeredOverRaft(m)           // it runs: an older member
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, olderRecheck, olderRecheck}, waits)
	assert.False(t, o.is(m))
	assert.True(t, o.refusing(m))
	o.took(m)
	assert.False(t, o.refusing(m))
	assert.False(t, o.refused(m), "a refusal alone does not tell an older member")
	assert.Equal(t, time.Second, o.members[m].wait)
	// A member that refuses again without having answered in between (it
	// was down, not older) waits no longer, and is not told as older.
	o.members[m].until = time.Now()
	assert.False(t, o.refused(m))
	assert.Equal(t, time.Second, o.members[m].wait)
	o.members[m].until = time.Now()
	o.answeredOverRaft(m)
	assert.True(t, o.refused(m), "told again after it took a connection in between")
	assert.Equal(t, 2*time.Second, o.members[m].wait)
}

// A durable member's Raft stores a request's entries without waiting for
// the disk and takes the next request meanwhile; the answer that says the
// entries were stored goes out only once they are on disk, and says they
// were not if the log's end was deleted since the request came (a new
// leader replacing entries). Answers keep their order.
func TestServeAppends_AnswersWaitForTheDisk(t *testing.T) {
	store := newHeldStore()
	require.NoError(t, store.StoreLogs(entries(1, 2)))
	log, err := newOverlapLog(store)
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	pt := newPeerTransport(nil, nil, raft.RPCHeader{}, nil, quit, time.Second, quietLogger())
	pt.hold = log

	hdr := raft.RPCHeader{ID: []byte("1"), Addr: []byte("a")}
	var in []byte
	var w frameWriter
	for _, r := range []struct{ term, prev uint64 }{{1, 2}, {2, 3}, {3, 4}} { // one entry each, none merged (terms differ)
		term, prev := r.term, r.prev
		frame, err := encodeAppendRequest(&w, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: term, Leader: []byte("a"),
			PrevLogEntry: prev, PrevLogTerm: 1, Entries: []*raft.Log{{Index: prev + 1, Term: term}}, LeaderCommitIndex: 2})
		require.NoError(t, err)
		in = append(in, frame...)
	}
	conn := &bufferedConn{in: in, out: make(chan []byte, 16), closed: make(chan struct{})}
	t.Cleanup(func() { close(conn.closed) })
	go pt.serveAppends(conn)
	answers := bufio.NewReader(&chanReader{ch: conn.out})
	answer := func() raft.AppendEntriesResponse {
		t.Helper()
		frame, err := readFrame(answers, maxAnswerFrame)
		require.NoError(t, err)
		var resp raft.AppendEntriesResponse
		_, err = decodeAppendResponse(frame, &resp)
		require.NoError(t, err)
		return resp
	}
	// raftTakes does what Raft does with the next request: stores its
	// entries and says it succeeded.
	raftTakes := func() *raft.AppendEntriesRequest {
		t.Helper()
		rpc := nextToRaft(t, pt)
		req := rpc.Command.(*raft.AppendEntriesRequest)
		for _, e := range req.Entries {
			e.Type = raft.LogCommand
		}
		require.NoError(t, log.StoreLogs(req.Entries), "Raft's append does not wait for the disk")
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.Entries[len(req.Entries)-1].Index, Success: true}, nil)
		return req
	}

	store.hold()
	t.Cleanup(store.release)
	first := raftTakes()
	require.EqualValues(t, 3, first.Entries[0].Index)
	store.awaitWriter(t)
	second := raftTakes() // taken while the first request's entries wait for the disk
	require.EqualValues(t, 4, second.Entries[0].Index)
	select {
	case b := <-conn.out:
		t.Fatalf("answered before the disk had the entries: %x", b)
	case <-time.After(50 * time.Millisecond):
	}
	store.release()
	for i, want := range []uint64{3, 4} {
		resp := answer()
		assert.True(t, resp.Success, "answer %d", i)
		assert.Equal(t, want, resp.LastLog, "answer %d", i)
	}
	assert.Equal(t, [][]uint64{{1, 2}, {3}, {4}}, store.made())

	// The third request reaches Raft (its answer's epoch is taken); a new
	// leader's entries replace the log's end before Raft stores it.
	rpc := nextToRaft(t, pt)
	require.NoError(t, log.DeleteRange(4, 4))
	req := rpc.Command.(*raft.AppendEntriesRequest)
	req.Entries[0].Type = raft.LogCommand
	require.NoError(t, log.StoreLogs(req.Entries))
	rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: 5, Success: true}, nil)
	resp := answer()
	assert.False(t, resp.Success, "an answer must not vouch for entries the log's end lost meanwhile")
	assert.EqualValues(t, 3, resp.Term)
}

// A connection to the Raft port that never sends its header does not hold
// up a member's shutdown (its header deadline is 10 s).
func TestRaftStream_StopEndsAConnectionWithoutAHeader(t *testing.T) {
	nodes := startNodes(t, 3, nil)
	n := nodes[2]
	self, _ := n.cfg.Self()
	stream := n.trans.stream
	nc, err := net.Dial("tcp", self.RaftAddr)
	require.NoError(t, err)
	defer nc.Close()
	tracked := func() bool {
		stream.mu.Lock()
		defer stream.mu.Unlock()
		for pc := range stream.conns {
			if pc.RemoteAddr().String() == nc.LocalAddr().String() {
				return true
			}
		}
		return false
	}
	eventually(t, "the connection to be tracked", tracked)
	n.Stop()
	done := make(chan struct{})
	go func() { n.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Wait still waiting 5 s after Stop: %v", n.Running(map[string]int{}))
	}
}

// A connection opened with appendsMagic, as members built between 3afd44c
// and d9b1c4c open theirs, gets no byte back: one that sends a request at
// once (3afd44c to 5cef280) is answered; one that waits for a byte first
// (5cef280 to d9b1c4c) is closed, so that its member turns to Raft's
// network transport.
func TestRaftStream_AppendsMagicConnections(t *testing.T) {
	nodes := startNodes(t, 3, nil)
	self, _ := nodes[2].cfg.Self()
	// Term 1 is the bootstrap's: the request below is of an old term once
	// this member heard of the first election (a leader may be elected
	// before it has).
	eventually(t, "the member to be past term 1", func() bool { return nodes[2].raftNow().CurrentTerm() > 1 })
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", self.RaftAddr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		_, err = nc.Write([]byte{appendsMagic, 9})
		require.NoError(t, err)
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
		return nc
	}

	sender := dial()
	var w frameWriter
	frame, err := encodeAppendRequest(&w, &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("9"), Addr: []byte("x")},
		Term: 1, Leader: []byte("x")})
	require.NoError(t, err)
	_, err = sender.Write(frame)
	require.NoError(t, err)
	answer, err := readFrame(bufio.NewReader(sender), maxAnswerFrame)
	require.NoError(t, err, "the request is answered, the answer's frame first")
	var resp raft.AppendEntriesResponse
	_, err = decodeAppendResponse(answer, &resp)
	require.NoError(t, err)
	assert.False(t, resp.Success, "a request of an old term")

	waiter := dial()
	start := time.Now()
	n, err := waiter.Read(make([]byte, 1))
	assert.Zero(t, n, "no byte is sent back")
	assert.ErrorIs(t, err, io.EOF, "the connection is closed")
	assert.GreaterOrEqual(t, time.Since(start), appendsFirstFrame/2)
}

// The pool closes connections left idle for poolIdle, as those to an
// address no member has any more are (a member that moved or left), and
// keeps those in use; a connection taken out meanwhile is not swept.
func TestAppendPool_ClosesConnectionsLeftIdle(t *testing.T) {
	now := time.Unix(1000, 0)
	p := appendPool{now: func() time.Time { return now }}
	pooled := func(target raft.ServerAddress) (near, far net.Conn) {
		near, far = net.Pipe()
		t.Cleanup(func() { near.Close(); far.Close() })
		p.put(target, newAppendConn(near, nil))
		return near, far
	}
	closed := func(far net.Conn) bool {
		far.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := far.Read(make([]byte, 1))
		return errors.Is(err, io.EOF)
	}
	_, movedFar := pooled("127.0.0.1:1002") // never used again
	_, liveFar := pooled("127.0.0.1:1001")
	_, outFar := pooled("127.0.0.1:1003")
	out := p.get("127.0.0.1:1003") // in use across the sweep
	for range 3 {                  // the live member's heartbeats
		now = now.Add(poolIdle / 2)
		p.put("127.0.0.1:1001", p.get("127.0.0.1:1001"))
	}
	assert.True(t, closed(movedFar), "the connection left idle is closed")
	assert.Nil(t, p.get("127.0.0.1:1002"))
	assert.False(t, closed(liveFar), "the connection in use is kept")
	assert.False(t, closed(outFar), "the connection taken out is kept")
	p.put("127.0.0.1:1003", out)
	assert.Same(t, out, p.get("127.0.0.1:1003"))
}
