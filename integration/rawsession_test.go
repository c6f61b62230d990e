package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// rawTarget is the server a raw-protocol case runs against, and the path
// under which the case makes its nodes: "" on a fresh zkraft server. The
// cases use only the client protocol, so they can be pointed at any
// ZooKeeper 3.8 under a root of their own.
type rawTarget struct {
	addr string
	root string
}

func newRawTarget(t testing.TB, opts ...servertest.Option) rawTarget {
	t.Helper()
	return rawTarget{addr: servertest.NewServer(t, opts...).ConnectString()}
}

// p returns the absolute path of rel ("/a/b") under the target's root.
func (tg rawTarget) p(rel string) string { return tg.root + rel }

// rawCase is one raw-protocol test, run against a fresh server.
type rawCase struct {
	name string
	run  func(t *testing.T, tg rawTarget)
}

func runRawCases(t *testing.T, cases []rawCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newRawTarget(t)) })
	}
}

// rawSession is a session on a raw connection that checks every frame the
// server sends, in order: a reply must answer the request just sent, and a
// notification may only come where the test expects one. A server queues a
// change's notifications before any reply it sends later on the same
// connection, so a reply read with no notification before it proves that
// no change applied before its request notified this connection.
type rawSession struct {
	*rawConn
	t      testing.TB
	addr   string
	id     int64
	passwd []byte
	seq    *rawSeq
}

// rawSeq numbers a session's requests and sentinel nodes; the views of a
// session (on) share it.
type rawSeq struct {
	xid       int32
	sentinels int
}

// mustRawSession connects to addr and opens a new session. The connection
// is closed by t.Cleanup (the session is left to expire).
func mustRawSession(t testing.TB, addr string) *rawSession {
	t.Helper()
	c := dialRaw(t, addr)
	resp := c.mustSession()
	return &rawSession{rawConn: c, t: t, addr: addr, id: resp.SessionID, passwd: resp.Passwd, seq: &rawSeq{}}
}

// on returns a view of s that reports failures to t: a subtest uses it for
// a session its parent opened.
func (s *rawSession) on(t testing.TB) *rawSession {
	c := *s.rawConn
	c.t = t
	v := *s
	v.rawConn, v.t = &c, t
	return &v
}

// mustResume opens a second connection for s's session, which makes the
// server close s's connection.
func (s *rawSession) mustResume() *rawSession {
	s.t.Helper()
	c := dialRaw(s.t, s.addr)
	resp, _ := c.connect(&wire.ConnectRequest{TimeOut: 30000, SessionID: s.id, Passwd: s.passwd})
	require.Equal(s.t, s.id, resp.SessionID, "session resumed")
	return &rawSession{rawConn: c, t: s.t, addr: s.addr, id: s.id, passwd: resp.Passwd, seq: s.seq}
}

// watchEvent is a notification as a test expects it.
type watchEvent struct {
	Type wire.EventType
	Path string
}

func (e watchEvent) String() string { return fmt.Sprintf("%v %s", e.Type, e.Path) }

// send sends a request with the next xid and returns that xid. rec may be
// nil for requests without a body.
func (s *rawSession) send(op wire.Op, rec wire.Record) int32 {
	s.t.Helper()
	s.seq.xid++
	s.sendXid(s.seq.xid, op, rec)
	return s.seq.xid
}

func (s *rawSession) sendXid(xid int32, op wire.Op, rec wire.Record) {
	s.t.Helper()
	s.sendFrame(func(b []byte) []byte {
		b = wire.RequestHeader{Xid: xid, OpCode: op}.Append(b)
		if rec != nil {
			b = rec.Append(b)
		}
		return b
	})
}

// next reads the next frame: its reply header and body.
func (s *rawSession) next() (wire.ReplyHeader, []byte) {
	s.t.Helper()
	frame := s.readFrame()
	var h wire.ReplyHeader
	_, err := h.Decode(frame)
	require.NoError(s.t, err)
	return h, frame[wire.ReplyHeaderSize:]
}

// expectEvents reads the next frames, which must be exactly these
// notifications, in this order.
func (s *rawSession) expectEvents(want ...watchEvent) {
	s.t.Helper()
	for i, w := range want {
		h, body := s.next()
		require.Equal(s.t, wire.XidNotification, h.Xid,
			"frame %d: want the notification %v, got a reply (xid %d, err %v)", i, w, h.Xid, h.Err)
		assert.Equal(s.t, int64(-1), h.Zxid, "a notification's zxid is -1 before ZooKeeper 3.9")
		assert.Equal(s.t, wire.CodeOK, h.Err)
		ev := mustDecode(s.t, body, &wire.WatcherEvent{})
		assert.Equal(s.t, wire.StateSyncConnected, ev.State)
		require.Equal(s.t, w, watchEvent{ev.Type, ev.Path}, "notification %d", i)
	}
}

