package server

import (
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/internal/backoff"
	"github.com/zkraft/zkraft/server/internal/sockio"
	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// conn is one client connection: a reader goroutine (serve) that decodes
// frames and runs the session's request pipeline, and a writer goroutine
// (writeLoop), started when a reply first needs it, that drains the
// outbound queue of replies and notifications in order; a watch fan-out,
// and the reader for a connect's answer and a ping's, may write the queue
// itself while it holds the write turn (outbound.go).
type conn struct {
	srv    *Server
	nc     net.Conn
	fr     *wire.FrameReader
	ip     string
	remote string
	log    *slog.Logger
	stats  connStats

	raw       syscall.RawConn // the socket's descriptor for writes that must not wait; nil if it has none
	omu       sync.Mutex      // guards full, out, outBytes, turnBytes, spare, turn, writing, closed, finishing
	full      [][]byte        // the queue's chunks before out, in order (see outbound.go)
	out       []byte          // the queue's last chunk: framed replies and notifications not yet written
	outBytes  int             // bytes in full and out
	turnBytes int             // bytes the write turn's holder took, not yet given back (with outBytes: MaxQueuedBytes)
	spare     []byte          // the buffer out is swapped with when written
	turn      [][]byte        // what takeTurn hands the turn's holder, kept for reuse
	writing   bool            // a goroutine has the write turn (see outbound.go)
	closed    bool
	finishing bool // close once out is written
	// ended mirrors finishing for the reader, which checks it on every
	// read without taking omu from the writer (conn.handle).
	ended atomic.Bool
	wake  chan struct{} // wakes writeLoop
	// writer is set once the writer goroutine was started (signal): a
	// connection has none until a reply or notification needs it. The
	// reader writes the connect's answer and the pings' itself, so an idle
	// session never has one, unless a socket did not take all of such an
	// answer, or the connection has no descriptor to write without
	// waiting (raw is nil).
	writer    atomic.Bool
	done      chan struct{} // closed when the connection is closed
	closeOnce sync.Once

	// Set during the handshake by the reader goroutine, read-only after.
	session  int64
	timeout  time.Duration
	readOnly atomic.Bool // a read-only session of this member's own (see readonly.go)
	lastTick int64       // tick of the last session touch (reader goroutine only)
	// reconfigSent: a reconfig was proposed and the next write must wait
	// for it (submit; reader goroutine only).
	reconfigSent bool
	// unsettled: a write's outcome is not known yet (Server.settleLater),
	// and the next write must wait for it (submit).
	unsettled atomic.Bool
	// Records reused from one request to the next (reader goroutine only).
	requests wire.Requests
	replies  readReplies
	// auth is the caller's identities; replaced (never modified in place)
	// by the reader goroutine, so commands may keep the slice, and read by
	// watch delivery on other goroutines.
	auth atomic.Pointer[[]wire.Id]

	pmu      sync.Mutex // guards inflight, drained, stopped, parked
	inflight int
	drained  chan struct{} // closed when inflight drops to 0
	stopped  bool          // closed: no write may start
	parked   bool          // in Server.draining until inflight drops to 0
	// before holds, for a resumed session, the drained channels of its
	// earlier connections here that still had writes in flight; reads
	// wait for them (reader goroutine only).
	before []<-chan struct{}

	// Watch bookkeeping, guarded by the watch registry's mutex.
	dataPaths  map[string]struct{}
	childPaths map[string]struct{}
	fired      uint64 // the registry's seq of the last trigger that notified it
}

// acceptLoop accepts clients on ln until it is closed. After a failed
// accept it pauses (pause reports false once the server stops waiting):
// a process out of descriptors (EMFILE) fails every accept until a
// connection closes, and would otherwise spin and log without end.
func (s *Server) acceptLoop(ln net.Listener, pause func(time.Duration) bool) {
	var pauses backoff.Accept
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing() || errors.Is(err, net.ErrClosed) {
				return
			}
			d := pauses.Failed()
			s.log.Warn("accept failed", "err", err, "retry_in", d)
			if !pause(d) {
				return
			}
			continue
		}
		pauses.Succeeded()
		c := s.newConn(nc)
		if !s.addConn(c) {
			nc.Close()
			continue
		}
		if !s.goOwned("conn-reader", c.serve) {
			c.close("server shutting down")
			s.removeConn(c)
		}
	}
}

