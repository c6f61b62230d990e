package history

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/wire"
)

// Proxy records any client, in any language, as it talks to the servers:
// for each server address ("host:port") it listens on 127.0.0.1:0 and
// forwards every connection it accepts to that server, byte for byte both
// ways, reading a copy of the ZooKeeper protocol as it goes by into the
// history. It returns the listeners' connect string
// ("127.0.0.1:p1,127.0.0.1:p2,...", in the order of servers) for the
// client under test, which fails over between the listeners as it would
// between the servers. t.Cleanup closes the listeners and connections.
//
// What goes over the wire is recorded as Conn records the same calls:
// create (all four kinds), delete, setData, getData, exists, getChildren
// (both kinds), sync, check and multi, and the reads of a multiRead, each
// as its own get or children. Other requests (auth, ACLs, watch
// management, pings, closeSession) pass unrecorded. Each session is a
// client of its own: a client that resumes its session, through any
// listener, is the same client, and one that opens a new session (after an
// expiry) is a new one. A client's events are the server's watch
// notifications and the proxy's view of its connection: StateHasSession
// when the server grants the session, StateExpired when it refuses an
// expired one, StateDisconnected when the connection closes, at which
// point a request still unanswered ends with zk.ErrConnectionClosed
// (Outcome Unknown), as a client sees a connection loss.
//
// A call is placed in the history as the proxy forwards its request, and
// its answer as the proxy forwards the reply: both within the client's
// call, as the checks need. Paths are recorded as the server sees them (a
// client's chroot included); a call a client refuses before sending it (a
// bad path) is not recorded. A frame the proxy cannot decode is forwarded
// all the same and counted in Report.Undecoded; an answer it cannot decode
// leaves its call of unknown outcome. A client given the Proxy's connect
// string must not also be one the Recorder handed out, or its calls are
// recorded twice.
func (r *Recorder) Proxy(t testing.TB, servers ...string) string {
	t.Helper()
	if len(servers) == 0 {
		t.Fatalf("history: Proxy needs at least one server address")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{rec: r, ctx: ctx, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		cancel()
		p.close()
	})
	addrs := make([]string, len(servers))
	for i, server := range servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("history: proxy for %s: %v", server, fmt.Errorf("listen: %w", err))
		}
		if !p.listen(ln, server) {
			t.Fatalf("history: proxy for %s: closed while starting", server)
		}
		addrs[i] = ln.Addr().String()
	}
	return strings.Join(addrs, ",")
}

// proxyBuffer is the size of each direction's read buffer.
const proxyBuffer = 32 << 10

// maxFrame is the largest frame the proxy decodes: far above any server's
// jute.maxbuffer. A length prefix outside [0, maxFrame] is not ZooKeeper's
// protocol (a four-letter word, say): the stream is forwarded undecoded.
const maxFrame = 64 << 20

// dialTimeout bounds the proxy's connect to a server.
const dialTimeout = 10 * time.Second

// proxy is one Proxy call's listeners and connections.
type proxy struct {
	rec *Recorder
	ctx context.Context // done at cleanup: stops dials
	wg  sync.WaitGroup  // the accept loops and connections

	mu     sync.Mutex // guards the fields below
	closed bool
	lns    []net.Listener
	conns  map[net.Conn]struct{} // both ends of every forwarded connection
}

// listen starts accepting on ln for server; false if the proxy is closed.
func (p *proxy) listen(ln net.Listener, server string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		ln.Close()
		return false
	}
	p.lns = append(p.lns, ln)
	p.wg.Go(func() { p.accept(ln, server) })
	return true
}

// accept forwards each connection ln accepts to server, until ln closes.
func (p *proxy) accept(ln net.Listener, server string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed at cleanup (or unusable: the client then finds the listener gone)
		}
		if !p.track(c) {
			return
		}
		p.wg.Go(func() { p.serve(c, server) })
	}
}

