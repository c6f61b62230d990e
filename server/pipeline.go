package server

import (
	"log/slog"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/wire"
)

// isWrite reports whether op changes state and so goes through Raft.
func isWrite(op wire.Op) bool {
	switch op {
	case wire.OpCreate, wire.OpDelete, wire.OpSetData, wire.OpSetACL, wire.OpMulti, wire.OpCreate2,
		wire.OpReconfig, wire.OpCreateContainer, wire.OpDeleteContainer, wire.OpCreateTTL, wire.OpCheck:
		return true
	}
	return false
}

// handle runs one request of the session's pipeline. Writes are proposed
// and left in flight (several at once); anything else first waits until
// every earlier write of this connection has been applied and answered, so
// replies leave in request order and a session reads its own writes.
func (c *conn) handle(frame []byte, now time.Time) (string, bool) {
	var h wire.RequestHeader
	if _, err := h.Decode(frame); err != nil {
		c.rejected(slog.LevelWarn, rejectBadFrame, slog.Int("len", len(frame)))
		return "short frame", false
	}
	body := frame[wire.RequestHeaderSize:]
	c.stats.received()
	c.srv.stats.received.Add(1)
	c.srv.stats.bytesReceived.Add(int64(len(frame) + 4))
	req := request{xid: h.Xid, op: h.OpCode, start: now}
	var f Fault
	if hook := c.srv.cfg.RequestHook; hook != nil {
		f = hook.Request(RequestInfo{Member: c.srv.cfg.ServerID, Session: c.session, Op: h.OpCode,
			Path: leadingPath(h.OpCode, body)})
		if !c.holdFor(f) {
			return "closed", false
		}
	}
	c.touch(now) // after a fault's hold: the session counts from when the server took the request in
	if reason, ok, answered := c.fault(req, f); answered {
		return reason, ok
	}
	req.lose = f.LoseReply
	if c.readOnly.Load() {
		if reason, ok, answered := c.readOnlyRequest(req); answered {
			return reason, ok
		}
	}
	switch {
	case h.OpCode == wire.OpPing:
		req.xid = wire.XidPing // ZooKeeper answers every ping with xid -2
		if req.lose {
			c.reply(req, 0, wire.CodeOK, nil)
			return "", true
		}
		// Written by this goroutine when the socket takes it, so that an
		// idle session needs no writer goroutine (conn.writer).
		hdr := wire.ReplyHeader{Xid: wire.XidPing, Zxid: c.srv.fsm.LastZxid()}
		c.queueAndWrite(hdr.Append)
		return "", true
	case h.OpCode == wire.OpCloseSession:
		return c.closeSession(req)
	case h.OpCode == wire.OpCreateSession:
		return c.createSessionAgain()
	case isWrite(h.OpCode):
		c.submit(req, body)
		return "", true
	}
	if !c.waitDrained() {
		return "closed", false
	}
	if c.ended.Load() {
		// The session's close is applied (it expired, or was closed) and
		// the connection closes once its queue is written: a read from it
		// now is answered as ZooKeeper answers a session that is closing,
		// not from a tree that no longer holds its ephemerals.
		c.reply(req, c.srv.fsm.LastZxid(), wire.CodeSessionExpired, nil)
		return "", true
	}
	return c.local(req, body)
}

// request is what a reply needs to know of its request.
type request struct {
	xid   int32
	op    wire.Op
	start time.Time
	lose  bool // a fault: the connection closes instead of the reply
}

// holdFor waits out a fault's delay and hold; false if the connection
// closed meanwhile.
func (c *conn) holdFor(f Fault) bool {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return false
		}
	}
	if f.Hold != nil {
		select {
		case <-f.Hold:
		case <-c.done:
			return false
		}
	}
	return true
}

// fault applies what a RequestHook decided for req once its hold is over,
// short of losing its reply, and reports whether that answered the
// request.
func (c *conn) fault(req request, f Fault) (reason string, ok, answered bool) {
	switch {
	case f.CloseBefore:
		return "closed by a fault rule before the request", false, true
	case f.Fail != 0:
		if !c.waitDrained() { // in order, after the writes before it
			return "closed", false, true
		}
		c.reply(req, c.srv.fsm.LastZxid(), f.Fail, nil)
		return "", true, true
	}
	return "", true, false
}