// pause waits d, or until the server stops, and reports whether it waited
// all of d.
func (s *Server) pause(d time.Duration) bool { return backoff.Sleep(d, s.quit) }

func (s *Server) newConn(nc net.Conn) *conn {
	nc = sockio.Wrap(nc)
	remote := nc.RemoteAddr().String()
	ip, _, err := net.SplitHostPort(remote)
	if err != nil {
		ip = remote
	}
	c := &conn{
		srv: s, nc: nc, ip: ip, remote: remote,
		log:  s.log.With("peer", remote),
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	if c.raw != nil {
		c.fr = wire.NewIdleFrameReader(nc, newSocketReader(c.raw), s.cfg.JuteMaxBuffer)
	} else {
		c.fr = wire.NewFrameReader(nc, s.cfg.JuteMaxBuffer)
	}
	c.setAuth([]wire.Id{{Scheme: "ip", ID: ip}})
	c.stats.established = time.Now()
	return c
}

// setAuth replaces the connection's identities (reader goroutine only).
func (c *conn) setAuth(ids []wire.Id) { c.auth.Store(&ids) }

// ids returns the connection's identities.
func (c *conn) ids() []wire.Id { return *c.auth.Load() }

// mayRead reports whether the connection's identities, as they are now,
// have READ on acl: a watch event goes only to those that may read the
// node it is about.
func (c *conn) mayRead(acl []wire.ACL) bool {
	return tree.CheckACL(acl, wire.PermRead, c.ids())
}

// addConn registers c, refusing it when its address already has
// MaxClientCnxns connections.
func (s *Server) addConn(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if limit := s.cfg.MaxClientCnxns; limit > 0 && s.perIP[c.ip] >= limit {
		s.stats.rejected.Add(1)
		logRejected(s.log, slog.LevelWarn, rejectMaxClientCnxns, []slog.Attr{slog.String("peer", c.remote), slog.Int("max", limit)})
		return false
	}
	s.perIP[c.ip]++
	s.conns[c] = struct{}{}
	return true
}

// removeConn forgets c: its address count, its session binding and its watches.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	if _, ok := s.conns[c]; ok {
		delete(s.conns, c)
		if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
			delete(s.perIP, c.ip)
		}
	}
	if c.session != 0 && s.bySession[c.session] == c {
		delete(s.bySession, c.session)
	}
	if c.session != 0 && c.park() {
		s.draining[c.session] = append(s.draining[c.session], c)
	}
	s.mu.Unlock()
	s.watches.removeConn(c)
}

// park marks a closed connection that still has writes in flight as kept
// in Server.draining until they are applied, and reports whether it did.
func (c *conn) park() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.parked = c.inflight > 0
	return c.parked
}

// unpark forgets a parked connection whose writes have all been applied.
func (s *Server) unpark(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := slices.DeleteFunc(s.draining[c.session], func(o *conn) bool { return o == c })
	if len(conns) == 0 {
		delete(s.draining, c.session)
	} else {
		s.draining[c.session] = conns
	}
}

