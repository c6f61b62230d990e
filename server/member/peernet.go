package member

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/server/internal/backoff"
	"github.com/zkraft/zkraft/server/internal/sockio"
)

// peerMagic opens every connection between members, followed by the
// dialing member's id, so that the accepting side knows who is calling.
const peerMagic = 0x7a

var (
	errLinkCut  = errors.New("server: link between members is cut")
	errLinkLost = errors.New("server: message lost on a degraded link")
)

// peerConn is a connection between two members, registered with Links. The
// accepting side learns the remote member from the header on first read.
type peerConn struct {
	net.Conn
	local int
	// remote is the member at the other end: known when dialled, read
	// from the header of an accepted one, which a Close on another
	// goroutine may race (remoteID).
	remote     atomic.Int32
	links      *Links
	accepted   bool
	magic      byte // what an accepted connection opened with
	headerOnce sync.Once
	headerErr  error
	closeOnce  sync.Once
	closed     atomic.Bool
	// onClose is set by raftStream, which tracks its conns; atomic, since
	// Links may close the conn (a cut) while it is being set.
	onClose atomic.Pointer[func(*peerConn)]
	// onBroken, when set, is told once when the far side ends the
	// connection (a read fails before this side closed it).
	onBroken   func(remote int)
	brokenOnce sync.Once
}

// dialPeer connects member from to member to at addr, or at the address
// via gives for it.
func dialPeer(links *Links, via map[string]string, from, to int, addr string, timeout time.Duration) (net.Conn, error) {
	return dialPeerAs(peerMagic, links, via, from, to, addr, timeout)
}

// dialPeerAs is dialPeer for a connection that opens with magic.
func dialPeerAs(magic byte, links *Links, via map[string]string, from, to int, addr string, timeout time.Duration) (net.Conn, error) {
	if !links.up(from, to) {
		return nil, errLinkCut
	}
	if v, ok := via[addr]; ok {
		addr = v
	}
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	nc = sockio.Wrap(nc)
	if _, err := nc.Write([]byte{magic, byte(from)}); err != nil {
		nc.Close()
		return nil, err
	}
	pc := &peerConn{Conn: nc, local: from, links: links}
	pc.remote.Store(int32(to))
	if !links.track(pc) {
		nc.Close()
		return nil, errLinkCut
	}
	return pc, nil
}

// Read reads the peer header first on an accepted connection, and waits
// while this member is paused (Links.Pause). A connection closed here
// reads as io.EOF, which Raft's transport takes as a quiet end rather than
// an error to log.
func (c *peerConn) Read(p []byte) (int, error) {
	c.links.waitResumed(c.local)
	if c.accepted {
		c.headerOnce.Do(c.readHeader)
		if c.headerErr != nil {
			return 0, c.headerErr
		}
	}
	n, err := c.Conn.Read(p)
	switch {
	case err == nil:
	case c.closed.Load():
		err = io.EOF
	case c.onBroken != nil:
		c.brokenOnce.Do(func() { c.onBroken(c.remoteID()) })
	}
	return n, err
}

func (c *peerConn) readHeader() {
	var hdr [2]byte
	c.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
		c.headerErr = fmt.Errorf("peer header: %w", err)
		return
	}
	c.Conn.SetReadDeadline(time.Time{})
	if hdr[0] != peerMagic && hdr[0] != appendsMagic && hdr[0] != appendsTakenMagic {
		c.headerErr = fmt.Errorf("peer header: bad magic %#x", hdr[0])
		return
	}
	c.magic = hdr[0]
	c.remote.Store(int32(hdr[1]))
	if !c.links.track(c) {
		c.headerErr = errLinkCut
		c.Conn.Close()
		return
	}
	if c.closed.Load() { // closed meanwhile, before Close could untrack it
		c.links.untrack(c)
		c.headerErr = net.ErrClosed
	}
}

