package member

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// forwarder keeps this member's connection to the leader's forward port.
type forwarder struct {
	n    *Node
	mu   sync.Mutex // guards conn
	conn *fwdClient
}

// fwdClient is one connection to the leader: requests go out in order
// through its writer goroutine, replies come back through its reader.
type fwdClient struct {
	nc     net.Conn
	leader int
	broken func(leader int) // told when the leader's side ends the connection

	mu      sync.Mutex // guards out, pending, next, closed, retired
	out     []byte
	pending map[uint64]func(status byte, payload []byte)
	next    uint64
	closed  bool
	retired bool // another leader's connection replaced this one (see retire)
	wake    chan struct{}
	done    chan struct{}
}

// client returns a connection to the current leader, dialing if needed.
// Through an election it waits, until deadline, for a leader it can reach:
// the requests of a member's clients are held, not failed.
func (f *forwarder) client(deadline time.Time) (*fwdClient, error) {
	n := f.n
	for {
		select {
		case <-n.quit: // stopping: Raft knows no leader any more, and none will come
			return nil, ErrClosed
		default:
		}
		changed := n.leaderChanges()
		c, err := f.dialLeader()
		if err == nil || errors.Is(err, errIsLeader) || time.Now().After(deadline) {
			return c, err
		}
		if errors.Is(err, errNoLeader) {
			n.waitForLeader(time.Until(deadline))
			continue
		}
		// The leader Raft names is unreachable (dead, or cut off): wait for
		// Raft to elect or find another, trying again now and then.
		select {
		case <-changed:
		case <-time.After(min(n.cfg.RaftTimeout/4, 250*time.Millisecond)):
		case <-n.quit:
			return nil, ErrClosed
		}
	}
}

// dialLeader returns a connection to the leader Raft knows now.
func (f *forwarder) dialLeader() (*fwdClient, error) {
	n := f.n
	_, id := n.raftNow().LeaderWithID()
	if id == "" {
		return nil, errNoLeader
	}
	leader, err := strconv.Atoi(string(id))
	if err != nil {
		return nil, fmt.Errorf("leader id %q: %w", id, err)
	}
	if leader == n.cfg.ServerID {
		return nil, errIsLeader
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.conn; c != nil && c.leader == leader && !c.isClosed() {
		return c, nil
	}
	peer, ok := n.peer(leader)
	if !ok {
		return nil, fmt.Errorf("leader %d is not among the servers", leader)
	}
	nc, err := dialPeer(n.cfg.Links, n.cfg.PeerVia, n.cfg.ServerID, leader, peer.ForwardAddr, n.cfg.RaftTimeout*5)
	if err != nil {
		return nil, fmt.Errorf("dial leader %d: %w", leader, err)
	}
	c := &fwdClient{nc: nc, leader: leader, broken: n.leaderLinkBroken, pending: make(map[uint64]func(byte, []byte)),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if !n.goOwned("forward-writer", c.writeLoop) || !n.goOwned("forward-reader", c.readLoop) {
		c.close()
		return nil, ErrClosed
	}
	if old := f.conn; old != nil {
		old.retire(2 * n.cfg.RaftTimeout)
	}
	f.conn = c
	return c, nil
}

// closeAll drops the connection to the leader (at shutdown).
func (f *forwarder) closeAll() {
	f.mu.Lock()
	c := f.conn
	f.conn = nil
	f.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// send queues a request; cb, if not nil, gets the reply, or fwdErr if the
// connection is lost first.
func (c *fwdClient) send(typ byte, payload []byte, cb func(byte, []byte)) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errNotSent
	}
	c.next++
	if cb != nil {
		c.pending[c.next] = cb
	}
	c.out = appendFwd(c.out, typ, c.next, payload)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

func (c *fwdClient) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// retire closes the connection once every request sent on it has its
// answer, or after grace: a member that lost office still answers what it
// has, and one it never proposed (a reconfig it was preparing) it answers
// "not the leader", which the sender may take to the next leader.
func (c *fwdClient) retire(grace time.Duration) {
	c.mu.Lock()
	c.retired = true
	idle := len(c.pending) == 0
	c.mu.Unlock()
	if idle {
		c.close()
		return
	}
	time.AfterFunc(grace, c.close)
}

// close closes the connection and fails every request still waiting.
func (c *fwdClient) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	pending := c.pending
	c.pending = nil
	close(c.done)
	c.mu.Unlock()
	c.nc.Close()
	for _, cb := range pending {
		cb(fwdLost, nil)
	}
}

func (c *fwdClient) writeLoop() {
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		buf, c.out = c.out, buf[:0]
		c.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := c.nc.Write(buf); err != nil {
			c.close()
			return
		}
	}
}

func (c *fwdClient) readLoop() {
	defer c.close()
	fr := wire.NewFrameReader(c.nc, maxForwardFrame)
	for {
		frame, err := fr.Next()
		if err != nil || len(frame) < 10 {
			if !c.isClosed() && c.broken != nil {
				c.close()
				c.broken(c.leader)
			}
			return
		}
		id := binary.BigEndian.Uint64(frame[1:9])
		c.mu.Lock()
		cb := c.pending[id]
		delete(c.pending, id)
		done := c.retired && len(c.pending) == 0
		c.mu.Unlock()
		if cb != nil {
			cb(frame[9], frame[10:])
		}
		if done {
			return // retired, and nothing more to wait for
		}
	}
}

// fwdError is the error a reply's status stands for; nil for fwdOK.
func fwdError(status byte, payload []byte) error {
	switch status {
	case fwdOK:
		return nil
	case fwdLost:
		return errLeaderLost
	case fwdNotLeader:
		return errNotLeaderThere
	}
	return fmt.Errorf("%w: %s", errForwarded, payload)
}

// call sends a request and waits for its reply, both until deadline.
func (f *forwarder) call(typ byte, payload []byte, deadline time.Time) ([]byte, error) {
	c, err := f.client(deadline)
	if err != nil {
		return nil, err
	}
	type reply struct {
		status  byte
		payload []byte
	}
	ch := make(chan reply, 1)
	if err := c.send(typ, payload, func(st byte, p []byte) { ch <- reply{st, append([]byte(nil), p...)} }); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if err := fwdError(r.status, r.payload); err != nil {
			return nil, err
		}
		return r.payload, nil
	case <-time.After(time.Until(deadline)):
		return nil, errors.New("server: the leader did not answer in time")
	case <-f.n.quit:
		return nil, ErrClosed
	}
}