// writesInFlight returns the drained channels of the writes that session
// id's earlier connections here still have in flight: old, the one a
// resume just closed, and those already gone (parked). Closed, they start
// no more writes.
func (s *Server) writesInFlight(id int64, old *conn) []<-chan struct{} {
	var out []<-chan struct{}
	if old != nil {
		if ch := old.writesDrained(); ch != nil {
			out = append(out, ch)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.draining[id] {
		if ch := o.writesDrained(); ch != nil {
			out = append(out, ch)
		}
	}
	return out
}

// serve is the reader goroutine: handshake, then one request at a time.
func (c *conn) serve() {
	defer c.srv.removeConn(c)
	defer func() {
		if c.readOnly.Load() { // a read-only session may be resumed within its timeout from now
			c.srv.ro.touch(c.session, time.Now())
		}
	}()
	reason := c.run()
	c.close(reason)
}

func (c *conn) run() string {
	if reason, ok := c.handshake(); !ok {
		return reason
	}
	// No read deadline: a silent session expires on the leader, and its
	// closeSession, applied here, deletes its ephemerals (firing their
	// watches) and then closes this connection, as ZooKeeper closes it.
	// Closing it here for silence could come first, and a client that saw
	// its connection go could still find its ephemerals. A member that loses
	// its leader drops every connection (member.Node), so none lingers
	// without a leader to expire its session.
	//
	// A read-only session is this member's own, and nothing else expires
	// it: a read-only client silent for its session timeout is closed here,
	// as ZooKeeper expires a local session. (Without TCP keepalive, one
	// whose host vanished would otherwise hold its connection until
	// read-only mode ended.)
	c.nc.SetReadDeadline(time.Time{})
	readOnly := c.readOnly.Load()
	for {
		if readOnly {
			c.nc.SetReadDeadline(time.Now().Add(c.timeout))
		}
		frame, err := c.fr.Next()
		if err != nil {
			return c.readError(err)
		}
		now := time.Now() // one clock read per request: it dates it and touches the session
		if reason, ok := c.handle(frame, now); !ok {
			return reason
		}
	}
}

// readError turns a read error into a logged reason for closing.
func (c *conn) readError(err error) string {
	var lenErr *wire.FrameLengthError
	switch {
	case errors.As(err, &lenErr):
		reason := rejectFrameTooLarge
		if lenErr.Length < 0 {
			reason = rejectBadFrame
		}
		c.rejected(slog.LevelWarn, reason, slog.Int64("len", int64(lenErr.Length)), slog.Int64("max", int64(lenErr.Max)))
		return "frame length out of range"
	case errors.Is(err, io.EOF):
		return "client closed the connection"
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Info("closing connection: stream ended inside a frame")
		return "truncated frame"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.log.Info("closing connection: read timed out", "session", hexID(c.session))
		return "idle"
	}
	return err.Error()
}

// handshake reads the connect request (or a four-letter word) and creates
// or resumes the session. ok is false when the connection must close.
func (c *conn) handshake() (reason string, ok bool) {
	c.nc.SetReadDeadline(c.stats.established.Add(c.srv.cfg.SessionlessCnxnTimeout))
	frame, err := c.fr.Next()
	var lenErr *wire.FrameLengthError
	if errors.As(err, &lenErr) {
		if word, known := fourLetterWord(lenErr.Length); known {
			c.fourLetter(word)
			return "four-letter word", false
		}
	}
	if err != nil {
		reason := c.readError(err)
		if reason == "idle" {
			c.srv.stats.sessionless.Add(1)
		}
		return reason, false
	}
	var req wire.ConnectRequest
	if _, err := req.Decode(frame); err != nil {
		c.rejected(slog.LevelWarn, rejectBadConnect, slog.Int("len", len(frame)), slog.String("err", err.Error()))
		return "bad connect request", false
	}
	if hook := c.srv.cfg.RequestHook; hook != nil { // a paused server holds handshakes too
		if f := hook.Request(RequestInfo{Member: c.srv.cfg.ServerID, Session: req.SessionID, Op: wire.OpCreateSession}); !c.holdFor(f) {
			return "closed", false
		}
	}
	c.stats.received()
	c.srv.stats.received.Add(1)
	c.srv.stats.bytesReceived.Add(int64(len(frame) + 4))
	c.srv.stats.connRequests.Add(1)
	c.timeout = session.Negotiate(time.Duration(req.TimeOut)*time.Millisecond,
		c.srv.cfg.MinSessionTimeout, c.srv.cfg.MaxSessionTimeout)
	if !c.srv.node.Admit(c.srv.cfg.RaftTimeout*2 + time.Second) {
		if c.srv.readOnlyActive() && req.ReadOnly {
			if last := c.srv.fsm.LastZxid(); req.LastZxidSeen > last {
				c.rejected(slog.LevelInfo, rejectZxidAhead, slog.String("client_zxid", hexID(req.LastZxidSeen)), slog.String("server_zxid", hexID(last)))
				return "client zxid ahead", false
			}
			return c.readOnlySession(&req)
		}
		c.rejected(slog.LevelInfo, rejectNotServing)
		c.srv.stats.notServing.Add(1)
		return "not serving", false
	}
	if last := c.srv.fsm.LastZxid(); req.LastZxidSeen > last && !c.srv.node.CatchUp(req.LastZxidSeen, c.done) {
		c.rejected(slog.LevelInfo, rejectZxidAhead, slog.String("client_zxid", hexID(req.LastZxidSeen)), slog.String("server_zxid", hexID(last)))
		return "client zxid ahead", false
	}
	if req.SessionID == 0 {
		return c.createSession(&req)
	}
	return c.resumeSession(&req)
}

func (c *conn) createSession(req *wire.ConnectRequest) (string, bool) {
	s := c.srv
	passwd, err := session.NewPassword(rand.Reader)
	if err != nil {
		return "password: " + err.Error(), false
	}
	cmd := &raftfsm.Command{
		Type: raftfsm.TypeCreateSession, Session: s.newSessionID(), Time: s.nowMillis(),
		Timeout: int32(c.timeout.Milliseconds()), Passwd: passwd,
	}
	res := s.proposeWait(cmd, c.done)
	if res == nil || res.Code != wire.CodeOK {
		return "session could not be created", false
	}
	c.session = cmd.Session
	s.bind(c, cmd.Session)
	c.sendConnectResponse(req, cmd.Session, passwd)
	c.logSession("session created", cmd.Session, timeoutAttr(c.timeout), slog.Bool("read_only", false))
	return "", true
}

func (c *conn) resumeSession(req *wire.ConnectRequest) (string, bool) {
	s := c.srv
	// As ZooKeeper does, the session's current connection here is closed
	// before the password is even checked.
	old := s.unbind(req.SessionID, "client reconnecting with this session")
	sess, ok := s.fsm.Session(req.SessionID)
	if !ok && s.cfg.clustered() {
		// This member may not have applied the session's creation yet (it
		// restarted, or fell behind, and the client had seen no zxid to
		// make it catch up): not knowing is not expiry. Catch up with the
		// leader first.
		if err := s.node.Sync(c.done); err != nil {
			c.log.Info("closing connection: could not catch up to look its session up", "err", err)
			return "revalidation failed", false
		}
		sess, ok = s.fsm.Session(req.SessionID)
	}
	valid := ok && session.PasswordMatches(sess.Passwd, req.Passwd)
	if valid {
		alive, err := s.node.Revalidate(req.SessionID, c.timeout)
		if err != nil {
			// Not knowing is not expiry: the client tries another server.
			c.log.Info("closing connection: could not revalidate its session", "err", err)
			return "revalidation failed", false
		}
		valid = alive
	}
	if !valid {
		c.rejected(slog.LevelInfo, rejectSessionExpired, slog.String("session", hexID(req.SessionID)))
		c.sendConnectResponse(req, 0, make([]byte, session.PasswordLen))
		c.finish()
		<-c.done
		return "invalid session", false
	}
	c.session = req.SessionID
	s.bind(c, req.SessionID)
	// Writes the session sent on an earlier connection may still be in
	// flight (the client saw that connection lost, not the write fail):
	// reads wait for them, as ZooKeeper holds a session's reads behind its
	// pending writes whatever connection brought them.
	c.before = s.writesInFlight(req.SessionID, old)
	c.sendConnectResponse(req, req.SessionID, sess.Passwd)
	c.log.Debug("session resumed", "session", hexID(req.SessionID))
	return "", true
}

func (c *conn) sendConnectResponse(req *wire.ConnectRequest, id int64, passwd []byte) {
	resp := wire.ConnectResponse{SessionID: id, Passwd: passwd, HasReadOnly: req.HasReadOnly}
	if id != 0 {
		resp.TimeOut = int32(c.timeout.Milliseconds())
	}
	c.queueAndWrite(resp.Append)
}

// close closes the socket and stops the connection's goroutines. It takes no lock but
// the connection's own, so it may be called from anywhere, even from inside
// the state machine's apply; the reader goroutine then unregisters the
// connection from the server.
func (c *conn) close(reason string) {
	c.closeOnce.Do(func() {
		c.omu.Lock()
		c.closed = true
		c.omu.Unlock()
		c.stopWrites()
		close(c.done)
		c.nc.Close()
		// Not c.session: close runs on any goroutine, the handshake sets it.
		c.log.Debug("connection closed", "reason", reason)
	})
}

// unbind closes the connection session id has on this server, if any, and
// returns it.
func (s *Server) unbind(id int64, reason string) *conn {
	s.mu.Lock()
	old := s.bySession[id]
	delete(s.bySession, id)
	s.mu.Unlock()
	if old != nil {
		old.close(reason)
	}
	return old
}

// bind makes c the connection of session id, closing any other connection
// the session had on this server.
func (s *Server) bind(c *conn, id int64) {
	s.mu.Lock()
	old := s.bySession[id]
	s.bySession[id] = c
	s.mu.Unlock()
	if old != nil && old != c {
		old.close("session moved to another connection")
	}
}