// Write writes through the link's degradation (Links.Degrade): a lost
// write breaks the connection.
func (c *peerConn) Write(p []byte) (int, error) {
	if !c.links.beforeWrite(c.local, c.remoteID()) {
		c.Close()
		return 0, errLinkLost
	}
	return c.Conn.Write(p)
}

// remoteID is the member at the other end (0 before an accepted
// connection's header is read).
func (c *peerConn) remoteID() int { return int(c.remote.Load()) }

// Close closes the connection and forgets it.
func (c *peerConn) Close() error {
	c.closed.Store(true)
	c.closeOnce.Do(func() {
		c.links.untrack(c)
		if f := c.onClose.Load(); f != nil {
			(*f)(c)
		}
	})
	return c.Conn.Close()
}

// peerListener accepts connections from members.
type peerListener struct {
	net.Listener
	self  int
	links *Links
}

func (l *peerListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: sockio.Wrap(nc), local: l.self, links: l.links, accepted: true}, nil
}

// raftStream is Raft's stream layer over peer connections. It tracks the
// connections it dials and accepts, and closes them all with the listener:
// Raft's transport leaves connection handlers running otherwise. Accepted
// connections that carry AppendEntries (appendsMagic, appendsTakenMagic) go to serveAppends,
// the others to Raft's network transport.
type raftStream struct {
	ln        *peerListener
	advertise net.Addr
	self      int
	links     *Links
	via       map[string]string                // addresses to dial instead (Config.PeerVia)
	idOf      func(raft.ServerAddress) int     // the member at a Raft address, 0 if none
	broken    func(remote int)                 // told when an accepted connection is ended by its member
	spawn     func(name string, f func()) bool // runs the stream's goroutines in the node's group
	quit      <-chan struct{}                  // closed when the node stops
	// older, set in tests, makes this member refuse AppendEntries
	// connections as a zkraft before them did (see olderPeers).
	older bool
	// serveAppends serves a connection of AppendEntries; it is set before
	// Raft's network transport starts accepting (see raftTransport).
	serveAppends func(net.Conn)

	acceptOnce sync.Once
	accepted   chan net.Conn // connections for Raft's network transport
	ended      chan struct{} // closed when the listener fails
	acceptErr  error         // why, set before ended closes

	mu     sync.Mutex // guards conns, closed
	conns  map[*peerConn]struct{}
	closed bool
}

var _ raft.StreamLayer = (*raftStream)(nil)

func (s *raftStream) Addr() net.Addr { return s.advertise }

// Accept returns the next connection for Raft's network transport.
func (s *raftStream) Accept() (net.Conn, error) {
	s.acceptOnce.Do(func() {
		s.accepted, s.ended = make(chan net.Conn), make(chan struct{})
		if !s.spawn("raft-accept", s.acceptLoop) { // the node is stopping
			s.acceptErr = net.ErrClosed
			close(s.ended)
		}
	})
	select {
	case c := <-s.accepted:
		return c, nil
	case <-s.ended:
		return nil, s.acceptErr
	}
}

// acceptLoop accepts connections until the listener closes, and sorts each
// by its header (read on a goroutine of its own: a slow member holds up no
// one else).
func (s *raftStream) acceptLoop() {
	defer close(s.ended) // acceptErr is set first
	var pauses backoff.Accept
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				s.acceptErr = err
				return
			}
			// Out of descriptors, say: wait a little, as Raft's
			// transport does, and go on (or stop with the node).
			if !backoff.Sleep(pauses.Failed(), s.quit) {
				s.acceptErr = net.ErrClosed
				return
			}
			continue
		}
		pauses.Succeeded()
		pc := nc.(*peerConn)
		pc.onBroken = s.broken
		// Tracked at once, so that Close ends a connection whose header
		// has not come yet.
		if _, err := s.track(pc); err != nil {
			continue
		}
		if !s.spawn("raft-conn", func() { s.route(pc) }) {
			pc.Close()
		}
	}
}

