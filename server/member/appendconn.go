package member

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/wire"
)

// AppendEntries over connections of their own (see appendwire.go for why).
//
// A member dials them on the other's Raft port with appendsTakenMagic in
// place of peerMagic; raftStream hands such a connection to serveAppends
// rather than to Raft's network transport, which keeps every other RPC
// (votes, snapshots, TimeoutNow). The sending side mirrors the network
// transport's: a small pool of connections for single requests (heartbeats
// among them) and a connection per pipeline, 10 s to send or answer
// (peerIOTimeout). A member takes such a connection by sending
// appendsTakenMagic back; one of an older zkraft closes it instead, and is
// then sent its AppendEntries over Raft's network transport (see
// olderPeers), so that a cluster may be upgraded member by member.

const (
	// appendsMagic opens the AppendEntries connections of members built
	// between 3afd44c and d9b1c4c: they are served, never dialed (see
	// raftStream.route).
	appendsMagic = 0x7b
	// appendsTakenMagic opens those of later members, which wait for the
	// same byte back before they send.
	appendsTakenMagic = 0x7c
	// peerIOTimeout is how long a Raft RPC may take to send or answer, on
	// these connections as on Raft's network transport.
	peerIOTimeout = 10 * time.Second
	// maxAppendsInFlight is how many AppendEntries a pipeline sends before
	// the first is answered, as Raft's network transport allows.
	maxAppendsInFlight = 128
)

// appendConn is the sending side of one connection.
type appendConn struct {
	net.Conn
	r         *wire.FrameReader
	w         *bufio.Writer
	enc       frameWriter
	capCommit func(uint64) uint64 // caps each request's commit index, if set (peerTransport.capCommit)
}

func newAppendConn(nc net.Conn, capCommit func(uint64) uint64) *appendConn {
	return &appendConn{Conn: nc, r: wire.NewFrameReader(nc, maxAnswerFrame), w: bufio.NewWriterSize(nc, 64<<10),
		capCommit: capCommit}
}

// send sends req, or as many of its entries as a frame carries (see
// encodeAppendRequest).
func (c *appendConn) send(req *raft.AppendEntriesRequest) error {
	if c.capCommit != nil {
		req.LeaderCommitIndex = c.capCommit(req.LeaderCommitIndex)
	}
	frame, err := encodeAppendRequest(&c.enc, req)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(frame); err != nil {
		return err
	}
	if cap(c.enc.buf) > 1<<20 { // a catch-up's large frame is not kept
		c.enc.buf = nil
	}
	return c.w.Flush()
}

// receive reads an answer into resp. It returns the error the far side
// answered with, and err if the connection failed or the answer was
// malformed (the connection is then of no further use).
func (c *appendConn) receive(resp *raft.AppendEntriesResponse) (answered, err error) {
	frame, err := c.r.Next()
	if err != nil {
		return nil, err
	}
	return decodeAppendResponse(frame, resp)
}

// appendPool keeps idle connections for single AppendEntries, per member.
// raftStream closes them with the rest when the node stops. A connection
// idle for poolIdle is closed at the next put: Raft sends every member it
// replicates to a heartbeat far more often, so only connections to an
// address no member has any more (a reconfig moved the member, or it left)
// stay idle that long, and they would otherwise stay open for the
// process's life.
type appendPool struct {
	mu    sync.Mutex
	idle  map[raft.ServerAddress][]pooledAppendConn // oldest first
	swept time.Time                                 // the last look for idle ones
	now   func() time.Time                          // time.Now; a test's clock
}

type pooledAppendConn struct {
	c     *appendConn
	since time.Time // when it was put back
}

// poolIdle is how long a pooled connection may sit unused.
const poolIdle = time.Minute

func (p *appendPool) get(target raft.ServerAddress) *appendConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	conns := p.idle[target]
	if len(conns) == 0 {
		return nil
	}
	c := conns[len(conns)-1].c
	conns[len(conns)-1] = pooledAppendConn{}
	p.idle[target] = conns[:len(conns)-1]
	return c
}

func (p *appendPool) put(target raft.ServerAddress, c *appendConn) {
	p.mu.Lock()
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	var stale []*appendConn
	if now.Sub(p.swept) >= poolIdle {
		p.swept = now
		stale = p.sweepLocked(now)
	}
	if len(p.idle[target]) >= maxPooledConns {
		stale = append(stale, c)
	} else {
		if p.idle == nil {
			p.idle = make(map[raft.ServerAddress][]pooledAppendConn)
		}
		p.idle[target] = append(p.idle[target], pooledAppendConn{c: c, since: now})
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.Close()
	}
}

