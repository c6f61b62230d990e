// Package chroot serves ZooKeeper clients on a listener of its own whose
// sessions see one znode as their root, as a client-side chroot does
// (host:port/app in the Java client): it relays each connection to a
// server, puts the root in front of every path a client sends, and takes it
// off every path that comes back (created paths, sync's path, a session's
// ephemerals, the paths of watch events). Clients that cannot take a chroot
// in their connect string, such as go-zookeeper, get one this way.
//
// It knows the wire protocol, not the server: the server sees ordinary
// sessions with ordinary (longer) paths. /zookeeper/config stays the
// server's, as the Java client's getConfig reads it outside its chroot.
package chroot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// Proxy is a listener whose connections are relayed to a server under a
// root.
type Proxy struct {
	root     string
	target   string
	maxFrame int
	ln       net.Listener

	mu       sync.Mutex // guards the fields below
	relays   map[*relay]struct{}
	sessions []int64 // in the order they were first seen
	closed   bool
	wg       sync.WaitGroup
}

// Listen starts a proxy on 127.0.0.1, on a port the OS chooses, relaying to
// the server at target with root as the clients' "/". maxFrame bounds the
// frames it relays, as jute.maxbuffer bounds the server's.
func Listen(root, target string, maxFrame int) (*Proxy, error) {
	if !strings.HasPrefix(root, "/") || root == "/" || strings.HasSuffix(root, "/") {
		return nil, errors.New("chroot: root must be an absolute path other than /, without a trailing slash")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{root: root, target: target, maxFrame: maxFrame, ln: ln, relays: make(map[*relay]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Root returns the server path the proxy's clients see as "/".
func (p *Proxy) Root() string { return p.root }

// Sessions returns the ids of the sessions made or resumed through the
// proxy, in the order they were first seen.
func (p *Proxy) Sessions() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sessions)
}

// Owns reports whether a session was made or resumed through the proxy.
func (p *Proxy) Owns(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.sessions, id)
}

// DropConnections closes every connection relayed now, as a network
// failure would; the sessions live on, and their clients may resume them
// through the proxy.
func (p *Proxy) DropConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r := range p.relays {
		r.close()
	}
}

// Close stops accepting, closes every relayed connection, and returns once
// the proxy's goroutines are done.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for r := range p.relays {
		r.close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		r := &relay{p: p, client: c, pending: make(map[int32][]wire.Op)}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.relays[r] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go r.run()
	}
}

func (p *Proxy) sawSession(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != 0 && !slices.Contains(p.sessions, id) {
		p.sessions = append(p.sessions, id)
	}
}

// maxReply bounds the frames relayed from the server, which sends replies
// larger than jute.maxbuffer (a huge getChildren) up to its queue's bound.
const maxReply = 256 << 20

// configPath is where ZooKeeper keeps the ensemble's configuration.
const configPath = "/zookeeper/config"

// relay is one client connection and its connection to the server.
type relay struct {
	p              *Proxy
	client, server net.Conn
	closeOnce      sync.Once

	mu      sync.Mutex          // guards pending
	pending map[int32][]wire.Op // opcodes of requests sent, by xid, awaiting replies
}

func (r *relay) close() {
	r.closeOnce.Do(func() {
		r.client.Close()
		if r.server != nil {
			r.server.Close()
		}
	})
}

