//go:build realzk

package integration

// The raw-protocol half of the differential comparison: the opcodes
// go-zookeeper cannot send (create2, createContainer and createTTL with any
// flag, multi with create2/container/TTL sub-ops, multiRead, getChildren,
// getEphemerals, getAllChildrenNumber, addWatch, checkWatches,
// removeWatches, setWatches, setWatches2, whoAmI, standalone check,
// reconfig, deleteContainer, sasl, unknown opcodes, auth with xid -4,
// session resume), through a small client built on the wire package. Every
// reply's header err and decoded body are compared, normalized as in
// realzk_test.go.
//
// Two requests are deliberately never sent to ZooKeeper, because they break
// ZooKeeper 3.8.0 itself: createTTL with a non-TTL flag and ttl -1 (it passes
// validation, then throws while being applied, which stops the server), and
// a passing standalone check (see allowlist entry (b)).

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// rzRawClient is a minimal ZooKeeper client: one connection, requests sent one
// at a time, replies and notifications read in order.
type rzRawClient struct {
	name    string
	nc      net.Conn
	fr      *wire.FrameReader
	xid     int32
	session int64
	passwd  []byte
	dead    string // why the connection is unusable, once it is
}

type rzRawFrame struct {
	hdr     wire.ReplyHeader
	body    []byte
	payload []byte // the whole frame, header included
}

const rzRawSessionTimeout = 20000 // ms; within both servers' bounds

// next reads one frame before deadline.
func (c *rzRawClient) next(deadline time.Time) (rzRawFrame, error) {
	c.nc.SetReadDeadline(deadline)
	p, err := c.fr.Next()
	if err != nil {
		return rzRawFrame{}, err
	}
	var f rzRawFrame
	if _, err := f.hdr.Decode(p); err != nil {
		return rzRawFrame{}, err
	}
	f.payload = append([]byte(nil), p...)
	f.body = f.payload[wire.ReplyHeaderSize:]
	return f, nil
}

func rzIsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// connectRaw opens a connection and sends a ConnectRequest for a new session
// (session 0) or to resume one, and records the ConnectResponse as a step.
func (r *rzRun) connectRaw(name string, readOnly bool, session int64, passwd []byte) *rzRawClient {
	r.t.Helper()
	nc, err := net.DialTimeout("tcp", r.nextAddr(), 5*time.Second)
	if err != nil {
		r.t.Fatalf("%s: dial: %v", r.target, err)
	}
	r.t.Cleanup(func() { nc.Close() })
	cl := &rzRawClient{name: name, nc: nc, fr: wire.NewFrameReader(nc, 64<<20), xid: 0}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	req := wire.ConnectRequest{TimeOut: rzRawSessionTimeout, SessionID: session, Passwd: passwd, HasReadOnly: readOnly}
	b, start := wire.StartFrame(nil)
	b = wire.EndFrame(req.Append(b), start)
	o := r.begin(name, "connect")
	if _, err := nc.Write(b); err != nil {
		r.t.Fatalf("%s: write connect: %v", r.target, err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	p, err := cl.fr.Next()
	if err != nil {
		cl.dead = "no connect response"
		o.add("no connect response: %s", rzRawErrText(err))
	} else {
		var resp wire.ConnectResponse
		if _, err := resp.Decode(p); err != nil {
			o.add("undecodable connect response (%d bytes)", len(p))
		}
		if resp.SessionID != 0 {
			if _, known := r.sessions[resp.SessionID]; !known {
				r.sessions[resp.SessionID] = name
			}
		}
		cl.session, cl.passwd = resp.SessionID, resp.Passwd
		sess := "0"
		switch {
		case resp.SessionID == 0:
		case resp.SessionID == session:
			sess = "resumed(" + r.sessions[session] + ")"
		default:
			sess = "new"
		}
		o.add("len=%d proto=%d timeout=%d session=%s passwd=%dB readOnly=%v/%v",
			len(p), resp.ProtocolVersion, resp.TimeOut, sess, len(resp.Passwd), resp.HasReadOnly, resp.ReadOnly)
	}
	r.end(o, name+": connect")
	return cl
}

func rzRawErrText(err error) string {
	switch {
	case rzIsTimeout(err):
		return "timeout"
	case err != nil:
		return "closed"
	}
	return "nil"
}

// rzCallOpts adjusts one raw request.
type rzCallOpts struct {
	xid   *int32        // xid to send instead of the next one
	wait  time.Duration // how long to wait for the reply; default 5s
	write bool          // the reply zxid is a write's zxid
	raw   []byte        // body bytes to send instead of rec's encoding
}

// raw runs one request as a step: it sends it and reads frames until its
// reply, recording every notification before it, and returns the reply's
// header and body (got is false if no reply came).
func (r *rzRun) raw(cl *rzRawClient, name string, op wire.Op, rec wire.Record, opt rzCallOpts) (hdr wire.ReplyHeader, body []byte, got bool) {
	if opt.write {
		time.Sleep(2 * time.Millisecond)
	}
	o := r.begin(cl.name, name)
	defer func() { r.end(o, cl.name+": "+name) }()
	if cl.dead != "" {
		o.add("not sent: connection %s", cl.dead)
		return
	}
	if r.needsSync(cl.name) && !r.presync(cl, o) {
		return
	}
	var xid int32
	if opt.xid != nil {
		xid = *opt.xid
	} else {
		cl.xid++
		xid = cl.xid
	}
	b, start := wire.StartFrame(nil)
	b = wire.RequestHeader{Xid: xid, OpCode: op}.Append(b)
	switch {
	case opt.raw != nil:
		b = append(b, opt.raw...)
	case rec != nil:
		b = rec.Append(b)
	}
	b = wire.EndFrame(b, start)
	if _, err := cl.nc.Write(b); err != nil {
		cl.dead = "closed"
		o.add("write failed")
		return
	}
	wait := opt.wait
	if wait == 0 {
		wait = 5 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		f, err := cl.next(deadline)
		if err != nil {
			if rzIsTimeout(err) {
				o.add(" no reply within %v", wait)
			} else {
				cl.dead = "closed"
				o.add(" closed")
			}
			return
		}
		switch {
		case f.hdr.Xid == wire.XidNotification:
			var ev wire.WatcherEvent
			ev.Decode(f.body)
			o.event(f.hdr.Zxid, ev)
			continue
		case f.hdr.Xid == wire.XidPing && op != wire.OpPing:
			continue
		case f.hdr.Xid != xid:
			o.add(" unexpected-frame(")
			o.oddFrame(f.payload)
			o.add(")")
			continue
		}
		o.add(" reply(%s", f.hdr.Err)
		if opt.write {
			o.writeZxid(f.hdr.Zxid)
		}
		o.add(")")
		if f.hdr.Err != wire.CodeOK {
			if len(f.body) != 0 {
				o.add(" error-body=%dB:%x", len(f.body), f.body)
			}
		} else {
			o.rawBody(op, f.body)
		}
		return f.hdr, f.body, true
	}
}

// presync sends a sync of "/" and reads frames until its reply, recording
// the notifications that come first as part of step o, and anything else
// odd. It reports whether the connection is still usable.
func (r *rzRun) presync(cl *rzRawClient, o *rzObs) bool {
	cl.xid++
	xid := cl.xid
	b, start := wire.StartFrame(nil)
	b = wire.RequestHeader{Xid: xid, OpCode: wire.OpSync}.Append(b)
	b = (&wire.PathRequest{Path: "/"}).Append(b)
	if _, err := cl.nc.Write(wire.EndFrame(b, start)); err != nil {
		cl.dead = "closed"
		o.add("sync: write failed")
		return false
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := cl.next(deadline)
		if err != nil {
			if rzIsTimeout(err) {
				o.add(" sync: no reply")
			} else {
				cl.dead = "closed"
				o.add(" sync: closed")
			}
			return false
		}
		switch {
		case f.hdr.Xid == wire.XidNotification:
			var ev wire.WatcherEvent
			ev.Decode(f.body)
			o.event(f.hdr.Zxid, ev)
		case f.hdr.Xid == xid:
			if f.hdr.Err != wire.CodeOK {
				o.add(" sync(%s)", f.hdr.Err)
			}
			return true
		case f.hdr.Xid != wire.XidPing:
			o.add(" unexpected-frame(")
			o.oddFrame(f.payload)
			o.add(")")
		}
	}
}

// probe checks whether a connection is still served: it sends exists on
// the root and reports the reply, or that the connection was closed.
func (r *rzRun) probe(cl *rzRawClient) {
	r.raw(cl, "probe (exists ~)", wire.OpExists, &wire.PathWatchRequest{Path: r.root}, rzCallOpts{wait: 3 * time.Second})
}

// expectClose waits for the server to close cl's connection, recording
// any frame that arrives first.
func (r *rzRun) expectClose(cl *rzRawClient, d time.Duration) {
	o := r.begin(cl.name, "")
	defer func() { r.end(o, cl.name+": wait for close") }()
	if cl.dead != "" {
		o.add("already %s", cl.dead)
		return
	}
	deadline := time.Now().Add(d)
	for {
		f, err := cl.next(deadline)
		if err != nil {
			if rzIsTimeout(err) {
				o.add(" still open after %v", d)
			} else {
				cl.dead = "closed"
				o.add(" closed")
			}
			return
		}
		o.add(" frame(")
		o.oddFrame(f.payload)
		o.add(")")
	}
}

// oddFrame renders a frame that is not the reply being waited for: a
// notification, a reply header, or (36 or 37 bytes starting with protocol
// version 0) a ConnectResponse.
func (o *rzObs) oddFrame(p []byte) {
	var h wire.ReplyHeader
	h.Decode(p)
	switch {
	case h.Xid == wire.XidNotification:
		var ev wire.WatcherEvent
		ev.Decode(p[wire.ReplyHeaderSize:])
		o.event(h.Zxid, ev)
	case (len(p) == 36 || len(p) == 37) && h.Xid == 0:
		var cr wire.ConnectResponse
		cr.Decode(p)
		o.add("looks like a ConnectResponse: %dB proto=%d timeout=%d session=%s passwd=%dB",
			len(p), cr.ProtocolVersion, cr.TimeOut, o.owner(cr.SessionID), len(cr.Passwd))
	default:
		o.add("xid=%d err=%s %dB:%x", h.Xid, h.Err, len(p), p)
	}
}

// awaitEvent waits up to d for a notification on cl (for changes the server
// makes by itself, such as deleting an empty container).
func (r *rzRun) awaitEvent(cl *rzRawClient, d time.Duration) {
	o := r.begin(cl.name, "")
	defer func() { r.end(o, cl.name+": await a notification") }()
	if cl.dead != "" {
		o.add("connection %s", cl.dead)
		return
	}
	f, err := cl.next(time.Now().Add(d))
	if err != nil {
		o.add(" none within %v (%s)", d, rzRawErrText(err))
		return
	}
	o.oddFrame(f.payload)
}

func rzWireACLText(acl []wire.ACL) string {
	s := "["
	for i, a := range acl {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%s:%s", a.Perms, a.ID.Scheme, a.ID.ID)
	}
	return s + "]"
}

// rawBody decodes and appends a successful reply's body.
func (o *rzObs) rawBody(op wire.Op, b []byte) {
	rec, ok := wire.ResponseFor(op)
	if !ok || rec == nil {
		if len(b) > 0 {
			o.add(" body=%dB", len(b))
		}
		return
	}
	n, err := rec.Decode(b)
	if err != nil {
		o.add(" undecodable-body(%v, %dB)", err, len(b))
		return
	}
	if n != len(b) {
		o.add(" trailing=%dB", len(b)-n)
	}
	switch v := rec.(type) {
	case *wire.CreateResponse:
		o.add(" path=%q", v.Path)
	case *wire.Create2Response:
		o.add(" path=%q stat=", v.Path)
		o.stat(v.Stat)
	case *wire.StatResponse:
		o.add(" stat=")
		o.stat(v.Stat)
	case *wire.GetDataResponse:
		o.add(" data=%s stat=", rzData(v.Data))
		o.stat(v.Stat)
	case *wire.GetACLResponse:
		o.add(" acl=%s stat=", rzWireACLText(v.ACL))
		o.stat(v.Stat)
	case *wire.GetChildrenResponse:
		kids := v.Children
		if o.run.rootMasked {
			// only the root's children both servers have
			kids = nil
			for _, k := range v.Children {
				if k == "zookeeper" || "/"+k == o.run.root {
					kids = append(kids, k)
				}
			}
			o.add(" (root children filtered)")
			o.add(" list=%s", rzSorted(kids))
			break
		}
		o.add(" list=%s", rzList(kids))
	case *wire.GetChildren2Response:
		o.add(" children=%s stat=", rzList(v.Children))
		o.stat(v.Stat)
	case *wire.SyncResponse:
		o.add(" path=%q", v.Path)
	case *wire.GetAllChildrenNumberResponse:
		o.add(" total=%d", v.TotalNumber)
	case *wire.ErrorResponse:
		o.add(" err=%s", v.Err)
	case *wire.WhoAmIResponse:
		o.add(" whoami=[")
		for i, ci := range v.ClientInfo {
			if i > 0 {
				o.add(" ")
			}
			o.add("%s:%s", ci.AuthScheme, ci.User)
		}
		o.add("]")
	case *wire.SASLResponse:
		o.add(" token=%s", rzData(v.Token))
	case *wire.MultiResponse:
		o.add(" results=[")
		for i, m := range v.Results {
			if i > 0 {
				o.add(", ")
			}
			o.add("{%s %s", m.Type, m.Err)
			switch m.Type {
			case wire.OpCreate:
				o.add(" path=%q", m.Path)
			case wire.OpCreate2:
				o.add(" path=%q stat=", m.Path)
				o.stat(m.Stat)
			case wire.OpSetData:
				o.add(" stat=")
				o.stat(m.Stat)
			case wire.OpGetData:
				o.add(" data=%s stat=", rzData(m.Data))
				o.stat(m.Stat)
			case wire.OpGetChildren:
				o.add(" children=%s", rzList(m.Children))
			}
			o.add("}")
		}
		o.add("]")
	default:
		o.add(" body=%T", rec)
	}
}

// ---------------------------------------------------------------------------

func TestRealzkRaw(t *testing.T) {
	addrs := realzkAddrs(t)
	root := newRZRoot(t)
	t.Cleanup(func() { realzkCleanup(t, addrs[0], root) })
	t.Logf("root %s", root)

	var runs [2]*rzRun
	ok := t.Run("zkraft", func(t *testing.T) {
		runs[0] = newRZRun(t, "zkraft", rzServers(t, len(addrs)), root)
		rzRawScript(runs[0])
	})
	ok = t.Run("zookeeper", func(t *testing.T) {
		runs[1] = newRZRun(t, "zookeeper", addrs, root)
		rzRawScript(runs[1])
	}) && ok
	if !ok || runs[0] == nil || runs[1] == nil {
		t.Fatal("a run did not complete; nothing compared")
	}
	rzCompare(t, "raw", runs[0], runs[1])
}

func rzRawScript(r *rzRun) {
	p := r.p
	open := wire.OpenACLUnsafe
	W := rzCallOpts{write: true}
	R := rzCallOpts{}
	xidPtr := func(x int32) *int32 { return &x }

	create := func(cl *rzRawClient, op wire.Op, path string, data []byte, flags int32, acl []wire.ACL) {
		r.raw(cl, fmt.Sprintf("%s %s %s flags=%d acl=%s", op, path, rzData(data), flags, rzWireACLText(acl)), op,
			&wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}, W)
	}
	createTTL := func(cl *rzRawClient, path string, flags int32, ttl int64) {
		r.raw(cl, fmt.Sprintf("createTTL %s flags=%d ttl=%d", path, flags, ttl), wire.OpCreateTTL,
			&wire.CreateTTLRequest{Path: path, Data: []byte("t"), ACL: open, Flags: flags, TTL: ttl}, W)
	}
	pathOp := func(cl *rzRawClient, op wire.Op, path string, write bool) {
		r.raw(cl, fmt.Sprintf("%s %s", op, path), op, &wire.PathRequest{Path: path}, rzCallOpts{write: write})
	}
	watchOp := func(cl *rzRawClient, op wire.Op, path string, watch bool) {
		r.raw(cl, fmt.Sprintf("%s %s watch=%v", op, path, watch), op, &wire.PathWatchRequest{Path: path, Watch: watch}, R)
	}
	setData := func(cl *rzRawClient, path string, data string) {
		r.raw(cl, fmt.Sprintf("setData %s %q", path, data), wire.OpSetData,
			&wire.SetDataRequest{Path: path, Data: []byte(data), Version: -1}, W)
	}
	del := func(cl *rzRawClient, path string) {
		r.raw(cl, "delete "+path, wire.OpDelete, &wire.DeleteRequest{Path: path, Version: -1}, W)
	}
	multi := func(cl *rzRawClient, name string, op wire.Op, ops ...wire.MultiOp) {
		r.raw(cl, fmt.Sprintf("%s %s", op, name), op, &wire.MultiRequest{Ops: ops}, rzCallOpts{write: op == wire.OpMulti})
	}
	watches := func(cl *rzRawClient, op wire.Op, path string, typ int32) {
		r.raw(cl, fmt.Sprintf("%s %s type=%d", op, path, typ), op, &wire.RemoveWatchesRequest{Path: path, Type: typ}, R)
	}
	addWatch := func(cl *rzRawClient, path string, mode int32) {
		r.raw(cl, fmt.Sprintf("addWatch %s mode=%d", path, mode), wire.OpAddWatch, &wire.AddWatchRequest{Path: path, Mode: mode}, R)
	}
	cr := func(path string, flags int32) *wire.CreateRequest {
		return &wire.CreateRequest{Path: path, Data: []byte("m"), ACL: open, Flags: flags}
	}

	X := r.connectRaw("X", false, 0, nil)
	Y := r.connectRaw("Y", true, 0, nil)
	create(X, wire.OpCreate, r.root, nil, 0, open)

	// --- create2 (15) with every flag and error
	create(X, wire.OpCreate2, p("/c2"), []byte("d"), 0, open)
	create(X, wire.OpCreate2, p("/c2"), nil, 0, open)
	create(X, wire.OpCreate2, p("/missing/x"), nil, 0, open)
	create(X, wire.OpCreate2, p("/c2e"), []byte("e"), 1, open)
	create(X, wire.OpCreate2, p("/c2s-"), nil, 2, open)
	create(X, wire.OpCreate2, p("/c2es-"), nil, 3, open)
	create(X, wire.OpCreate2, p("/c2c"), nil, 4, open)
	create(X, wire.OpCreate2, p("/c2t"), nil, 5, open)
	create(X, wire.OpCreate2, p("/c2t"), nil, 6, open)
	create(X, wire.OpCreate2, p("/c2x"), nil, 7, open)
	create(X, wire.OpCreate2, p("/c2x"), nil, -1, open)
	create(X, wire.OpCreate2, p("/c2e/x"), nil, 0, open)
	create(X, wire.OpCreate2, p("/c2x"), nil, 0, []wire.ACL{{Perms: 31, ID: wire.Id{Scheme: "foo", ID: "x"}}})
	create(X, wire.OpCreate2, p("/c2x"), nil, 0, nil)
	create(X, wire.OpCreate2, p("/c2x/"), nil, 0, open)
	create(X, wire.OpCreate2, p("/c2/"), nil, 2, open)
	create(X, wire.OpCreate2, p("/c2//"), nil, 2, open)
	create(X, wire.OpCreate2, "", nil, 0, open)
	create(X, wire.OpCreate2, "noslash", nil, 0, open)
	create(X, wire.OpCreate2, p("/a\x00b"), nil, 0, open)
	create(X, wire.OpCreate2, p("/./x"), nil, 0, open)
	create(X, wire.OpCreate2, p("/c2/.."), nil, 0, open)
	create(X, wire.OpCreate2, p("/\xff"), nil, 0, open)
	create(X, wire.OpCreate, p("/op1ttl"), nil, 5, open)
	create(X, wire.OpCreate, p("/op1c"), nil, 4, open)
	create(X, wire.OpCreate, p("/op1x"), nil, 8, open)

	// --- createContainer (19) with any flag
	create(X, wire.OpCreateContainer, p("/cc"), []byte("c"), 4, open)
	create(X, wire.OpCreateContainer, p("/cc"), nil, 4, open)
	create(X, wire.OpCreateContainer, p("/cc0"), nil, 0, open)
	create(X, wire.OpCreateContainer, p("/cc1"), nil, 1, open)
	create(X, wire.OpCreateContainer, p("/cc2-"), nil, 2, open)
	create(X, wire.OpCreateContainer, p("/cc5"), nil, 5, open)
	create(X, wire.OpCreateContainer, p("/cc7"), nil, 7, open)
	create(X, wire.OpCreateContainer, p("/missing/cc"), nil, 4, open)
	create(X, wire.OpCreateContainer, p("/c2e/cc"), nil, 4, open)
	create(X, wire.OpCreate2, p("/cc/k"), nil, 1, open)
	watchOp(X, wire.OpExists, p("/cc0"), false)
	watchOp(X, wire.OpExists, p("/cc1"), false)

	// --- createTTL (21): flags and ttl bounds
	createTTL(X, p("/t"), 5, 60000)
	createTTL(X, p("/t"), 5, 60000)
	createTTL(X, p("/ts-"), 6, 60000)
	createTTL(X, p("/t0"), 0, 60000)
	// Not sent: createTTL with a non-TTL flag and ttl -1 passes ZooKeeper
	// 3.8.0's checks, and then applying it throws in DataTree (ttl must be
	// positive), which kills ZooKeeper's SyncThread and shuts the server down.
	createTTL(X, p("/t1"), 1, 60000)
	createTTL(X, p("/t4"), 4, 60000)
	createTTL(X, p("/t7"), 7, 60000)
	createTTL(X, p("/tz"), 5, 0)
	createTTL(X, p("/tz"), 5, -1)
	createTTL(X, p("/tz"), 6, -5)
	createTTL(X, p("/tmax"), 5, 0xFFFFFFFFFF)
	createTTL(X, p("/tover"), 5, 0x10000000000)
	createTTL(X, p("/missing/t"), 5, 60000)
	createTTL(X, p("/c2e/t"), 5, 60000)
	createTTL(X, p("/tbad/"), 5, 60000)
	createTTL(X, p("/ts/"), 6, 60000)
	watchOp(X, wire.OpGetData, p("/t"), false)

	// --- multi with create2, createContainer and createTTL sub-ops
	multi(X, "mixed creates", wire.OpMulti,
		wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu1"), 0)},
		wire.MultiOp{Type: wire.OpCreateContainer, Req: cr(p("/mu2"), 4)},
		wire.MultiOp{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: p("/mu3"), ACL: open, Flags: 5, TTL: 3600000}},
		wire.MultiOp{Type: wire.OpCreate, Req: cr(p("/mu4"), 4)},
		wire.MultiOp{Type: wire.OpCreate, Req: cr(p("/mu5"), 0)},
		wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu1/s-"), 3)},
		wire.MultiOp{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: p("/mu1"), Version: 0}},
		wire.MultiOp{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: p("/mu1"), Data: []byte("x"), Version: 0}},
		wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: p("/mu5"), Version: -1}},
	)
	watchOp(X, wire.OpExists, p("/mu2"), false)
	watchOp(X, wire.OpExists, p("/mu3"), false)
	watchOp(X, wire.OpExists, p("/mu4"), false)
	multi(X, "failing mixed creates", wire.OpMulti,
		wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu6"), 0)},
		wire.MultiOp{Type: wire.OpCreateContainer, Req: cr(p("/mu7"), 4)},
		wire.MultiOp{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: p("/mu8"), ACL: open, Flags: 5, TTL: 1000}},
		wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: p("/missing"), Version: -1}},
		wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu9"), 0)},
	)
	watchOp(X, wire.OpExists, p("/mu6"), false)
	multi(X, "createTTL bad ttl", wire.OpMulti,
		wire.MultiOp{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: p("/mu10"), ACL: open, Flags: 5, TTL: 0}})
	multi(X, "createTTL non-ttl flag", wire.OpMulti,
		wire.MultiOp{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: p("/mu11"), ACL: open, Flags: 0, TTL: 5}})
	multi(X, "createContainer flag 0", wire.OpMulti, wire.MultiOp{Type: wire.OpCreateContainer, Req: cr(p("/mu12"), 0)})
	watchOp(X, wire.OpExists, p("/mu12"), false)
	multi(X, "create2 flag 4", wire.OpMulti, wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu13"), 4)})
	multi(X, "create2 bad flag", wire.OpMulti, wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu14"), 9)})
	multi(X, "create flag 5 (no ttl)", wire.OpMulti, wire.MultiOp{Type: wire.OpCreate, Req: cr(p("/mu15"), 5)})
	r.probe(X)
	multi(X, "create2 flag 6 (no ttl)", wire.OpMulti, wire.MultiOp{Type: wire.OpCreate2, Req: cr(p("/mu15"), 6)})
	r.probe(X)
	multi(X, "getData in a write multi", wire.OpMulti,
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: p("/c2")}})
	r.probe(X)
	multi(X, "empty", wire.OpMulti)
	multi(X, "check only", wire.OpMulti, wire.MultiOp{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: p("/c2"), Version: 0}})
	r.raw(X, "multi unknown sub-op 99", wire.OpMulti, nil, rzCallOpts{write: true,
		raw: wire.MultiHeader{Type: wire.OpError, Done: true, Err: -1}.Append(wire.AppendString(wire.MultiHeader{Type: 99, Err: -1}.Append(nil), "x"))})
	r.probe(X)
	r.raw(X, "multi without terminator", wire.OpMulti, nil, rzCallOpts{write: true,
		raw: (&wire.DeleteRequest{Path: p("/missing"), Version: -1}).Append(wire.MultiHeader{Type: wire.OpDelete, Err: -1}.Append(nil))})
	r.probe(X)

	// --- multiRead (22)
	create(X, wire.OpCreate, p("/noread"), []byte("secret"), 0, []wire.ACL{{Perms: 30, ID: wire.Id{Scheme: "world", ID: "anyone"}}})
	multi(X, "reads", wire.OpMultiRead,
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: p("/c2")}},
		wire.MultiOp{Type: wire.OpGetChildren, Req: &wire.PathWatchRequest{Path: r.root}},
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: p("/missing")}},
		wire.MultiOp{Type: wire.OpGetChildren, Req: &wire.PathWatchRequest{Path: p("/missing")}},
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: p("/noread")}},
		wire.MultiOp{Type: wire.OpGetChildren, Req: &wire.PathWatchRequest{Path: p("/noread")}},
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/zookeeper/config"}},
		wire.MultiOp{Type: wire.OpGetChildren, Req: &wire.PathWatchRequest{Path: p("/c2")}},
	)
	multi(X, "reads with watch flag", wire.OpMultiRead,
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: p("/c2"), Watch: true}})
	setData(Y, p("/c2"), "after multiRead watch")
	r.probe(X)
	multi(X, "empty", wire.OpMultiRead)
	multi(X, "create in multiRead", wire.OpMultiRead, wire.MultiOp{Type: wire.OpCreate, Req: cr(p("/mr"), 0)})
	r.probe(X)
	multi(X, "mixed read and write", wire.OpMultiRead,
		wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: p("/c2")}},
		wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: p("/c2"), Version: -1}})
	r.probe(X)
	watchOp(X, wire.OpExists, p("/mr"), false)

	// --- getChildren (8), getData and exists oddities
	watchOp(X, wire.OpGetChildren, r.root, false)
	watchOp(X, wire.OpGetChildren, p("/missing"), false)
	watchOp(X, wire.OpGetChildren, p("/noread"), false)
	watchOp(X, wire.OpGetChildren, p("/c2"), true)
	create(Y, wire.OpCreate, p("/c2/k"), nil, 0, open)
	r.probe(X)
	watchOp(X, wire.OpGetChildren, "/zookeeper", false)
	watchOp(X, wire.OpGetData, p("/noread"), false)
	watchOp(X, wire.OpExists, p("/noread"), false)
	// "" is an alias of the root in ZooKeeper's DataTree; the root's child
	// fields are masked, since the reference server's root differs.
	r.rootMasked = true
	watchOp(X, wire.OpGetData, "", false)
	watchOp(X, wire.OpExists, "", false)
	pathOp(X, wire.OpGetACL, "", false)
	watchOp(X, wire.OpGetChildren, "", false)
	r.rootMasked = false
	watchOp(X, wire.OpGetData, "noslash", false)
	watchOp(X, wire.OpExists, p("/a\x00b"), false)
	watchOp(X, wire.OpExists, p("/x/"), false)
	watchOp(X, wire.OpGetData, p("/x/"), false)
	pathOp(X, wire.OpGetACL, p("/noread"), false)
	pathOp(X, wire.OpSync, "", false)
	pathOp(X, wire.OpSync, "noslash", false)
	pathOp(X, wire.OpSync, p("/missing"), false)

	// --- getEphemerals (103): only the caller's, by prefix
	pathOp(X, wire.OpGetEphemerals, r.root, false)
	pathOp(X, wire.OpGetEphemerals, p("/c2"), false)
	pathOp(X, wire.OpGetEphemerals, p("/c2e"), false)
	pathOp(X, wire.OpGetEphemerals, p("/missing"), false)
	pathOp(X, wire.OpGetEphemerals, "/", false)
	pathOp(X, wire.OpGetEphemerals, "", false)
	pathOp(Y, wire.OpGetEphemerals, "/", false)

	// --- getAllChildrenNumber (104)
	pathOp(X, wire.OpGetAllChildrenNumber, r.root, false)
	pathOp(X, wire.OpGetAllChildrenNumber, p("/c2"), false)
	pathOp(X, wire.OpGetAllChildrenNumber, p("/mu1"), false)
	pathOp(X, wire.OpGetAllChildrenNumber, p("/missing"), false)
	pathOp(X, wire.OpGetAllChildrenNumber, p("/noread"), false)
	pathOp(X, wire.OpGetAllChildrenNumber, "/zookeeper", false)
	pathOp(X, wire.OpGetAllChildrenNumber, "/zookeeper/config", false)
	pathOp(X, wire.OpGetAllChildrenNumber, "noslash", false)

	// --- addWatch (106): persistent and persistent recursive, and their events
	addWatch(X, p("/pw"), 0)
	addWatch(X, p("/rw"), 1)
	addWatch(X, p("/bad"), 2)
	addWatch(X, p("/bad"), -1)
	addWatch(X, "noslash", 0)
	addWatch(X, p("/x/"), 1)
	create(Y, wire.OpCreate, p("/pw"), []byte("1"), 0, open)
	r.probe(X)
	create(Y, wire.OpCreate, p("/pw/c"), nil, 0, open)
	r.probe(X)
	setData(Y, p("/pw"), "2")
	setData(Y, p("/pw/c"), "2")
	r.probe(X)
	del(Y, p("/pw/c"))
	r.probe(X)
	del(Y, p("/pw"))
	r.probe(X)
	create(Y, wire.OpCreate, p("/pw"), []byte("again"), 0, open)
	r.probe(X)
	watchOp(X, wire.OpGetData, p("/pw"), true)
	watchOp(X, wire.OpGetChildren, p("/pw"), true)
	setData(Y, p("/pw"), "both")
	create(Y, wire.OpCreate, p("/pw/d"), nil, 0, open)
	r.probe(X)
	create(Y, wire.OpCreate, p("/rw"), nil, 0, open)
	create(Y, wire.OpCreate, p("/rw/a"), nil, 0, open)
	create(Y, wire.OpCreate, p("/rw/a/b"), nil, 0, open)
	setData(Y, p("/rw/a/b"), "x")
	del(Y, p("/rw/a/b"))
	r.probe(X)
	r.raw(Y, "multi under watches", wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate, Req: cr(p("/rw/m"), 0)},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: p("/rw/m"), Data: []byte("y"), Version: -1}},
		{Type: wire.OpCreate, Req: cr(p("/pw/m"), 0)},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: p("/rw/m"), Version: -1}},
	}}, W)
	r.probe(X)
	watchOp(X, wire.OpGetData, p("/rw/a"), true)
	setData(Y, p("/rw/a"), "recursive and data watch")
	r.probe(X)
	addWatch(X, p("/rw/a"), 0)
	setData(Y, p("/rw/a"), "recursive and persistent")
	r.probe(X)
	addWatch(X, p("/pw"), 1)
	create(Y, wire.OpCreate, p("/pw/e"), nil, 0, open)
	r.probe(X)
	addWatch(X, p("/pw"), 0)
	create(Y, wire.OpCreate, p("/pw/f"), nil, 0, open)
	r.probe(X)

	// --- checkWatches (17) and removeWatches (18), types 1 to 5
	watchOp(X, wire.OpGetData, p("/c2"), true)
	watchOp(X, wire.OpGetChildren, p("/c2"), true)
	watchOp(X, wire.OpExists, p("/nx"), true)
	for _, path := range []string{p("/c2"), p("/pw"), p("/rw"), p("/rw/a"), p("/nx"), p("/missing")} {
		for typ := int32(1); typ <= 5; typ++ {
			watches(X, wire.OpCheckWatches, path, typ)
		}
	}
	watches(X, wire.OpCheckWatches, p("/c2"), 0)
	watches(X, wire.OpCheckWatches, p("/c2"), 6)
	watches(Y, wire.OpCheckWatches, p("/c2"), 3)
	watches(X, wire.OpRemoveWatches, p("/c2"), 2)
	watches(X, wire.OpCheckWatches, p("/c2"), 2)
	watches(X, wire.OpCheckWatches, p("/c2"), 1)
	watches(X, wire.OpRemoveWatches, p("/c2"), 2)
	watches(X, wire.OpRemoveWatches, p("/c2"), 1)
	watches(X, wire.OpRemoveWatches, p("/c2"), 3)
	watches(X, wire.OpRemoveWatches, p("/nx"), 1)
	watches(X, wire.OpRemoveWatches, p("/nx"), 2)
	watches(X, wire.OpRemoveWatches, p("/pw"), 5)
	watches(X, wire.OpRemoveWatches, p("/pw"), 4)
	watches(X, wire.OpCheckWatches, p("/pw"), 4)
	watches(X, wire.OpCheckWatches, p("/pw"), 3)
	watches(X, wire.OpRemoveWatches, p("/rw"), 4)
	watches(X, wire.OpRemoveWatches, p("/rw"), 5)
	watches(X, wire.OpRemoveWatches, p("/rw/a"), 3)
	watches(X, wire.OpCheckWatches, p("/rw/a"), 3)
	watches(X, wire.OpRemoveWatches, p("/c2"), 6)
	watches(X, wire.OpRemoveWatches, p("/missing"), 3)
	setData(Y, p("/c2"), "no watch")
	create(Y, wire.OpCreate, p("/c2/k2"), nil, 0, open)
	setData(Y, p("/pw"), "no watch")
	create(Y, wire.OpCreate, p("/rw/z"), nil, 0, open)
	setData(Y, p("/rw/a"), "no watch")
	create(Y, wire.OpCreate, p("/nx"), nil, 0, open)
	r.probe(X)
	watchOp(X, wire.OpGetData, p("/c2"), true)
	watchOp(X, wire.OpGetChildren, p("/c2"), true)
	watches(X, wire.OpRemoveWatches, p("/c2"), 3)
	watches(X, wire.OpCheckWatches, p("/c2"), 3)
	setData(Y, p("/c2"), "no watch 2")
	r.probe(X)
	addWatch(X, p("/pw"), 0)
	watches(X, wire.OpRemoveWatches, p("/pw"), 3)
	watches(X, wire.OpCheckWatches, p("/pw"), 4)
	addWatch(X, p("/rw"), 1)
	watches(X, wire.OpCheckWatches, p("/rw"), 1)
	watches(X, wire.OpRemoveWatches, p("/rw"), 2)
	watches(X, wire.OpCheckWatches, p("/rw"), 5)
	setData(Y, p("/rw/a"), "after remove data")
	r.probe(X)
	watches(X, wire.OpRemoveWatches, p("/rw"), 1)
	watches(X, wire.OpCheckWatches, p("/rw"), 3)

	// --- setWatches (101) and setWatches2 (105) after changes
	create(X, wire.OpCreate, p("/sw"), nil, 0, open)
	for _, n := range []string{"/changed", "/same", "/deleted", "/parent", "/sameparent"} {
		create(X, wire.OpCreate, p("/sw"+n), nil, 0, open)
	}
	hdr, _, _ := r.raw(X, "sync (zxid before the changes)", wire.OpSync, &wire.PathRequest{Path: r.root}, R)
	rel := hdr.Zxid
	setData(Y, p("/sw/changed"), "c")
	del(Y, p("/sw/deleted"))
	create(Y, wire.OpCreate, p("/sw/created"), nil, 0, open)
	create(Y, wire.OpCreate, p("/sw/parent/kid"), nil, 0, open)
	Z := r.connectRaw("Z", false, 0, nil)
	r.raw(Z, "setWatches xid -8", wire.OpSetWatches, &wire.SetWatches{
		RelativeZxid: rel,
		DataWatches:  []string{p("/sw/changed"), p("/sw/same"), p("/sw/deleted")},
		ExistWatches: []string{p("/sw/created"), p("/sw/stillmissing")},
		ChildWatches: []string{p("/sw/parent"), p("/sw/sameparent"), p("/sw/deleted")},
	}, rzCallOpts{xid: xidPtr(wire.XidSetWatches)})
	setData(Y, p("/sw/same"), "s")
	create(Y, wire.OpCreate, p("/sw/stillmissing"), nil, 0, open)
	create(Y, wire.OpCreate, p("/sw/sameparent/k"), nil, 0, open)
	r.probe(Z)
	r.raw(Z, "setWatches relativeZxid 0", wire.OpSetWatches, &wire.SetWatches{
		RelativeZxid: 0,
		DataWatches:  []string{p("/sw/same"), "/zookeeper/config"},
		ChildWatches: []string{p("/sw"), "/zookeeper"},
	}, R)
	r.raw(Z, "setWatches2", wire.OpSetWatches2, &wire.SetWatches2{
		RelativeZxid:               rel,
		DataWatches:                []string{p("/sw/changed")},
		PersistentWatches:          []string{p("/sw")},
		PersistentRecursiveWatches: []string{p("/sw/parent")},
	}, R)
	create(Y, wire.OpCreate, p("/sw/parent/kid2"), nil, 0, open)
	setData(Y, p("/sw"), "p")
	create(Y, wire.OpCreate, p("/sw/new"), nil, 0, open)
	r.probe(Z)
	watches(Z, wire.OpCheckWatches, p("/sw"), 4)
	watches(Z, wire.OpCheckWatches, p("/sw/parent"), 5)

	// --- whoAmI (107) and auth (100) with xid -4
	r.raw(Y, "whoAmI", wire.OpWhoAmI, nil, R)
	r.raw(Y, "auth digest u1:p1 xid -4", wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("u1:p1")}, rzCallOpts{xid: xidPtr(wire.XidAuth)})
	r.raw(Y, "whoAmI", wire.OpWhoAmI, nil, R)
	r.raw(Y, "auth digest nocolon", wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("nocolon")}, R)
	r.raw(Y, "auth digest u1:p1 again", wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("u1:p1")}, R)
	r.raw(Y, "auth digest u2:p2", wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("u2:p2")}, R)
	r.raw(Y, "whoAmI", wire.OpWhoAmI, nil, R)
	create(Y, wire.OpCreate2, p("/authy"), nil, 0, wire.CreatorAllACL)
	pathOp(Y, wire.OpGetACL, p("/authy"), false)
	r.raw(X, "whoAmI", wire.OpWhoAmI, nil, R)
	r.raw(X, "ping xid -2", wire.OpPing, nil, rzCallOpts{xid: xidPtr(wire.XidPing)})

	// --- reconfig (16)
	r.raw(X, "reconfig empty", wire.OpReconfig, &wire.ReconfigRequest{CurConfigID: -1}, W)
	r.raw(X, "reconfig joining", wire.OpReconfig, &wire.ReconfigRequest{JoiningServers: "server.2=127.0.0.1:2889:3889;2182", CurConfigID: -1}, W)
	r.raw(X, "reconfig bad version", wire.OpReconfig, &wire.ReconfigRequest{NewMembers: "server.1=127.0.0.1:2888:3888;2181", CurConfigID: 12345}, W)
	r.probe(X)

	// --- deleteContainer (20) from a client
	watchOp(Y, wire.OpExists, p("/cc"), true)
	pathOp(X, wire.OpDeleteContainer, p("/cc"), true)
	del(X, p("/cc/k"))
	pathOp(X, wire.OpDeleteContainer, p("/cc"), true)
	// the server's container check deletes the now empty container (every
	// 1s on ZooKeeper, 100ms on zkraft)
	r.awaitEvent(Y, 20*time.Second)
	watchOp(Y, wire.OpExists, p("/cc"), false)
	pathOp(X, wire.OpDeleteContainer, p("/c2"), true)
	pathOp(X, wire.OpDeleteContainer, p("/c2/k"), true)
	pathOp(X, wire.OpDeleteContainer, p("/c2e"), true)
	pathOp(X, wire.OpDeleteContainer, p("/t"), true)
	pathOp(X, wire.OpDeleteContainer, p("/mu2"), true)
	pathOp(X, wire.OpDeleteContainer, p("/noread"), true)
	pathOp(X, wire.OpDeleteContainer, p("/missing"), true)
	pathOp(X, wire.OpDeleteContainer, "/", true)
	pathOp(X, wire.OpDeleteContainer, "/zookeeper", true)
	pathOp(X, wire.OpDeleteContainer, "/zookeeper/config", true)
	pathOp(X, wire.OpDeleteContainer, "noslash", true)
	pathOp(X, wire.OpDeleteContainer, p("/x/"), true)
	r.probe(X)
	r.raw(X, "deleteContainer raw path bytes", wire.OpDeleteContainer, nil, rzCallOpts{write: true, raw: []byte(p("/t"))})
	r.probe(X)
	watchOp(X, wire.OpGetChildren, r.root, false)

	// --- check (13) outside a multi
	X3 := r.connectRaw("X3", false, 0, nil)
	if r.target == "zookeeper" {
		// ZooKeeper 3.8.0 never answers a passing standalone check, and it
		// logs it as a txn of type 13 that it cannot read back: the server
		// then fails to start again from its data directory ("Unsupported
		// Txn with type=%d13"). So it is only sent to zkraft (allowlist (b)).
		o := r.begin("X3", "")
		o.add("not sent to ZooKeeper 3.8.0 (never answered; its txn poisons the txn log)")
		r.end(o, "X3: check (13) standalone, passing")
	} else {
		r.raw(X3, "check (13) standalone, passing", wire.OpCheck, &wire.CheckVersionRequest{Path: p("/c2"), Version: -1}, rzCallOpts{write: true, wait: 1500 * time.Millisecond})
	}
	r.probe(X3)
	X4 := r.connectRaw("X4", false, 0, nil)
	r.raw(X4, "check (13) standalone, missing node", wire.OpCheck, &wire.CheckVersionRequest{Path: p("/missing"), Version: -1}, W)
	r.probe(X4)
	r.raw(X4, "check (13) standalone, bad version", wire.OpCheck, &wire.CheckVersionRequest{Path: p("/c2"), Version: 99}, W)
	r.probe(X4)
	r.raw(X4, "check (13) standalone, bad path", wire.OpCheck, &wire.CheckVersionRequest{Path: "noslash", Version: -1}, W)
	r.probe(X4)

	// --- unknown opcodes, sasl, a failed auth, each on its own connection
	for _, op := range []wire.Op{999, 10, 0, -10, 23, 105 + 100} {
		cl := r.connectRaw(fmt.Sprintf("U%d", op), false, 0, nil)
		r.raw(cl, fmt.Sprintf("opcode %d", op), op, nil, rzCallOpts{raw: wire.AppendString(nil, p("/c2"))})
		r.expectClose(cl, 2*time.Second)
	}
	S := r.connectRaw("S", false, 0, nil)
	r.raw(S, "sasl", wire.OpSASL, &wire.SASLRequest{Token: []byte("token")}, R)
	r.probe(S)
	A := r.connectRaw("A", false, 0, nil)
	r.raw(A, "auth unknown scheme xid -4", wire.OpAuth, &wire.AuthPacket{Scheme: "foo", Auth: []byte("bar")}, rzCallOpts{xid: xidPtr(wire.XidAuth)})
	r.expectClose(A, 2*time.Second)
	A2 := r.connectRaw("A2", false, 0, nil)
	r.raw(A2, "auth ip scheme", wire.OpAuth, &wire.AuthPacket{Scheme: "ip", Auth: []byte("127.0.0.1")}, R)
	r.expectClose(A2, 2*time.Second)

	// --- watch events go only to watchers with READ on the node they are
	// about (ZooKeeper with the fix for CVE-2024-23944): the node's own ACL,
	// the parent's for NodeChildrenChanged, checked at delivery; a one-shot
	// watch is used up all the same, a persistent one stays.
	O := r.connectRaw("O", false, 0, nil)
	Wt := r.connectRaw("Wt", false, 0, nil)
	auth := func(cl *rzRawClient, userPass string) {
		r.raw(cl, "auth digest "+userPass, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte(userPass)}, R)
	}
	auth(O, "o:o")
	auth(Wt, "w:w")
	digest := func(userPass string) wire.Id {
		user, _, _ := strings.Cut(userPass, ":")
		sum := sha1.Sum([]byte(userPass))
		return wire.Id{Scheme: "digest", ID: user + ":" + base64.StdEncoding.EncodeToString(sum[:])}
	}
	ownerOnly := []wire.ACL{{Perms: wire.PermAll, ID: digest("o:o")}}
	readable := []wire.ACL{{Perms: wire.PermRead, ID: wire.Id{Scheme: "world", ID: "anyone"}}, {Perms: wire.PermAll, ID: digest("o:o")}}
	writeOnly := []wire.ACL{{Perms: wire.PermWrite, ID: digest("w:w")}, {Perms: wire.PermAll, ID: digest("o:o")}}
	setACL := func(cl *rzRawClient, path string, acl []wire.ACL) {
		r.raw(cl, fmt.Sprintf("setACL %s %s", path, rzWireACLText(acl)), wire.OpSetACL,
			&wire.SetACLRequest{Path: path, ACL: acl, Version: -1}, W)
	}
	create(O, wire.OpCreate, p("/aw"), nil, 0, open)
	// data watch, made unreadable, then readable again: nothing, and used up
	create(O, wire.OpCreate, p("/aw/d"), nil, 0, readable)
	watchOp(Wt, wire.OpGetData, p("/aw/d"), true)
	setACL(O, p("/aw/d"), ownerOnly)
	setData(O, p("/aw/d"), "hidden")
	r.probe(Wt)
	setACL(O, p("/aw/d"), readable)
	setData(O, p("/aw/d"), "seen?")
	r.probe(Wt)
	watchOp(Wt, wire.OpGetData, p("/aw/d"), true)
	del(O, p("/aw/d"))
	r.probe(Wt)
	// exists on missing nodes, created unreadable and readable
	watchOp(Wt, wire.OpExists, p("/aw/e1"), true)
	watchOp(Wt, wire.OpExists, p("/aw/e2"), true)
	create(O, wire.OpCreate, p("/aw/e1"), nil, 0, ownerOnly)
	create(O, wire.OpCreate, p("/aw/e2"), nil, 0, readable)
	r.probe(Wt)
	// exists on a node the watcher may write but not read
	create(O, wire.OpCreate, p("/aw/wo"), nil, 0, writeOnly)
	watchOp(Wt, wire.OpGetData, p("/aw/wo"), true)
	watchOp(Wt, wire.OpExists, p("/aw/wo"), true)
	setData(Wt, p("/aw/wo"), "by w")
	watchOp(Wt, wire.OpExists, p("/aw/e1"), true)
	del(O, p("/aw/e1"))
	r.probe(Wt)
	// child watches: the parent's ACL decides, not the child's
	create(O, wire.OpCreate, p("/aw/p"), nil, 0, readable)
	watchOp(Wt, wire.OpGetChildren, p("/aw/p"), true)
	create(O, wire.OpCreate, p("/aw/p/hidden"), nil, 0, ownerOnly)
	r.probe(Wt)
	watchOp(Wt, wire.OpGetChildren, p("/aw/p"), true)
	setACL(O, p("/aw/p"), ownerOnly)
	create(O, wire.OpCreate, p("/aw/p/open"), nil, 0, readable)
	r.probe(Wt)
	// a persistent watch stays through what it may not see
	create(O, wire.OpCreate, p("/aw/x"), nil, 0, readable)
	addWatch(Wt, p("/aw/x"), 0)
	setData(O, p("/aw/x"), "1")
	create(O, wire.OpCreate, p("/aw/x/c"), nil, 0, ownerOnly)
	setACL(O, p("/aw/x"), ownerOnly)
	setData(O, p("/aw/x"), "2")
	del(O, p("/aw/x/c"))
	setACL(O, p("/aw/x"), readable)
	setData(O, p("/aw/x"), "3")
	r.probe(Wt)
	// a recursive watch: each event by the ACL of the node it is about
	create(O, wire.OpCreate, p("/aw/r"), nil, 0, ownerOnly)
	addWatch(Wt, p("/aw/r"), 1)
	create(O, wire.OpCreate, p("/aw/r/a"), nil, 0, ownerOnly)
	create(O, wire.OpCreate, p("/aw/r/a/b"), nil, 0, readable)
	setData(O, p("/aw/r"), "r")
	setData(O, p("/aw/r/a"), "a")
	setData(O, p("/aw/r/a/b"), "b")
	del(O, p("/aw/r/a/b"))
	del(O, p("/aw/r/a"))
	r.probe(Wt)
	// an ephemeral deleted with its session, readable and not
	E := r.connectRaw("E", false, 0, nil)
	auth(E, "o:o")
	create(E, wire.OpCreate, p("/aw/eph-open"), nil, wire.FlagEphemeral, readable)
	create(E, wire.OpCreate, p("/aw/eph-hidden"), nil, wire.FlagEphemeral, ownerOnly)
	watchOp(Wt, wire.OpExists, p("/aw/eph-open"), true)
	watchOp(Wt, wire.OpExists, p("/aw/eph-hidden"), true)
	r.raw(E, "closeSession", wire.OpCloseSession, nil, W)
	r.expectClose(E, 2*time.Second)
	r.probe(Wt)

	// --- session resume, close
	bad := append([]byte(nil), X.passwd...)
	if len(bad) > 0 {
		bad[0] ^= 0xff
	}
	Xbad := r.connectRaw("Xbad", false, X.session, bad)
	r.expectClose(Xbad, 2*time.Second)
	X2 := r.connectRaw("X2", false, X.session, X.passwd)
	r.expectClose(X, 2*time.Second)
	pathOp(X2, wire.OpGetEphemerals, r.root, false)
	watchOp(X2, wire.OpExists, p("/c2e"), false)
	r.raw(Y, "closeSession", wire.OpCloseSession, nil, W)
	r.expectClose(Y, 2*time.Second)
	Yagain := r.connectRaw("Yagain", false, Y.session, Y.passwd)
	r.expectClose(Yagain, 2*time.Second)
	watchOp(X2, wire.OpGetChildren, r.root, false)
	r.raw(X2, "closeSession", wire.OpCloseSession, nil, W)
	r.expectClose(X2, 2*time.Second)
	V := r.connectRaw("V", false, 0, nil)
	watchOp(V, wire.OpGetChildren, r.root, false)
	watchOp(V, wire.OpExists, p("/c2e"), false)
	watchOp(V, wire.OpExists, r.root, false)
}