// sweepLocked takes the connections idle for poolIdle out of the pool and
// returns them, to close.
func (p *appendPool) sweepLocked(now time.Time) []*appendConn {
	var stale []*appendConn
	for target, conns := range p.idle {
		n := 0
		for n < len(conns) && now.Sub(conns[n].since) >= poolIdle {
			stale = append(stale, conns[n].c)
			n++
		}
		if n == len(conns) {
			delete(p.idle, target)
			continue
		}
		p.idle[target] = slices.Delete(conns, 0, n)
	}
	return stale
}

// A member that refused an AppendEntries connection is offered one again
// after olderRecheckFirst, then after twice as long each time it refuses
// again having answered over Raft's transport meanwhile, up to
// olderRecheck.
const (
	olderRecheckFirst = time.Second
	olderRecheck      = 30 * time.Second
)

// olderPeers are the members that refused an AppendEntries connection:
// members of a zkraft from before these connections, during an upgrade done
// member by member. They are sent AppendEntries over Raft's network
// transport, one at a time (no pipeline: Raft falls back to single
// requests when a pipeline is refused), as those members send theirs, and
// offered a connection again from time to time (they may have been
// upgraded). A member that is stopping, or one a test's cut link or a
// proxy keeps out, refuses too; it is then sent AppendEntries the
// slower way, as correctly, and offered a connection again a second later
// (it answered nothing over Raft's transport meanwhile).
type olderPeers struct {
	mu      sync.Mutex
	members map[raft.ServerAddress]*olderPeer
}

// olderPeer is a member that refused a connection since it last took one.
type olderPeer struct {
	until time.Time     // when it is offered one again
	wait  time.Duration // how long it waited for that
	// answered records that Raft's transport carried an AppendEntries to it
	// since its last refusal: it runs, and refused as an older member does
	// (one that was only down waits no longer for having been down).
	answered bool
	told     bool // refused having answered: logged as an older member
}

// is reports whether the member at target refused a connection lately,
// and is not to be offered one yet.
func (o *olderPeers) is(target raft.ServerAddress) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.members[target]
	return p != nil && time.Now().Before(p.until)
}

// refused notes that the member at target refused a connection. It
// reports older the first time since the member last took a connection
// that it refuses having answered over Raft's transport since its
// previous refusal: it runs, and refuses as a member of an older zkraft
// does. A member that was stopping, or that a cut link kept out, refuses
// too, and is told from an older one only so.
func (o *olderPeers) refused(target raft.ServerAddress) (older bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.members[target]
	if p == nil {
		if o.members == nil {
			o.members = make(map[raft.ServerAddress]*olderPeer)
		}
		p = &olderPeer{wait: olderRecheckFirst}
		o.members[target] = p
	} else if time.Now().Before(p.until) {
		return false // a refusal of the same round of offers (a pipeline's and a heartbeat's, say)
	} else if p.answered {
		p.wait = min(2*p.wait, olderRecheck)
		older, p.told = !p.told, true
	}
	p.answered = false
	p.until = time.Now().Add(p.wait)
	return older
}

// answeredOverRaft notes that the member at target answered an
// AppendEntries over Raft's network transport.
func (o *olderPeers) answeredOverRaft(target raft.ServerAddress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p := o.members[target]; p != nil {
		p.answered = true
	}
}

// took notes that the member at target took a connection.
func (o *olderPeers) took(target raft.ServerAddress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.members, target)
}

// dialAppends connects to the member at target for AppendEntries whose
// commit index capCommit caps, if set. It gives errNoAppends at once for a
// member that refused one lately.
func (t *peerTransport) dialAppends(target raft.ServerAddress, capCommit func(uint64) uint64) (*appendConn, error) {
	if t.olderNet || t.older.is(target) {
		return nil, errNoAppends
	}
	nc, err := t.stream.dialAppends(target, peerIOTimeout)
	switch {
	case errors.Is(err, errNoAppends):
		if t.older.refused(target) {
			t.log.Info("member runs an older zkraft (it refuses connections for AppendEntries and answers "+
				"them over Raft's transport): sending them that way until it takes one", "member", target)
		} else {
			t.log.Debug("member refused a connection for AppendEntries (stopping, kept out, or of an older "+
				"zkraft): sending them over Raft's transport for now", "member", target)
		}
		return nil, err
	case err != nil:
		return nil, err
	}
	t.older.took(target)
	return newAppendConn(nc, capCommit), nil
}