// leadingPath returns the path a request names first, for ops whose body
// begins with one.
func leadingPath(op wire.Op, body []byte) string {
	switch op {
	case wire.OpCreate, wire.OpDelete, wire.OpExists, wire.OpGetData, wire.OpSetData, wire.OpGetACL,
		wire.OpSetACL, wire.OpGetChildren, wire.OpSync, wire.OpGetChildren2, wire.OpCheck, wire.OpCreate2,
		wire.OpCheckWatches, wire.OpRemoveWatches, wire.OpCreateContainer, wire.OpDeleteContainer,
		wire.OpCreateTTL, wire.OpGetEphemerals, wire.OpGetAllChildrenNumber, wire.OpAddWatch:
		d := wire.NewDecoder(body)
		if p := d.String(); d.Err() == nil {
			return p
		}
	}
	return ""
}

// submit proposes a write. Its reply is queued by the FSM observer when
// this member applies it.
func (c *conn) submit(req request, body []byte) {
	if c.reconfigSent {
		// A reconfig may go to more than one leader before it is taken
		// (member.Node.ProposePrepared): the session's next write waits
		// for it, lest it reach the next leader first. (Pings go on being
		// answered meanwhile.)
		c.reconfigSent = false
		if !c.waitDrained() {
			return
		}
	}
	if c.unsettled.Load() {
		// A leader change left a write of this session in the balance
		// (Server.settleLater): this one waits, lest it commit first.
		if !c.waitDrained() {
			return
		}
		c.unsettled.Store(false)
	}
	if !c.writeStarted() {
		return // closed: the request is dropped unapplied, as if never read
	}
	cmd := &raftfsm.Command{
		Type: raftfsm.TypeRequest, Session: c.session, Time: c.srv.nowMillis(),
		ExtendedTypes: c.srv.cfg.ExtendedTypesEnabled, Auth: c.ids(), Op: req.op, Body: body,
	}
	if req.op == wire.OpReconfig {
		c.srv.proposePrepared(cmd, answer{c: c, req: req})
		c.reconfigSent = true
		return
	}
	c.srv.propose(cmd, answer{c: c, req: req})
}

// writeApplied runs inside the FSM's apply: it queues the write's reply.
func (c *conn) writeApplied(req request, r *raftfsm.Result) {
	defer c.writeFinished()
	if r == nil {
		c.log.Warn("closing connection: write could not be committed", "op", req.op.String())
		c.close("write failed")
		return
	}
	c.reply(req, int64(r.Index), r.Code, r.Resp)
}

// closeSession proposes the session's close, waits for its reply to be
// written, and ends the connection.
func (c *conn) closeSession(req request) (string, bool) {
	if !c.writeStarted() {
		return "closed", false
	}
	cmd := &raftfsm.Command{Type: raftfsm.TypeCloseSession, Session: c.session, Time: c.srv.nowMillis()}
	c.srv.propose(cmd, callback(func(r *raftfsm.Result) {
		defer c.writeFinished()
		if r == nil {
			c.close("close failed")
			return
		}
		c.reply(req, int64(r.Index), wire.CodeOK, nil)
		c.logSession("session closed", cmd.Session)
		c.finish()
	}))
	<-c.done
	return "session closed by the client", false
}

// writeStarted counts a write in flight, unless the connection is closed:
// then it reports false and the write must not be proposed. (A session
// resumed on a new connection waits for the writes its old connections
// have in flight, and counts on them not to start more: see
// Server.writesInFlight.)
func (c *conn) writeStarted() bool {
	c.pmu.Lock()
	if c.stopped {
		c.pmu.Unlock()
		return false
	}
	if c.inflight == 0 {
		c.drained = make(chan struct{})
	}
	c.inflight++
	c.pmu.Unlock()
	c.srv.stats.outstanding.Add(1)
	return true
}