// track adds c to the connections closed at cleanup; false (c closed) if
// the proxy is closed.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// forget closes c and drops it from the connections.
func (p *proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// close closes the listeners and connections and waits for their
// goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for _, ln := range p.lns {
		ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// serve forwards one client connection to server, recording it. A server
// that cannot be reached closes the client's connection, as a server down
// would.
func (p *proxy) serve(client net.Conn, server string) {
	defer p.forget(client)
	d := net.Dialer{Timeout: dialTimeout}
	srv, err := d.DialContext(p.ctx, "tcp", server)
	if err != nil || !p.track(srv) {
		return
	}
	defer p.forget(srv)
	pc := &proxyConn{rec: p.rec, server: server}
	p.rec.proxying(pc, true)
	defer p.rec.proxying(pc, false)
	var wg sync.WaitGroup
	wg.Go(func() { pc.pipe(client, srv, toServer) })
	pc.pipe(srv, client, toClient)
	wg.Wait()
	pc.lost()
}

// proxying adds pc to the open connections flush reads, or removes it.
func (r *Recorder) proxying(pc *proxyConn, open bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !open {
		delete(r.proxied, pc)
		return
	}
	if r.proxied == nil {
		r.proxied = map[*proxyConn]struct{}{}
	}
	r.proxied[pc] = struct{}{}
}

// flush records what the proxies have forwarded and not yet decoded: a
// proxy takes each frame before it forwards it and decodes it after, so
// that a client may have had a reply the history does not show yet.
func (r *Recorder) flush() {
	r.mu.Lock()
	conns := make([]*proxyConn, 0, len(r.proxied))
	for pc := range r.proxied {
		conns = append(conns, pc)
	}
	r.mu.Unlock()
	for _, pc := range conns {
		pc.decode()
	}
}

// direction is a way bytes go through a proxied connection.
type direction int

const (
	toServer direction = iota // requests
	toClient                  // replies and notifications
)

// proxyConn is one proxied connection as the recorder reads it. The
// forwarding goroutines hand it a copy of what they forward; it is decoded
// under mu, which is never held while forwarding.
type proxyConn struct {
	rec    *Recorder
	server string

	mu      sync.Mutex // guards the fields below
	streams [2]stream  // by direction
	todo    []frame    // frames cut from the streams, not yet decoded, in the order they were cut
	gone    bool       // the connection was lost: nothing more is recorded
	known   bool       // client and session are known
	client  int
	session int64
	early   []*Op  // calls made before the session was known, recorded once it is
	calls   []call // requests awaiting their replies, in order
}

// stream is one direction's bytes not yet cut into frames.
type stream struct {
	buf     []byte
	broken  bool // a length prefix out of range: the rest is forwarded undecoded
	started bool // its first frame (the connect request or response) was decoded
}

// frame is one frame's payload, with its place in the recorder's order: a
// request's is taken before it is forwarded (the server cannot have seen
// it before), a reply's before it is forwarded (the client cannot have
// seen it before, nor sent what it prompts).
type frame struct {
	dir     direction
	payload []byte
	seq     int64
	at      time.Duration
}

// call is a request awaiting its reply.
type call struct {
	xid int32
	op  wire.Op
	ops []*Op // what it records: none, one, or a multiRead's reads
}

// pipe forwards src to dst until either fails. At src's end it closes
// dst's writing side and lets the other direction run out.
func (pc *proxyConn) pipe(src, dst net.Conn, dir direction) {
	buf := make([]byte, proxyBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			pc.take(dir, buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				pc.lost()
				src.Close()
				dst.Close()
				return
			}
			pc.decode()
		}
		if err != nil {
			pc.lost()
			cw, ok := dst.(interface{ CloseWrite() error })
			if ok && errors.Is(err, io.EOF) {
				cw.CloseWrite()
			} else {
				src.Close()
				dst.Close()
			}
			return
		}
	}
}