// AppendEntries implements raft.Transport, retrying on a stale pooled
// connection (see retryStale; an AppendEntries may be received twice), and
// over Raft's network transport to a member that takes no AppendEntries
// connection (olderPeers).
func (t *peerTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress,
	args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := retryStale(func() error { return t.appendOnce(target, args, resp) })
	if !errors.Is(err, errNoAppends) {
		return err
	}
	if t.capCommit != nil {
		args.LeaderCommitIndex = t.capCommit(args.LeaderCommitIndex)
	}
	err = retryStale(func() error { return t.NetworkTransport.AppendEntries(id, target, args, resp) })
	if err == nil {
		t.older.answeredOverRaft(target)
	}
	return err
}

func (t *peerTransport) appendOnce(target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	c := t.appends.get(target)
	if c == nil {
		var err error
		if c, err = t.dialAppends(target, t.capCommit); err != nil {
			return err
		}
	}
	c.SetDeadline(time.Now().Add(peerIOTimeout))
	if err := c.send(args); err != nil {
		c.Close()
		return err
	}
	answered, err := c.receive(resp)
	if err != nil {
		c.Close()
		return err
	}
	t.appends.put(target, c)
	return answered
}

// AppendEntriesPipeline implements raft.Transport. A member that takes no
// AppendEntries connection gets no pipeline: Raft then sends it single
// requests (see olderPeers).
func (t *peerTransport) AppendEntriesPipeline(_ raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.appendPipeline(target, t.capCommit)
	if errors.Is(err, errNoAppends) {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	return p, err
}

// noticePipeline opens the pipeline commit notices go over: to a member
// that takes no AppendEntries connection, one of Raft's network transport
// (a notice link reads every answer itself, and has at most one
// outstanding).
func (t *peerTransport) noticePipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.appendPipeline(target, nil)
	if errors.Is(err, errNoAppends) {
		return t.NetworkTransport.AppendEntriesPipeline(id, target)
	}
	return p, err
}

// appendPipeline opens a pipeline to the member at target, whose requests'
// commit index capCommit caps, if set.
func (t *peerTransport) appendPipeline(target raft.ServerAddress, capCommit func(uint64) uint64) (*appendPipe, error) {
	c, err := t.dialAppends(target, capCommit)
	if err != nil {
		return nil, err
	}
	p := &appendPipe{conn: c, sent: make(chan *appendFuture, maxAppendsInFlight),
		done: make(chan raft.AppendFuture, maxAppendsInFlight), shut: make(chan struct{})}
	if !t.spawn("raft-append-answers", func() { p.readAnswers(t.quit) }) {
		c.Close()
		return nil, ErrClosed
	}
	return p, nil
}

// appendPipe is a pipeline of AppendEntries over one connection: requests
// go out as Raft sends them, and a goroutine reads the answers in order.
// The answers read are always handed on, queued if Raft is not taking them:
// Raft stops taking them after a failed one, while its sender may be
// waiting for room among the requests in flight, which only reading
// answers makes (it would wait for ever, and so would Raft's shutdown).
type appendPipe struct {
	conn *appendConn
	sent chan *appendFuture // sent, not yet answered
	done chan raft.AppendFuture
	shut chan struct{}
	once sync.Once
}

// AppendEntries implements raft.AppendPipeline.
func (p *appendPipe) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	f := &appendFuture{start: time.Now(), req: args, resp: resp, answered: make(chan struct{})}
	// Room first: an answer read may then always be handed on.
	select {
	case p.sent <- f:
	case <-p.shut:
		return nil, raft.ErrPipelineShutdown
	}
	p.conn.SetWriteDeadline(time.Now().Add(peerIOTimeout))
	if err := p.conn.send(args); err != nil {
		p.Close() // the answer reader fails what was sent
		return nil, err
	}
	return f, nil
}