func (c *conn) writeFinished() {
	c.pmu.Lock()
	c.inflight--
	parked := false
	if c.inflight == 0 {
		close(c.drained)
		parked, c.parked = c.parked, false
	}
	c.pmu.Unlock()
	c.srv.stats.outstanding.Add(-1)
	if parked {
		c.srv.unpark(c)
	}
}

// onlyWrite reports whether the connection has exactly one write in flight
// and is open.
func (c *conn) onlyWrite() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.inflight == 1 && !c.stopped
}

// stopWrites makes writeStarted refuse from now on; part of closing.
func (c *conn) stopWrites() {
	c.pmu.Lock()
	c.stopped = true
	c.pmu.Unlock()
}

// writesDrained returns a channel closed once the writes in flight now
// have been applied, or nil if there are none.
func (c *conn) writesDrained() <-chan struct{} {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.inflight == 0 {
		return nil
	}
	return c.drained
}

// waitDrained waits until no write of this connection, nor of the
// session's connections before it on this server, is in flight: a
// session's requests are answered in order even across a reconnection, as
// ZooKeeper orders them by session. It reports false if the connection
// closed first.
func (c *conn) waitDrained() bool {
	for _, ch := range c.before {
		select {
		case <-ch:
		case <-c.done:
			return false
		}
	}
	c.before = nil
	c.pmu.Lock()
	if c.inflight == 0 {
		c.pmu.Unlock()
		return true
	}
	ch := c.drained
	c.pmu.Unlock()
	select {
	case <-ch:
		return true
	case <-c.done:
		return false
	}
}

// errorBody marks a reply body that goes out with an error code, where
// ZooKeeper sends one.
type errorBody struct{ wire.Record }

// reply queues a reply: the header, then the body unless the request failed
// (or the body is an errorBody). A multi's body comes with code OK even when
// one of its ops failed.
func (c *conn) reply(req request, zxid int64, code wire.Code, resp wire.Record) {
	if req.lose { // the replies before it still go out
		c.log.Debug("a fault rule lost the reply", "op", req.op.String(), "xid", req.xid)
		c.finish()
		return
	}
	if req.op != wire.OpPing { // counted before the reply goes, as ZooKeeper does: a client that has it sees it counted
		now := time.Now()
		lat := now.Sub(req.start)
		c.stats.answered(req, zxid, lat, now)
		c.srv.stats.latency(lat, isWrite(req.op))
	}
	hdr := wire.ReplyHeader{Xid: req.xid, Zxid: zxid, Err: code}
	c.queue(func(b []byte) []byte {
		b = hdr.Append(b)
		if eb, ok := resp.(errorBody); ok {
			b = eb.Append(b)
		} else if code == wire.CodeOK && resp != nil {
			b = resp.Append(b)
		}
		return b
	})
}

// event queues a watch notification.
func (c *conn) event(ev wire.EventType, path string) {
	n := c.queue(func(b []byte) []byte { return appendEvent(b, ev, path) })
	c.srv.stats.watchBytes.Add(int64(n))
}

// appendEvent appends the body of a notification of ev on path: its reply
// header and the event.
func appendEvent(b []byte, ev wire.EventType, path string) []byte {
	b = wire.ReplyHeader{Xid: wire.XidNotification, Zxid: -1}.Append(b)
	e := wire.WatcherEvent{Type: ev, State: wire.StateSyncConnected, Path: path}
	return e.Append(b)
}

// createSessionAgain answers a createSession opcode sent after the
// handshake as ZooKeeper 3.8.0 does: with a connect response for the
// connection's own session, then closing the connection.
func (c *conn) createSessionAgain() (string, bool) {
	if !c.waitDrained() {
		return "closed", false
	}
	sess, ok := c.srv.fsm.Session(c.session)
	if !ok {
		return "session gone", false
	}
	resp := wire.ConnectResponse{TimeOut: int32(c.timeout.Milliseconds()), SessionID: c.session, Passwd: sess.Passwd}
	c.queue(resp.Append)
	c.finish()
	<-c.done
	return "createSession after the handshake", false
}