// expectReply reads the next frame, which must be the reply to xid.
func (s *rawSession) expectReply(xid int32) (wire.ReplyHeader, []byte) {
	s.t.Helper()
	h, body := s.next()
	if h.Xid == wire.XidNotification {
		var ev wire.WatcherEvent
		ev.Decode(body)
		s.t.Fatalf("want the reply to xid %d, got the notification %v %s", xid, ev.Type, ev.Path)
	}
	require.Equal(s.t, xid, h.Xid, "replies come in request order")
	return h, body
}

// do sends a request and reads its reply, checking that exactly the
// notifications events, in order, come before it.
func (s *rawSession) do(op wire.Op, rec wire.Record, events ...watchEvent) (wire.ReplyHeader, []byte) {
	s.t.Helper()
	xid := s.send(op, rec)
	s.expectEvents(events...)
	return s.expectReply(xid)
}

// mustDo is do for a request that must succeed; it returns the reply body.
func (s *rawSession) mustDo(op wire.Op, rec wire.Record, events ...watchEvent) []byte {
	s.t.Helper()
	h, body := s.do(op, rec, events...)
	require.Equal(s.t, wire.CodeOK, h.Err, "%v", op)
	return body
}

// mustFail is do for a request that must fail with code: the reply is the
// header alone.
func (s *rawSession) mustFail(code wire.Code, op wire.Op, rec wire.Record, events ...watchEvent) {
	s.t.Helper()
	h, body := s.do(op, rec, events...)
	assert.Equal(s.t, code, h.Err, "%v", op)
	assert.Empty(s.t, body, "an error reply has no body")
}

// create makes a persistent node with an open ACL.
func (s *rawSession) create(path string, data []byte, events ...watchEvent) {
	s.t.Helper()
	s.mustDo(wire.OpCreate, &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe}, events...)
}

// stat returns the Stat of path, which must exist.
func (s *rawSession) stat(path string) wire.Stat {
	s.t.Helper()
	body := s.mustDo(wire.OpExists, &wire.PathWatchRequest{Path: path})
	return mustDecode(s.t, body, &wire.StatResponse{}).Stat
}

// mustWatchMissing sets an exists watch on path, which must not exist.
func (s *rawSession) mustWatchMissing(path string) {
	s.t.Helper()
	s.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: path, Watch: true})
}

// proveQuiet checks that s has been sent no notification beyond those the
// test has read: it sets an exists watch on a new path under dir, has w
// create that path, and requires the next frame s gets to be that
// NodeCreated. Any notification queued earlier for s would come first.
func (s *rawSession) proveQuiet(w *rawSession, dir string) {
	s.t.Helper()
	s.seq.sentinels++
	path := fmt.Sprintf("%s/sentinel-%d", dir, s.seq.sentinels)
	s.mustWatchMissing(path)
	if w.nc == s.nc {
		s.create(path, nil, watchEvent{wire.EventNodeCreated, path})
		return
	}
	w.create(path, nil)
	s.expectEvents(watchEvent{wire.EventNodeCreated, path})
}

// mustDecode decodes body into rec, requiring that it decodes, that nothing
// is left over, and that rec encodes back to exactly body (so the server
// used the canonical form: no null vectors, no stray header fields).
func mustDecode[R wire.Record](t testing.TB, body []byte, rec R) R {
	t.Helper()
	n, err := rec.Decode(body)
	require.NoError(t, err, "decoding %T", rec)
	require.Equal(t, len(body), n, "bytes left after %T", rec)
	require.Equal(t, body, rec.Append(nil), "%T encodes back differently", rec)
	return rec
}

// assertNewStat checks the Stat of a node just created by the txn with
// zxid, between the wall clock times before and after.
func assertNewStat(t testing.TB, st wire.Stat, zxid, owner int64, dataLen int32, before, after time.Time) {
	t.Helper()
	assert.Equal(t, wire.Stat{
		Czxid: zxid, Mzxid: zxid, Ctime: st.Ctime, Mtime: st.Ctime,
		EphemeralOwner: owner, DataLength: dataLen, Pzxid: zxid,
	}, st)
	assert.GreaterOrEqual(t, st.Ctime, before.UnixMilli(), "ctime")
	assert.LessOrEqual(t, st.Ctime, after.UnixMilli(), "ctime")
}

// reaperPass waits until the container and TTL reaper has run a full pass
// that began after the call: twice, it makes a TTL node of 1ms and waits for
// it to be deleted. Every node reapable when the call began has been
// deleted by then.
func (s *rawSession) reaperPass(dir string) {
	s.t.Helper()
	for range 2 {
		body := s.mustDo(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: dir + "/barrier-", ACL: wire.OpenACLUnsafe,
			Flags: wire.FlagPersistentSequentialWithTTL, TTL: 1})
		path := mustDecode(s.t, body, &wire.Create2Response{}).Path
		h, _ := s.do(wire.OpExists, &wire.PathWatchRequest{Path: path, Watch: true})
		if h.Err == wire.CodeOK {
			s.expectEvents(watchEvent{wire.EventNodeDeleted, path})
		}
	}
}