// take copies b, read from one direction and about to be forwarded, and
// cuts the frames it completes, each with its place in the order.
func (pc *proxyConn) take(dir direction, b []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	s := &pc.streams[dir]
	if pc.gone || s.broken {
		return
	}
	s.buf = append(s.buf, b...)
	first := len(pc.todo)
	for len(s.buf) >= 4 {
		n := int64(int32(binary.BigEndian.Uint32(s.buf)))
		if n < 0 || n > maxFrame {
			s.broken, s.buf = true, nil
			pc.rec.undecoded.Add(1)
			break
		}
		if int64(len(s.buf)) < 4+n {
			break
		}
		end := 4 + int(n)
		pc.todo = append(pc.todo, frame{dir: dir, payload: s.buf[4:end:end]})
		s.buf = s.buf[end:]
	}
	if len(s.buf) == 0 {
		s.buf = nil // the frames keep the old array; the next bytes start a new one
	}
	if k := int64(len(pc.todo) - first); k > 0 {
		seq, at := pc.rec.seq.Add(k)-k+1, time.Since(pc.rec.start)
		for i := range pc.todo[first:] {
			pc.todo[first+i].seq, pc.todo[first+i].at = seq+int64(i), at
		}
	}
}

// decode records the frames cut so far.
func (pc *proxyConn) decode() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.decodeLocked()
}

func (pc *proxyConn) decodeLocked() {
	todo := pc.todo
	pc.todo = nil
	for _, f := range todo {
		if pc.gone {
			return
		}
		var ok bool
		if f.dir == toServer {
			ok = pc.request(f)
		} else {
			ok = pc.reply(f)
		}
		if !ok {
			pc.rec.undecoded.Add(1)
		}
	}
}

// lost records the connection's end: the client's StateDisconnected, and
// zk.ErrConnectionClosed for its unanswered requests. Nothing after it is
// recorded.
func (pc *proxyConn) lost() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.gone {
		return
	}
	pc.decodeLocked()
	pc.gone = true
	r := pc.rec
	if !pc.known {
		pc.calls, pc.early = nil, nil // a connection that never had a session: the server ran none of it
		return
	}
	pc.event(r.seq.Add(1), time.Since(r.start), zk.Event{Type: zk.EventSession, State: zk.StateDisconnected, Server: pc.server})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range pc.calls {
		for _, op := range c.ops {
			op.Return, op.ReturnTime, op.Pending = r.seq.Add(1), time.Since(r.start), false
			op.Err, op.Outcome = zk.ErrConnectionClosed, Unknown
		}
	}
	pc.calls = nil
}

// event records an event of the connection's client; pc.mu must be held.
func (pc *proxyConn) event(seq int64, at time.Duration, ev zk.Event) {
	if !pc.known {
		return
	}
	r := pc.rec
	r.mu.Lock()
	r.events = append(r.events, Event{Client: pc.client, Session: pc.session, Seq: seq, At: at, Event: ev})
	r.mu.Unlock()
}

// join makes the connection session's: that session's client, or a new
// one. The calls made before are recorded as the client's.
func (pc *proxyConn) join(session int64) {
	r := pc.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions == nil {
		r.sessions = map[int64]int{}
	}
	client, ok := r.sessions[session]
	if !ok {
		client = r.nextClient()
		r.sessions[session] = client
	}
	pc.known, pc.client, pc.session = true, client, session
	for _, op := range pc.early {
		op.Client, op.Session = client, session
		r.addLocked(op)
	}
	pc.early = nil
}