// route hands an accepted connection to whoever serves what its header
// says it carries.
func (s *raftStream) route(pc *peerConn) {
	pc.headerOnce.Do(pc.readHeader)
	if pc.headerErr != nil {
		pc.Close()
		return
	}
	if pc.magic == appendsMagic || pc.magic == appendsTakenMagic {
		if s.older {
			pc.Close()
			return
		}
		if pc.magic == appendsTakenMagic {
			// The member that dialed waits for this byte before it sends:
			// one of an older zkraft closes the connection instead
			// (olderPeers).
			pc.SetWriteDeadline(time.Now().Add(peerIOTimeout))
			if _, err := pc.Write([]byte{appendsTakenMagic}); err != nil {
				pc.Close()
				return
			}
			pc.SetWriteDeadline(time.Time{})
		} else {
			// Members built between 3afd44c and 5cef280 send at once (a
			// request, or a pipeline's first within Raft's CommitTimeout);
			// those built between 5cef280 and d9b1c4c wait for a byte back
			// first. serveAppends closes a connection whose first request
			// has not come by this deadline, which makes the latter send
			// over Raft's network transport, as to an older zkraft.
			pc.SetReadDeadline(time.Now().Add(appendsFirstFrame))
		}
		s.serveAppends(pc)
		return
	}
	select {
	case s.accepted <- pc:
	case <-s.ended:
		pc.Close()
	}
}

// appendsFirstFrame is how long a connection opened with appendsMagic may
// wait for its first request.
const appendsFirstFrame = 2 * time.Second

func (s *raftStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *raftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dialAs(peerMagic, addr, timeout)
}

// errNoAppends is what dialing a member for AppendEntries gives when the
// member closed the connection without taking it: one of an older zkraft
// (see olderPeers).
var errNoAppends = errors.New("member takes no AppendEntries connections")

// dialAppends dials a connection for AppendEntries (see serveAppends) and
// waits for the member to take it.
func (s *raftStream) dialAppends(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.dialAs(appendsTakenMagic, addr, timeout)
	if err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(timeout))
	var taken [1]byte
	if _, err := io.ReadFull(c, taken[:]); err != nil || taken[0] != appendsTakenMagic {
		c.Close()
		switch {
		case s.isClosed():
			err = net.ErrClosed // this member is stopping, not the other refusing
		case err == nil || staleConn(err):
			err = errNoAppends
		}
		return nil, err
	}
	c.SetReadDeadline(time.Time{})
	return c, nil
}

func (s *raftStream) dialAs(magic byte, addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.isClosed() {
		return nil, net.ErrClosed
	}
	nc, err := dialPeerAs(magic, s.links, s.via, s.self, s.idOf(addr), string(addr), timeout)
	if err != nil {
		return nil, err
	}
	return s.track(nc.(*peerConn))
}

func (s *raftStream) track(pc *peerConn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		pc.Close()
		return nil, net.ErrClosed
	}
	if s.conns == nil {
		s.conns = make(map[*peerConn]struct{})
	}
	s.conns[pc] = struct{}{}
	forget := s.forget
	pc.onClose.Store(&forget)
	if pc.closed.Load() { // closed meanwhile (a cut), before it could forget
		delete(s.conns, pc)
	}
	return pc, nil
}

func (s *raftStream) forget(pc *peerConn) {
	s.mu.Lock()
	delete(s.conns, pc)
	s.mu.Unlock()
}

// Close closes the listener and every connection; later calls do
// nothing.
func (s *raftStream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*peerConn, 0, len(s.conns))
	for pc := range s.conns {
		conns = append(conns, pc)
	}
	s.mu.Unlock()
	for _, pc := range conns {
		pc.Close()
	}
	return s.ln.Close()
}

// tcpAddr is a net.Addr for a configured host:port, which Raft advertises
// as this member's address whatever the listener is bound to.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }
