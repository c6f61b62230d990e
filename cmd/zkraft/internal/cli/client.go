package cli

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// The client is a minimal ZooKeeper client on the project's wire package.
// go-zookeeper v1.0.4 (the version in go.mod) cannot send addWatch,
// removeWatches, whoAmI, getEphemerals or getAllChildrenNumber, has no
// chroot, and delivers a watch event to one channel once, so persistent
// watches and zkCli's event printing need a client of their own. It keeps
// one request in flight at a time, as a shell does, and hands every watch
// event to onEvent from its reader goroutine, in the order the server sent
// it: an event that comes before a reply is printed before that reply is.

// State is a connection's state, named as ZooKeeper's client names it in
// zkCli's prompt.
type State string

// Connection states.
const (
	StateConnecting   State = "CONNECTING"
	StateConnected    State = "CONNECTED"
	StateConnectedRO  State = "CONNECTEDREADONLY"
	StateNotConnected State = "NOT_CONNECTED"
	StateClosed       State = "CLOSED"
	StateAuthFailed   State = "AUTH_FAILED"
)

// Keeper states of the events the client reports itself (KeeperState).
const (
	keeperDisconnected  int32 = 0
	keeperSyncConnected int32 = 3
	keeperAuthFailed    int32 = 4
	keeperReadOnly      int32 = 5
	keeperExpired       int32 = -112
	keeperClosed        int32 = 7
)

// Event types the client makes up itself, as ZooKeeper's client does when a
// watch is removed or the connection changes state (EventType).
const (
	eventNone                   wire.EventType = -1
	eventDataWatchRemoved       wire.EventType = 5
	eventChildWatchRemoved      wire.EventType = 6
	eventPersistentWatchRemoved wire.EventType = 7
)

// maxFrame bounds a reply frame: ZooKeeper's default jute.maxbuffer plus
// room for the reply header.
const maxFrame = 0xfffff + 1024

// event is a watch or state event as zkCli prints it.
type event struct {
	state int32
	typ   wire.EventType
	path  string // "" prints as null
}

type reply struct {
	hdr  wire.ReplyHeader
	body []byte
}

// client is one session with a ZooKeeper ensemble.
type client struct {
	servers  []string
	chroot   string
	timeout  time.Duration
	readOnly bool
	onEvent  func(event)
	// watches lists the watches to set again on a resumed session.
	watches func() wire.SetWatches2

	mu        sync.Mutex // guards the fields below
	conn      net.Conn
	state     State
	sessionID int64
	passwd    []byte
	lastZxid  int64
	xid       int32
	pending   map[int32]chan reply
	closing   bool              // Close began: a lost connection is no news
	auths     []wire.AuthPacket // replayed on reconnect
	done      chan struct{}     // closed when conn's goroutines must stop
	wg        sync.WaitGroup    // conn's reader and pinger
	next      int               // the server to try first (after the one last lost)
	// reconnecting is closed when the running reconnect ends (nil when
	// none runs); stopReconnect ends it early (Close).
	reconnecting, stopReconnect chan struct{}
}

// parseConnectString splits "host:port[,host:port][/chroot]".
func parseConnectString(s string) (servers []string, chroot string, err error) {
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		} else if err := validatePath(chroot); err != nil {
			return nil, "", err
		}
	}
	for h := range strings.SplitSeq(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "2181")
		}
		servers = append(servers, h)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("no server in connect string %q", s)
	}
	return servers, chroot, nil
}

// newClient returns a client of the ensemble in connect, not yet connected.
func newClient(connect string, timeout time.Duration, readOnly bool, onEvent func(event)) (*client, error) {
	servers, chroot, err := parseConnectString(connect)
	if err != nil {
		return nil, err
	}
	return &client{servers: servers, chroot: chroot, timeout: timeout, readOnly: readOnly,
		onEvent: onEvent, state: StateConnecting, pending: make(map[int32]chan reply)}, nil
}

// State reports the connection's state.
func (c *client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SessionID reports the session's id, 0 before the first connection.
func (c *client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// connect dials the servers in turn, from the one after the server last
// lost, until one takes the session, and reports SyncConnected. A session
// the server no longer knows is expired: the client reports it and stays
// closed.
func (c *client) connect() error {
	var lastErr error
	c.mu.Lock()
	first := c.next
	c.mu.Unlock()
	for i := range c.servers {
		k := (first + i) % len(c.servers)
		err := c.connectTo(c.servers[k])
		if err == nil {
			c.mu.Lock()
			c.next = (k + 1) % len(c.servers) // if this one is lost, the next is tried first
			c.mu.Unlock()
			return nil
		}
		if errors.Is(err, errSessionExpired) {
			return err
		}
		lastErr = err
	}
	return lastErr
}

// startReconnect starts getting the session a new connection in the
// background, as ZooKeeper's client does the moment it loses one, unless
// that runs already; it returns the channel closed when it ends. c.mu must
// be held.
func (c *client) startReconnect() chan struct{} {
	if c.reconnecting != nil {
		return c.reconnecting
	}
	ended, stop := make(chan struct{}), make(chan struct{})
	c.reconnecting, c.stopReconnect = ended, stop
	c.state = StateConnecting
	go c.reconnect(ended, stop)
	return ended
}

// reconnect tries every server, round after round, until one takes the
// session back (or says it expired), or stop is closed. Between rounds it
// waits, from 50ms doubling up to a second, so that a cluster that is down
// for a while is not dialled in a loop.
func (c *client) reconnect(ended, stop chan struct{}) {
	defer func() {
		c.mu.Lock()
		c.reconnecting, c.stopReconnect = nil, nil
		if c.conn == nil && c.state == StateConnecting {
			c.state = StateNotConnected
		}
		c.mu.Unlock()
		close(ended)
	}()
	c.wg.Wait() // the lost connection's reader and pinger
	for round := 0; ; round++ {
		select {
		case <-stop:
			return
		default:
		}
		err := c.connect()
		if err == nil || errors.Is(err, errSessionExpired) {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(min(50*time.Millisecond<<min(round, 5), time.Second)):
		}
	}
}

func (c *client) connectTo(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, c.timeout)
	if err != nil {
		return err
	}
	c.mu.Lock()
	req := wire.ConnectRequest{LastZxidSeen: c.lastZxid, TimeOut: int32(c.timeout.Milliseconds()),
		SessionID: c.sessionID, Passwd: c.passwd, HasReadOnly: true, ReadOnly: c.readOnly}
	c.mu.Unlock()
	if c.sessionID == 0 {
		req.Passwd = make([]byte, 16)
	}
	frame, start := wire.StartFrame(nil)
	frame = wire.EndFrame(req.Append(frame), start)
	conn.SetDeadline(time.Now().Add(c.timeout))
	fr := wire.NewFrameReader(conn, maxFrame)
	var resp wire.ConnectResponse
	if _, err = conn.Write(frame); err == nil {
		var body []byte
		if body, err = fr.Next(); err == nil {
			_, err = resp.Decode(body)
		}
	}
	if err != nil {
		conn.Close()
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	conn.SetDeadline(time.Time{})
	if resp.TimeOut <= 0 {
		conn.Close()
		c.setState(StateClosed)
		c.onEvent(event{state: keeperExpired, typ: eventNone})
		return errSessionExpired
	}
	resumed := req.SessionID != 0
	c.start(conn, fr, &resp)
	if err := c.replayAuth(); err != nil {
		return err
	}
	if resumed && c.watches != nil {
		return c.resetWatches()
	}
	return nil
}

// resetWatches sets the session's watches again on a new connection, so
// that changes made while it was away are reported now and later ones as
// before.
func (c *client) resetWatches() error {
	w := c.watches()
	if len(w.DataWatches)+len(w.ExistWatches)+len(w.ChildWatches)+len(w.PersistentWatches)+len(w.PersistentRecursiveWatches) == 0 {
		return nil
	}
	for _, list := range []*[]string{&w.DataWatches, &w.ExistWatches, &w.ChildWatches, &w.PersistentWatches, &w.PersistentRecursiveWatches} {
		for i, p := range *list {
			(*list)[i] = c.abs(p)
		}
	}
	c.mu.Lock()
	w.RelativeZxid = c.lastZxid
	c.mu.Unlock()
	_, err := c.callXid(wire.XidSetWatches, wire.OpSetWatches2, &w, nil)
	return err
}

// start takes conn as the session's connection and starts its reader and
// pinger.
func (c *client) start(conn net.Conn, fr *wire.FrameReader, resp *wire.ConnectResponse) {
	c.mu.Lock()
	c.conn, c.sessionID, c.passwd = conn, resp.SessionID, resp.Passwd
	c.state, c.done = StateConnected, make(chan struct{})
	keeper := keeperSyncConnected
	if resp.ReadOnly {
		c.state, keeper = StateConnectedRO, keeperReadOnly
	}
	done := c.done
	c.wg.Add(2)
	c.mu.Unlock()
	c.onEvent(event{state: keeper, typ: eventNone})
	go c.readLoop(conn, fr, done)
	go c.pingLoop(time.Duration(resp.TimeOut)*time.Millisecond/3, done)
}

func (c *client) setState(s State) {
	c.mu.Lock()
	c.state = s
	c.mu.Unlock()
}

// readLoop hands replies to their callers and events to onEvent until the
// connection fails or is closed.
func (c *client) readLoop(conn net.Conn, fr *wire.FrameReader, done chan struct{}) {
	defer c.wg.Done()
	for {
		body, err := fr.Next()
		if err != nil {
			c.lost(conn, done)
			return
		}
		var hdr wire.ReplyHeader
		n, err := hdr.Decode(body)
		if err != nil {
			c.lost(conn, done)
			return
		}
		rest := append([]byte(nil), body[n:]...)
		switch hdr.Xid {
		case wire.XidNotification:
			var ev wire.WatcherEvent
			if _, err := ev.Decode(rest); err == nil {
				c.onEvent(event{state: ev.State, typ: ev.Type, path: c.rel(ev.Path)})
			}
		case wire.XidPing:
		default:
			c.deliver(hdr, rest)
		}
	}
}

func (c *client) deliver(hdr wire.ReplyHeader, body []byte) {
	c.mu.Lock()
	if hdr.Zxid > c.lastZxid {
		c.lastZxid = hdr.Zxid
	}
	ch, ok := c.pending[hdr.Xid]
	delete(c.pending, hdr.Xid)
	authFailed := hdr.Xid == wire.XidAuth && hdr.Err == wire.CodeAuthFailed
	if authFailed {
		c.state = StateAuthFailed
	}
	c.mu.Unlock()
	if authFailed {
		c.onEvent(event{state: keeperAuthFailed, typ: eventNone})
	}
	if ok {
		ch <- reply{hdr: hdr, body: body}
	}
}

// lost ends a connection: pending requests fail with connection loss, and
// unless the client closed it on purpose, Disconnected is reported.
func (c *client) lost(conn net.Conn, done chan struct{}) {
	conn.Close()
	c.mu.Lock()
	if c.conn != conn {
		c.mu.Unlock()
		return
	}
	c.conn = nil
	select {
	case <-done:
	default:
		close(done)
	}
	for xid, ch := range c.pending {
		close(ch)
		delete(c.pending, xid)
	}
	report := !c.closing && (c.state == StateConnected || c.state == StateConnectedRO)
	if report {
		c.state = StateNotConnected
	}
	c.mu.Unlock()
	if report {
		c.onEvent(event{state: keeperDisconnected, typ: eventNone})
		c.mu.Lock()
		if !c.closing {
			c.startReconnect()
		}
		c.mu.Unlock()
	}
}

func (c *client) pingLoop(every time.Duration, done chan struct{}) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			c.send(wire.XidPing, wire.OpPing, nil)
		}
	}
}

// send writes one request frame; a write error is left to the reader,
// which sees the connection fail.
func (c *client) send(xid int32, op wire.Op, req wire.Record) {
	frame, start := wire.StartFrame(nil)
	frame = wire.RequestHeader{Xid: xid, OpCode: op}.Append(frame)
	if req != nil {
		frame = req.Append(frame)
	}
	frame = wire.EndFrame(frame, start)
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		conn.SetWriteDeadline(time.Now().Add(c.timeout))
		if _, err := conn.Write(frame); err != nil {
			conn.Close()
		}
	}
}

// call sends a request and waits for its reply. A connection lost since
// the last call is reconnected first, with the same session. The reply
// body is decoded into resp when the result code is OK.
func (c *client) call(op wire.Op, req, resp wire.Record) (wire.Code, error) {
	return c.callXid(0, op, req, resp)
}

func (c *client) callXid(xid int32, op wire.Op, req, resp wire.Record) (wire.Code, error) {
	if err := c.ensureConnected(); err != nil {
		return 0, err
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if xid == 0 {
		c.xid++
		xid = c.xid
	}
	c.pending[xid] = ch
	c.mu.Unlock()
	c.send(xid, op, req)
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return 0, errConnectionLoss
		}
		if r.hdr.Err == wire.CodeOK && resp != nil {
			if _, err := resp.Decode(r.body); err != nil {
				return 0, fmt.Errorf("decode %s reply: %w", op, err)
			}
		}
		return r.hdr.Err, nil
	case <-timer.C:
		c.mu.Lock()
		delete(c.pending, xid)
		conn := c.conn
		c.mu.Unlock()
		if conn != nil {
			conn.Close() // the reader reports the loss; the next call reconnects
		}
		return 0, errConnectionLoss
	}
}