func (r *relay) run() {
	defer r.p.wg.Done()
	defer func() {
		r.close()
		r.p.mu.Lock()
		delete(r.p.relays, r)
		r.p.mu.Unlock()
	}()
	server, err := net.DialTimeout("tcp", r.p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer server.Close() // also when a drop came while it was dialled
	r.p.mu.Lock()
	r.server = server
	closed := r.p.closed
	r.p.mu.Unlock()
	if closed {
		server.Close()
		return
	}
	in := bufio.NewReader(r.client)
	head, err := in.Peek(4)
	if err != nil {
		return
	}
	if n := int32(binary.BigEndian.Uint32(head)); n < 0 || int(n) > r.p.maxFrame {
		// A four-letter word (its letters read as a length): the
		// server answers it, and the bytes go both ways untouched.
		done := make(chan struct{})
		go func() { io.Copy(r.client, server); r.close(); close(done) }()
		io.Copy(server, in)
		r.close()
		<-done
		return
	}
	done := make(chan struct{})
	go func() { r.down(); r.close(); close(done) }()
	r.up(in)
	r.close()
	<-done
}

// up relays the client's frames to the server: the connect request as it
// is, then each request with the root put in front of its paths.
func (r *relay) up(in io.Reader) {
	frames := wire.NewFrameReader(in, r.p.maxFrame)
	out := bufio.NewWriter(r.server)
	first := true
	for {
		frame, err := frames.Next()
		if err != nil {
			return
		}
		body := frame
		if !first && len(frame) >= wire.RequestHeaderSize {
			var h wire.RequestHeader
			h.Decode(frame)
			xid := h.Xid
			if h.OpCode == wire.OpPing {
				xid = wire.XidPing // the server answers every ping with xid -2
			}
			r.mu.Lock()
			r.pending[xid] = append(r.pending[xid], h.OpCode)
			r.mu.Unlock()
			if rewritten, ok := r.request(h.OpCode, frame[wire.RequestHeaderSize:]); ok {
				body = h.Append(make([]byte, 0, wire.RequestHeaderSize+len(rewritten)))
				body = append(body, rewritten...)
			}
		}
		first = false
		if !writeFrame(out, body) {
			return
		}
		if frames.Buffered() == 0 && out.Flush() != nil {
			return
		}
	}
}

// down relays the server's frames to the client: the connect response,
// noting the session, then replies and events with the root taken off
// their paths.
func (r *relay) down() {
	frames := wire.NewFrameReader(r.server, maxReply) // the server's replies may exceed what it takes in
	out := bufio.NewWriter(r.client)
	first := true
	for {
		frame, err := frames.Next()
		if err != nil {
			return
		}
		body := frame
		if first {
			var resp wire.ConnectResponse
			if _, err := resp.Decode(frame); err == nil {
				r.p.sawSession(resp.SessionID)
			}
			first = false
		} else if rewritten, ok := r.reply(frame); ok {
			body = rewritten
		}
		if !writeFrame(out, body) {
			return
		}
		if frames.Buffered() == 0 && out.Flush() != nil {
			return
		}
	}
}

func writeFrame(w *bufio.Writer, body []byte) bool {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(body)))
	w.Write(n[:])
	_, err := w.Write(body)
	return err == nil
}

// takeOp returns the opcode of the oldest request awaiting a reply with
// this xid.
func (r *relay) takeOp(xid int32) (wire.Op, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.pending[xid]
	if len(ops) == 0 {
		return 0, false
	}
	if len(ops) == 1 {
		delete(r.pending, xid)
	} else {
		r.pending[xid] = ops[1:]
	}
	return ops[0], true
}

// request returns body with the root in front of every path, and whether
// it changed anything. A body that does not decode goes as it is: the
// server answers it as it would any malformed request.
func (r *relay) request(op wire.Op, body []byte) ([]byte, bool) {
	rec, ok := wire.RequestFor(op)
	if !ok || rec == nil {
		return nil, false
	}
	if _, err := rec.Decode(body); err != nil {
		return nil, false
	}
	if !r.rootRecord(rec) {
		return nil, false
	}
	return rec.Append(nil), true
}

// rootRecord puts the root in front of the paths of a request record and
// reports whether it has any.
func (r *relay) rootRecord(rec wire.Record) bool {
	add := r.add
	switch v := rec.(type) {
	case *wire.CreateRequest:
		v.Path = add(v.Path)
	case *wire.CreateTTLRequest:
		v.Path = add(v.Path)
	case *wire.DeleteRequest:
		v.Path = add(v.Path)
	case *wire.CheckVersionRequest:
		v.Path = add(v.Path)
	case *wire.PathWatchRequest:
		v.Path = add(v.Path)
	case *wire.PathRequest:
		v.Path = add(v.Path)
	case *wire.SetDataRequest:
		v.Path = add(v.Path)
	case *wire.SetACLRequest:
		v.Path = add(v.Path)
	case *wire.RemoveWatchesRequest:
		v.Path = add(v.Path)
	case *wire.AddWatchRequest:
		v.Path = add(v.Path)
	case *wire.MultiRequest:
		for _, op := range v.Ops {
			r.rootRecord(op.Req)
		}
	case *wire.SetWatches:
		for _, l := range []*[]string{&v.DataWatches, &v.ExistWatches, &v.ChildWatches} {
			*l = r.addAll(*l)
		}
	case *wire.SetWatches2:
		for _, l := range []*[]string{&v.DataWatches, &v.ExistWatches, &v.ChildWatches,
			&v.PersistentWatches, &v.PersistentRecursiveWatches} {
			*l = r.addAll(*l)
		}
	default:
		return false
	}
	return true
}

// reply returns a reply or event frame with the root taken off its paths,
// and whether it changed anything.
func (r *relay) reply(frame []byte) ([]byte, bool) {
	var h wire.ReplyHeader
	n, err := h.Decode(frame)
	if err != nil {
		return nil, false
	}
	body := frame[n:]
	var rec wire.Record
	if h.Xid == wire.XidNotification {
		var ev wire.WatcherEvent
		if _, err := ev.Decode(body); err != nil {
			return nil, false
		}
		ev.Path = r.strip(ev.Path)
		rec = &ev
	} else {
		op, ok := r.takeOp(h.Xid)
		if !ok || h.Err != wire.CodeOK {
			return nil, false
		}
		if rec = r.stripReply(op, body); rec == nil {
			return nil, false
		}
	}
	return rec.Append(h.Append(make([]byte, 0, len(frame)))), true
}

// stripReply decodes the body of a successful reply to op and takes the
// root off its paths; nil if the reply carries none (or does not decode).
func (r *relay) stripReply(op wire.Op, body []byte) wire.Record {
	var rec wire.Record
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL, wire.OpSync,
		wire.OpGetEphemerals, wire.OpMulti:
		rec, _ = wire.ResponseFor(op)
	default:
		return nil
	}
	if _, err := rec.Decode(body); err != nil {
		return nil
	}
	switch v := rec.(type) {
	case *wire.CreateResponse:
		v.Path = r.strip(v.Path)
	case *wire.Create2Response:
		v.Path = r.strip(v.Path)
	case *wire.SyncResponse:
		v.Path = r.strip(v.Path)
	case *wire.GetChildrenResponse: // getEphemerals: full paths
		for i, p := range v.Children {
			v.Children[i] = r.strip(p)
		}
	case *wire.MultiResponse:
		for i := range v.Results {
			if res := &v.Results[i]; res.Type == wire.OpCreate || res.Type == wire.OpCreate2 {
				res.Path = r.strip(res.Path)
			}
		}
	}
	return rec
}

// add puts the root in front of a client's path. A path that does not
// start with "/" is left as it is, so that the server refuses it as it
// would without the root; so is the ensemble's configuration node, which
// the Java client reads outside its chroot (getConfig).
func (r *relay) add(p string) string {
	switch {
	case p == configPath:
		return p
	case p == "/":
		return r.p.root
	case strings.HasPrefix(p, "/"):
		return r.p.root + p
	}
	return p
}

func (r *relay) addAll(paths []string) []string {
	for i, p := range paths {
		paths[i] = r.add(p)
	}
	return paths
}

// strip takes the root off a server path, as AddRoot's inverse.
func (r *relay) strip(p string) string {
	switch {
	case p == r.p.root:
		return "/"
	case strings.HasPrefix(p, r.p.root+"/"):
		return p[len(r.p.root):]
	}
	return p
}