// readAnswers reads the answers to what was sent, in order, until the
// pipeline closes (or the node stops, which closes it).
func (p *appendPipe) readAnswers(quit <-chan struct{}) {
	var ready []raft.AppendFuture // answered, not yet taken by Raft
	var broken error
	for {
		// Hand on what is ready without waiting, then wait for whatever
		// comes first.
		for len(ready) > 0 && offer(p.done, ready[0]) {
			ready[0] = nil
			ready = ready[1:]
		}
		var out chan raft.AppendFuture
		var next raft.AppendFuture
		if len(ready) > 0 {
			out, next = p.done, ready[0]
		}
		select {
		case f := <-p.sent:
			if broken == nil {
				p.conn.SetReadDeadline(time.Now().Add(peerIOTimeout))
				if f.err, broken = p.conn.receive(f.resp); broken != nil {
					p.conn.Close()
				}
			}
			if broken != nil {
				f.err = broken
			}
			close(f.answered)
			ready = append(ready, f)
		case out <- next:
			ready[0] = nil
			ready = ready[1:]
		case <-p.shut:
			return
		case <-quit:
			p.Close()
			return
		}
	}
}

// offer sends f on ch if that does not wait.
func offer(ch chan<- raft.AppendFuture, f raft.AppendFuture) bool {
	select {
	case ch <- f:
		return true
	default:
		return false
	}
}

// Consumer implements raft.AppendPipeline.
func (p *appendPipe) Consumer() <-chan raft.AppendFuture { return p.done }

// Close implements raft.AppendPipeline.
func (p *appendPipe) Close() error {
	p.once.Do(func() {
		close(p.shut)
		p.conn.Close()
	})
	return nil
}

// appendFuture is a pipelined AppendEntries.
type appendFuture struct {
	start    time.Time
	req      *raft.AppendEntriesRequest
	resp     *raft.AppendEntriesResponse
	err      error
	answered chan struct{} // closed once err and resp are set
}

func (f *appendFuture) Error() error {
	<-f.answered
	return f.err
}

func (f *appendFuture) Start() time.Time                      { return f.start }
func (f *appendFuture) Request() *raft.AppendEntriesRequest   { return f.req }
func (f *appendFuture) Response() *raft.AppendEntriesResponse { return f.resp }

// serveAppends answers the AppendEntries a member sends over c, in order,
// until c or the node closes. Each goes to Raft as if through its network
// transport (see run), heartbeats straight to the heartbeat handler as
// that transport does. Requests of a pipeline that are already waiting
// when one is read, and that carry the entries following its own, go to
// Raft with it as one (see mergeAppends). Answers are sent by
// answerAppends, which holds each that says entries were stored until
// they are on disk (see heldAnswer): meanwhile the next requests go to
// Raft, and a durable member writes what they carry with the entries
// before, in one fsync, where it wrote each request's alone.
func (t *peerTransport) serveAppends(c net.Conn) {
	defer c.Close()
	answers := make(chan heldAnswer, maxAppendsInFlight)
	sent := make(chan struct{})
	if !t.spawn("raft-append-serve-answers", func() { t.answerAppends(c, answers, sent) }) {
		return
	}
	defer func() {
		close(answers)
		<-sent // every answer Raft gave is sent (or the connection failed)
	}()
	r := bufio.NewReaderSize(c, 256<<10)
	var next *raft.AppendEntriesRequest // read, and not merged into the one before
	for first := true; ; first = false {
		req := next
		next = nil
		if req == nil {
			var err error
			if req, err = t.readAppend(c, r); err != nil {
				return
			}
		}
		if first { // the first request may have had a deadline (see raftStream.route)
			c.SetReadDeadline(time.Time{})
		}
		merged := 1
		// Only a request with entries has entries a next one may follow
		// (not a heartbeat, nor a commit notice).
		for framed(r) && len(req.Entries) > 0 && len(req.Entries) < maxMergedEntries {
			more, err := t.readAppend(c, r)
			if err != nil {
				return
			}
			if !mergeAppends(req, more) {
				next = more
				break
			}
			merged++
		}
		a := heldAnswer{merged: merged}
		if t.hold != nil && len(req.Entries) > 0 {
			a.upTo, a.epoch = req.Entries[len(req.Entries)-1].Index, t.hold.writeEpoch()
		}
		respCh := make(chan raft.RPCResponse, 1)
		rpc := raft.RPC{Command: req, RespChan: respCh}
		if hb := t.heartbeat.Load(); hb != nil && isHeartbeat(req) {
			(*hb)(rpc)
		} else if !t.toRaft(rpc) {
			return
		}
		select {
		case a.RPCResponse = <-respCh:
		case <-t.quit:
			return
		}
		select {
		case answers <- a:
		case <-sent: // the connection failed
			return
		}
	}
}