// request decodes a frame the client sent; false if it could not.
func (pc *proxyConn) request(f frame) bool {
	if s := &pc.streams[toServer]; !s.started {
		s.started = true
		var req wire.ConnectRequest
		if _, err := req.Decode(f.payload); err != nil {
			return false
		}
		if req.SessionID != 0 {
			pc.join(req.SessionID) // resumed, or refused as expired
		}
		return true
	}
	var h wire.RequestHeader
	n, err := h.Decode(f.payload)
	if err != nil {
		return false
	}
	switch h.Xid {
	case wire.XidNotification, wire.XidPing, wire.XidAuth, wire.XidSetWatches:
		return true // no reply to match, or one skipped
	}
	ops, err := requestOps(h.OpCode, f.payload[n:])
	if err != nil {
		ops = nil // its reply is still awaited, to keep the others matched
	}
	pc.calls = append(pc.calls, call{xid: h.Xid, op: h.OpCode, ops: ops})
	for _, op := range ops {
		op.Call, op.CallTime, op.Pending = f.seq, f.at, true
		if !pc.known {
			pc.early = append(pc.early, op)
			continue
		}
		op.Client, op.Session = pc.client, pc.session
		pc.rec.mu.Lock()
		pc.rec.addLocked(op)
		pc.rec.mu.Unlock()
	}
	return err == nil
}

// requestOps returns what a request records, as Conn records the same
// call: nothing for the requests Conn does not record.
func requestOps(code wire.Op, body []byte) ([]*Op, error) {
	decode := func(rec wire.Record) error {
		if _, err := rec.Decode(body); err != nil {
			return fmt.Errorf("history: decode %v request: %w", code, err)
		}
		return nil
	}
	one := func(rec wire.Record, op func() *Op) ([]*Op, error) {
		if err := decode(rec); err != nil {
			return nil, err
		}
		return []*Op{op()}, nil
	}
	switch code {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		var q wire.CreateRequest
		return one(&q, func() *Op { return &Op{Kind: "create", Path: q.Path, Data: q.Data, Flags: q.Flags} })
	case wire.OpCreateTTL:
		var q wire.CreateTTLRequest
		return one(&q, func() *Op { return &Op{Kind: "create", Path: q.Path, Data: q.Data, Flags: q.Flags} })
	case wire.OpDelete:
		var q wire.DeleteRequest
		return one(&q, func() *Op { return &Op{Kind: "delete", Path: q.Path, Version: q.Version} })
	case wire.OpSetData:
		var q wire.SetDataRequest
		return one(&q, func() *Op { return &Op{Kind: "set", Path: q.Path, Data: q.Data, Version: q.Version} })
	case wire.OpCheck:
		var q wire.CheckVersionRequest
		return one(&q, func() *Op { return &Op{Kind: "check", Path: q.Path, Version: q.Version} })
	case wire.OpExists, wire.OpGetData, wire.OpGetChildren, wire.OpGetChildren2:
		kind := "children"
		switch code {
		case wire.OpExists:
			kind = "exists"
		case wire.OpGetData:
			kind = "get"
		}
		var q wire.PathWatchRequest
		return one(&q, func() *Op { return &Op{Kind: kind, Path: q.Path, Watch: q.Watch} })
	case wire.OpSync:
		var q wire.PathRequest
		return one(&q, func() *Op { return &Op{Kind: "sync", Path: q.Path} })
	case wire.OpMulti, wire.OpMultiRead:
		var q wire.MultiRequest
		if err := decode(&q); err != nil {
			return nil, err
		}
		if q.Read != (code == wire.OpMultiRead) {
			return nil, nil // the server refuses it whole
		}
		return multiOps(q)
	}
	return nil, nil
}

// multiOps returns what a multi records (one op, its ops in Sub) or a
// multiRead (each read as an op of its own).
func multiOps(q wire.MultiRequest) ([]*Op, error) {
	var subs []*Op
	for _, m := range q.Ops {
		var sub *Op
		switch v := m.Req.(type) {
		case *wire.CreateRequest:
			sub = &Op{Kind: "create", Path: v.Path, Data: v.Data, Flags: v.Flags}
		case *wire.CreateTTLRequest:
			sub = &Op{Kind: "create", Path: v.Path, Data: v.Data, Flags: v.Flags}
		case *wire.DeleteRequest:
			sub = &Op{Kind: "delete", Path: v.Path, Version: v.Version}
		case *wire.SetDataRequest:
			sub = &Op{Kind: "set", Path: v.Path, Data: v.Data, Version: v.Version}
		case *wire.CheckVersionRequest:
			sub = &Op{Kind: "check", Path: v.Path, Version: v.Version}
		case *wire.PathWatchRequest:
			kind := "get"
			if m.Type == wire.OpGetChildren {
				kind = "children"
			}
			sub = &Op{Kind: kind, Path: v.Path}
		default:
			return nil, fmt.Errorf("history: decode multi: sub-op %v of type %T", m.Type, m.Req)
		}
		subs = append(subs, sub)
	}
	if q.Read {
		return subs, nil
	}
	return []*Op{{Kind: "multi", Sub: subs}}, nil
}

// reply decodes a frame the server sent; false if it could not.
func (pc *proxyConn) reply(f frame) bool {
	if s := &pc.streams[toClient]; !s.started {
		s.started = true
		var res wire.ConnectResponse
		if _, err := res.Decode(f.payload); err != nil {
			return false
		}
		if res.SessionID == 0 { // the session asked for had expired: the server closes the connection
			pc.event(f.seq, f.at, zk.Event{Type: zk.EventSession, State: zk.StateExpired, Server: pc.server})
			return true
		}
		if !pc.known || pc.session != res.SessionID {
			pc.join(res.SessionID)
		}
		pc.event(f.seq, f.at, zk.Event{Type: zk.EventSession, State: zk.StateHasSession, Server: pc.server})
		return true
	}
	var h wire.ReplyHeader
	n, err := h.Decode(f.payload)
	if err != nil {
		return false
	}
	body := f.payload[n:]
	switch h.Xid {
	case wire.XidNotification:
		var ev wire.WatcherEvent
		if _, err := ev.Decode(body); err != nil {
			return false
		}
		pc.event(f.seq, f.at, zk.Event{Type: zk.EventType(ev.Type), State: zk.State(ev.State), Path: ev.Path})
		return true
	case wire.XidPing, wire.XidAuth, wire.XidSetWatches:
		return true
	}
	for i, c := range pc.calls {
		if c.xid == h.Xid {
			pc.calls = append(pc.calls[:i:i], pc.calls[i+1:]...)
			return pc.answer(c, h.Err, body, f.seq, f.at)
		}
	}
	return false // a reply to no request seen
}

// errUndecodable is the Err of a call whose reply the proxy could not
// decode: its outcome is unknown.
var errUndecodable = errors.New("history: the proxy could not decode the reply")

// answer records c's reply; false if its body could not be decoded (the
// call's outcome is then unknown).
func (pc *proxyConn) answer(c call, code wire.Code, body []byte, seq int64, at time.Duration) bool {
	if len(c.ops) == 0 {
		return true
	}
	r := pc.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range c.ops {
		op.Return, op.ReturnTime, op.Pending = seq, at, false
	}
	if code != wire.CodeOK {
		err := codeError(code)
		for _, op := range c.ops {
			op.Err, op.Outcome = err, outcome(err)
			if op.Kind == "exists" && code == wire.CodeNoNode {
				op.Err, op.Outcome = nil, OK // go-zookeeper's Exists: false, no error
			}
		}
		return true
	}
	if err := fill(c, body); err != nil {
		for _, op := range c.ops {
			op.Err, op.Outcome = fmt.Errorf("%w: %w", errUndecodable, err), Unknown
		}
		return false
	}
	return true
}

// fill sets the results of c's ops from the body of its successful reply.
func fill(c call, body []byte) error {
	op := c.ops[0]
	decode := func(rec wire.Record) error {
		if _, err := rec.Decode(body); err != nil {
			return fmt.Errorf("%v reply: %w", c.op, err)
		}
		return nil
	}
	switch c.op {
	case wire.OpCreate:
		var a wire.CreateResponse
		if err := decode(&a); err != nil {
			return err
		}
		op.Created = a.Path
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		var a wire.Create2Response
		if err := decode(&a); err != nil {
			return err
		}
		op.Created = a.Path
	case wire.OpExists, wire.OpSetData:
		var a wire.StatResponse
		if err := decode(&a); err != nil {
			return err
		}
		op.Stat = zkStat(a.Stat)
	case wire.OpGetData:
		var a wire.GetDataResponse
		if err := decode(&a); err != nil {
			return err
		}
		op.Result, op.Stat = a.Data, zkStat(a.Stat)
	case wire.OpGetChildren:
		var a wire.GetChildrenResponse
		if err := decode(&a); err != nil {
			return err
		}
		op.Names = a.Children
	case wire.OpGetChildren2:
		var a wire.GetChildren2Response
		if err := decode(&a); err != nil {
			return err
		}
		op.Names, op.Stat = a.Children, zkStat(a.Stat)
	case wire.OpMulti:
		var a wire.MultiResponse
		if err := decode(&a); err != nil {
			return err
		}
		fillMulti(op, a.Results)
	case wire.OpMultiRead:
		var a wire.MultiResponse
		if err := decode(&a); err != nil {
			return err
		}
		if len(a.Results) != len(c.ops) {
			return fmt.Errorf("multiRead reply: %d results for %d reads", len(a.Results), len(c.ops))
		}
		for i, res := range a.Results {
			read := c.ops[i]
			switch res.Type {
			case wire.OpGetData:
				read.Result, read.Stat = res.Data, zkStat(res.Stat)
			case wire.OpGetChildren:
				read.Names = res.Children
			default:
				read.Err = codeError(res.Err)
				read.Outcome = outcome(read.Err)
			}
		}
	}
	return nil
}

// fillMulti sets a multi's results as go-zookeeper returns them: its error
// is the first of its ops', and each op has its own.
func fillMulti(op *Op, results []wire.MultiResult) {
	for i, res := range results {
		var err error
		if res.Type == wire.OpError {
			err = codeError(res.Err)
		}
		if err != nil && op.Err == nil {
			op.Err = err
		}
		if len(results) != len(op.Sub) {
			continue
		}
		sub := op.Sub[i]
		sub.Err, sub.Outcome = err, outcome(err)
		switch res.Type {
		case wire.OpCreate, wire.OpCreate2:
			sub.Created = res.Path
		case wire.OpSetData:
			sub.Stat = zkStat(res.Stat)
		}
	}
	op.Outcome = outcome(op.Err)
}

func zkStat(s wire.Stat) *zk.Stat {
	st := zk.Stat(s)
	return &st
}

// codeErrors are the errors go-zookeeper returns for the server's error
// codes.
var codeErrors = map[wire.Code]error{
	wire.CodeAPIError:                zk.ErrAPIError,
	wire.CodeNoNode:                  zk.ErrNoNode,
	wire.CodeNoAuth:                  zk.ErrNoAuth,
	wire.CodeBadVersion:              zk.ErrBadVersion,
	wire.CodeNoChildrenForEphemerals: zk.ErrNoChildrenForEphemerals,
	wire.CodeNodeExists:              zk.ErrNodeExists,
	wire.CodeNotEmpty:                zk.ErrNotEmpty,
	wire.CodeSessionExpired:          zk.ErrSessionExpired,
	wire.CodeInvalidACL:              zk.ErrInvalidACL,
	wire.CodeAuthFailed:              zk.ErrAuthFailed,
	wire.CodeClosing:                 zk.ErrClosing,
	wire.CodeNothing:                 zk.ErrNothing,
	wire.CodeSessionMoved:            zk.ErrSessionMoved,
	wire.CodeReconfigDisabled:        zk.ErrReconfigDisabled,
	wire.CodeBadArguments:            zk.ErrBadArguments,
}

// codeError returns the error go-zookeeper returns for a reply's error
// code: nil for CodeOK, and for a code it has no error of its own for
// (connection loss, an operation timeout, ...) an error with its text,
// whose outcome is unknown.
func codeError(code wire.Code) error {
	if code == wire.CodeOK {
		return nil
	}
	if err, ok := codeErrors[code]; ok {
		return err
	}
	return fmt.Errorf("unknown error: %d", int32(code))
}