// ensureConnected returns once the session has a connection, waiting for
// the reconnect under way (or starting one) for up to the session timeout.
func (c *client) ensureConnected() error { return c.waitConnected(c.timeout) }

// waitConnected is ensureConnected waiting up to d.
func (c *client) waitConnected(d time.Duration) error {
	c.mu.Lock()
	state, conn := c.state, c.conn
	var ended chan struct{}
	switch {
	case state == StateClosed || state == StateAuthFailed:
		c.mu.Unlock()
		return errNotConnected
	case conn != nil:
		c.mu.Unlock()
		return nil
	case !c.closing:
		ended = c.startReconnect()
	}
	c.mu.Unlock()
	if ended == nil {
		return errConnectionLoss
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ended:
	case <-timer.C:
		return errConnectionLoss // still trying, in the background
	}
	c.mu.Lock()
	state, conn = c.state, c.conn
	c.mu.Unlock()
	switch {
	case conn != nil:
		return nil
	case state == StateClosed:
		return errSessionExpired
	}
	return errConnectionLoss
}

// addAuth sends an auth packet and waits for its answer; the client keeps
// it to send again after a reconnect.
func (c *client) addAuth(scheme string, auth []byte) (wire.Code, error) {
	p := wire.AuthPacket{Scheme: scheme, Auth: auth}
	code, err := c.callXid(wire.XidAuth, wire.OpAuth, &p, nil)
	if err == nil && code == wire.CodeOK {
		c.mu.Lock()
		c.auths = append(c.auths, p)
		c.mu.Unlock()
	}
	return code, err
}

func (c *client) replayAuth() error {
	c.mu.Lock()
	auths := append([]wire.AuthPacket(nil), c.auths...)
	c.mu.Unlock()
	for i := range auths {
		if _, err := c.callXid(wire.XidAuth, wire.OpAuth, &auths[i], nil); err != nil {
			return err
		}
	}
	return nil
}

// closeWait bounds how long Close waits for a connection to close the
// session on.
const closeWait = 3 * time.Second

// Close ends the session, reports Closed, and waits for the connection's
// goroutines. A session without a connection gets one first if it can
// within the session timeout, so that the session ends now rather than
// when it times out (and its ephemerals with it). A session already
// closed, or refused by a failed auth, ends quietly.
func (c *client) Close() {
	c.mu.Lock()
	dead := c.state == StateClosed || c.state == StateAuthFailed
	c.mu.Unlock()
	// Not for long, though, when no server answers: quit should not hang.
	deadline := time.Now().Add(min(c.timeout, closeWait))
	for !dead && c.waitConnected(time.Until(deadline)) == nil {
		c.mu.Lock()
		c.closing = true // the connection the close ends is no news
		c.mu.Unlock()
		if _, err := c.call(wire.OpCloseSession, nil, nil); err == nil || time.Now().After(deadline) {
			break
		}
		// Sent on a connection that had died unnoticed: on the next one.
		c.mu.Lock()
		c.closing = false
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.closing = true
	if c.stopReconnect != nil {
		close(c.stopReconnect)
		c.stopReconnect = nil
	}
	ended := c.reconnecting
	c.mu.Unlock()
	if ended != nil {
		<-ended
	}
	c.mu.Lock()
	c.state = StateClosed
	conn, done := c.conn, c.done
	c.conn = nil
	if done != nil {
		select {
		case <-done:
		default:
			close(done)
		}
	}
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	c.wg.Wait()
	if !dead {
		c.onEvent(event{state: keeperClosed, typ: eventNone})
	}
}

// abs puts the chroot in front of a path the user gave.
func (c *client) abs(path string) string {
	if c.chroot == "" {
		return path
	}
	if path == "/" {
		return c.chroot
	}
	return c.chroot + path
}

// rel takes the chroot off a path the server sent.
func (c *client) rel(path string) string {
	if c.chroot == "" || !strings.HasPrefix(path, c.chroot) {
		return path
	}
	if rest := path[len(c.chroot):]; rest != "" {
		return rest
	}
	return "/"
}
