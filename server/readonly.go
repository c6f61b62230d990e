package server

import (
	"crypto/rand"
	"log/slog"
	"sync"
	"time"

	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/wire"
)

// Read-only mode, as ZooKeeper 3.8 has it (readonlymode.enabled, with the
// local sessions it needs since ZOOKEEPER-3863). A member that does not
// serve, because it has had no leader for syncLimit ticks (or has found
// none since it started), and has found none for two seconds more
// (readOnlyActive), still takes the clients whose connect request
// allows read-only: it gives them sessions of its own, which no other
// member knows and which end with read-only mode; it serves their reads
// from its copy of the tree, and answers sync and every write with
// NOTREADONLY. It refuses a client resuming a session of the cluster, and
// a client that does not allow read-only, as ZooKeeper does. isro answers
// "ro", srvr's Mode "read-only". When the member serves again it closes the
// read-only connections; their clients find a member that serves and
// start a new session there (a client never downgrades its session).

// readOnlyActive reports whether the member takes read-only clients now:
// once it has gone neither serving nor knowing a leader for the grace a
// ZooKeeper server gives an election before it starts its read-only server
// (max(2 s, tickTime) in LOOKING). A member that knows a leader and catches
// up with it before it serves again is not read-only: its copy of the tree
// may be older than what its clients saw elsewhere.
func (s *Server) readOnlyActive() bool {
	return s.cfg.ReadOnlyMode && s.node.Looking() >= readOnlyGrace(s.cfg.TickTime)
}

// readOnlyGrace is ZooKeeper's grace before a LOOKING server goes read-only.
func readOnlyGrace(tick time.Duration) time.Duration { return max(2*time.Second, tick) }

// mode is the server's state as srvr prints it.
func (s *Server) mode() string {
	if s.readOnlyActive() {
		return "read-only"
	}
	return s.node.Mode()
}

// roSessions are the sessions of read-only clients: this member's own.
type roSessions struct {
	mu sync.Mutex // guards m
	m  map[int64]*roSession
}

type roSession struct {
	passwd   []byte
	timeout  time.Duration
	lastSeen time.Time
}

// len counts the read-only sessions.
func (r *roSessions) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// add records a new read-only session.
func (r *roSessions) add(id int64, passwd []byte, timeout time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[int64]*roSession)
	}
	r.m[id] = &roSession{passwd: passwd, timeout: timeout, lastSeen: time.Now()}
}

// resume reports whether a read-only session may be resumed with passwd:
// it exists and has been silent for less than its timeout.
func (r *roSessions) resume(id int64, passwd []byte) (*roSession, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.m[id]
	if rs == nil || time.Since(rs.lastSeen) > rs.timeout {
		delete(r.m, id)
		return nil, false
	}
	if !session.PasswordMatches(rs.passwd, passwd) {
		return nil, false
	}
	rs.lastSeen = time.Now()
	return rs, true
}

func (r *roSessions) touch(id int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rs := r.m[id]; rs != nil {
		rs.lastSeen = now
	}
}

func (r *roSessions) remove(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

func (r *roSessions) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.m)
}

// ServingChanged implements member.Host. A member that stops serving
// closes every client connection, so that the clients move to members that
// serve (in read-only mode, those that allow it may come back read-only);
// one that serves again ends read-only mode: its read-only connections
// close and their sessions are forgotten.
func (s *Server) ServingChanged(on bool) {
	if !on {
		s.finishConns("this member stopped serving")
		return
	}
	s.ro.clear()
	for _, c := range s.allConns() {
		if c.readOnly.Load() {
			c.close("read-only mode ended")
		}
	}
}

// readOnlySession runs the handshake of a read-only client: a new session
// of this member's own, or one of them resumed. A client resuming a
// session of the cluster is refused, as ZooKeeper refuses to renew a global
// session in read-only mode: it must find a member that serves.
func (c *conn) readOnlySession(req *wire.ConnectRequest) (string, bool) {
	s := c.srv
	if req.SessionID != 0 {
		if _, ok := s.ro.resume(req.SessionID, req.Passwd); ok {
			c.startReadOnly(req, req.SessionID, req.Passwd)
			return "", true
		}
		if _, global := s.fsm.Session(req.SessionID); global {
			c.rejected(slog.LevelInfo, rejectGlobalInReadOnly, slog.String("session", hexID(req.SessionID)))
			return "global session in read-only mode", false
		}
		c.rejected(slog.LevelInfo, rejectSessionExpired, slog.String("session", hexID(req.SessionID)))
		c.sendConnectResponse(req, 0, make([]byte, session.PasswordLen))
		c.finish()
		<-c.done
		return "invalid session", false
	}
	passwd, err := session.NewPassword(rand.Reader)
	if err != nil {
		return "password: " + err.Error(), false
	}
	id := s.newSessionID()
	s.ro.add(id, passwd, c.timeout)
	c.startReadOnly(req, id, passwd)
	c.logSession("session created", id, timeoutAttr(c.timeout), slog.Bool("read_only", true))
	return "", true
}

func (c *conn) startReadOnly(req *wire.ConnectRequest, id int64, passwd []byte) {
	c.readOnly.Store(true)
	c.session = id
	c.srv.bind(c, id)
	resp := wire.ConnectResponse{TimeOut: int32(c.timeout.Milliseconds()), SessionID: id, Passwd: passwd,
		ReadOnly: true, HasReadOnly: req.HasReadOnly}
	c.queueAndWrite(resp.Append)
}

// readOnlyRequest answers what a read-only session may not do: sync and
// every write get NOTREADONLY; closeSession ends the session here. It
// reports whether it answered the request.
func (c *conn) readOnlyRequest(req request) (reason string, ok, answered bool) {
	switch {
	case req.op == wire.OpCloseSession:
		if !c.waitDrained() {
			return "closed", false, true
		}
		c.srv.ro.remove(c.session)
		c.reply(req, c.srv.fsm.LastZxid(), wire.CodeOK, nil)
		c.logSession("session closed", c.session)
		c.finish()
		<-c.done
		return "session closed by the client", false, true
	case req.op == wire.OpSync || isWrite(req.op):
		if !c.waitDrained() {
			return "closed", false, true
		}
		c.rejected(slog.LevelDebug, rejectNotReadOnly, slog.String("op", req.op.String()))
		c.reply(req, c.srv.fsm.LastZxid(), wire.CodeNotReadOnly, nil)
		return "", true, true
	}
	return "", true, false
}