// heldAnswer is Raft's answer to a request read by serveAppends (merged
// requests' worth of it) as answerAppends sends it. A durable member's
// Raft stores a request's entries without waiting for its disk (see
// overlapLog): an answer that says they were stored is held until they are
// (upTo), and says otherwise if entries were deleted from the log's end
// since the request was read (epoch).
type heldAnswer struct {
	raft.RPCResponse
	merged      int
	upTo, epoch uint64
}

// answerAppends sends the answers serveAppends queues, in order, until it
// closes the queue; then it closes sent. It closes c if an answer cannot
// be given (a write failed), so the member sending learns of it.
func (t *peerTransport) answerAppends(c net.Conn, answers <-chan heldAnswer, sent chan<- struct{}) {
	defer close(sent)
	w := bufio.NewWriterSize(c, 16<<10)
	var enc frameWriter
	for a := range answers {
		resp, _ := a.Response.(*raft.AppendEntriesResponse)
		if resp == nil {
			resp = &raft.AppendEntriesResponse{}
		}
		if a.upTo > 0 && resp.Success && a.Error == nil {
			// Answers already written out go before a wait for the disk.
			if w.Buffered() > 0 && !t.hold.written(a.upTo) {
				if err := w.Flush(); err != nil {
					c.Close()
					return
				}
			}
			var err error
			if resp, err = t.heldResponse(resp, a.upTo, a.epoch); err != nil {
				c.Close() // the member sending learns of it as a failed connection
				return
			}
		}
		var msg string
		if a.Error != nil {
			msg = a.Error.Error()
		}
		frame := encodeAppendResponse(&enc, msg, resp)
		for range a.merged { // one answer for each request
			if _, err := w.Write(frame); err != nil {
				c.Close()
				return
			}
		}
		if len(answers) == 0 {
			if err := w.Flush(); err != nil {
				c.Close()
				return
			}
		}
	}
}

// toRaft hands rpc to Raft (see run), and reports false if the node
// stopped first.
func (t *peerTransport) toRaft(rpc raft.RPC) bool {
	select {
	case t.appendsIn <- rpc:
		return true
	case <-t.quit:
		return false
	}
}

// maxMergedEntries bounds the entries requests are merged up to.
const maxMergedEntries = 4096

// readAppend reads and decodes the next request on c.
func (t *peerTransport) readAppend(c net.Conn, r *bufio.Reader) (*raft.AppendEntriesRequest, error) {
	frame, err := readFrame(r, maxAppendFrame)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			t.log.Debug("AppendEntries connection ended", "err", err)
		}
		return nil, err
	}
	req, err := decodeAppendRequest(frame)
	if err != nil {
		t.log.Warn("malformed AppendEntries from a member; closing its connection", "remote", c.RemoteAddr(), "err", err)
	}
	return req, err
}

// framed reports whether a whole frame is waiting in r: reading it will
// not wait for the network.
func framed(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	n, err := r.Peek(4)
	return err == nil && r.Buffered()-4 >= int(binary.BigEndian.Uint32(n))
}

// mergeAppends appends more to req if more carries the entries that follow
// req's, from the same leader in the same term, and reports whether it
// did. Raft then does with the one what it would have done with the two in
// turn: the entries are checked against the log from req's previous entry
// on, stored, and committed up to the later commit index; the answer to
// the one answers each (Raft's leader reads from an answer only whether it
// succeeded, a newer term and the member's last index).
func mergeAppends(req, more *raft.AppendEntriesRequest) bool {
	last := req.Entries[len(req.Entries)-1]
	if len(more.Entries) == 0 || more.Term != req.Term || more.PrevLogEntry != last.Index ||
		more.PrevLogTerm != last.Term || !bytes.Equal(more.ID, req.ID) || !bytes.Equal(more.Addr, req.Addr) ||
		!bytes.Equal(more.Leader, req.Leader) || more.ProtocolVersion != req.ProtocolVersion {
		return false
	}
	req.Entries = append(req.Entries, more.Entries...)
	req.LeaderCommitIndex = max(req.LeaderCommitIndex, more.LeaderCommitIndex)
	return true
}

// isHeartbeat reports whether req is one of Raft's heartbeats, as its
// network transport tells them.
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	leader := req.Addr
	if len(leader) == 0 {
		leader = req.Leader
	}
	return req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}
