// Package history records what ZooKeeper clients did in a test and
// checks it against ZooKeeper's guarantees: that the writes, and the reads
// made after a sync, are linearizable on each znode (checked with
// github.com/anishathalye/porcupine), and that each session reads its own
// writes, sees writes in zxid order, and sees a watch's event before any
// reply that shows the change which fired it.
//
// A Recorder records clients two ways. It hands out go-zookeeper clients
// (Connect, or Wrap for a *zk.Conn made with Recorder.Option) whose calls
// are recorded as they are made and answered. And its Proxy records any
// client, in any language (a plain *zk.Conn, lockrecipe, Curator, kazoo),
// that connects through it: it forwards the connections to the servers
// byte for byte and reads the ZooKeeper protocol as it goes by. Check
// reads the history and Verify fails a test with a readable report and
// porcupine's HTML visualisation:
//
//	rec := history.New()
//	hosts := rec.Proxy(t, srv.ConnectString()) // "127.0.0.1:port", for any client
//	conn, _, err := zk.Connect(strings.Split(hosts, ","), 10*time.Second)
//	... the test's own code uses conn, or hands hosts to a client of its own ...
//	rec.Verify(t)
//
// or, with a recording go-zookeeper client:
//
//	conn, _, err := rec.Connect([]string{srv.ConnectString()}, 10*time.Second)
//	... the test's own code uses conn as a *zk.Conn ...
//	rec.Verify(t)
//
// What is checked and what is not is said on Check.
package history

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Recorder records the calls of the clients it hands out, and of those
// connected through its proxies, and their sessions' events, in one
// history.
type Recorder struct {
	start time.Time
	seq   atomic.Int64 // orders every call, return and event

	undecoded atomic.Int64 // frames a proxy forwarded but could not decode

	mu       sync.Mutex // guards the fields below
	ops      []*Op
	events   []Event
	clients  int
	sessions map[int64]int           // the proxies' clients, by session
	proxied  map[*proxyConn]struct{} // the proxies' open connections
	empty    bool                    // AllowEmpty: Verify passes a history with no operation
}

// AllowEmpty lets Verify pass a history with no operation in it, which it
// otherwise fails: a test whose code used a client the Recorder did not
// hand out (or wrap), and not through its Proxy, recorded nothing, and
// nothing checked would pass.
func (r *Recorder) AllowEmpty() {
	r.mu.Lock()
	r.empty = true
	r.mu.Unlock()
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{start: time.Now()} }

// Op is one recorded call and its outcome.
type Op struct {
	ID      int    // its place in the history, from 0
	Client  int    // the client that made it, from 0
	Session int64  // the client's session, if the same when it was called and answered (else 0)
	Kind    string // create, delete, set, get, exists, children, sync, multi, check
	Path    string
	Data    []byte // create, set: what was written
	Flags   int32  // create
	Version int32  // delete, set, check: the version expected (-1: any)
	Watch   bool   // get, exists, children: a watch was set
	Sub     []*Op  // multi: its ops, each with its own outcome

	Call, Return         int64 // places in the recorder's order of calls, returns and events
	CallTime, ReturnTime time.Duration
	Pending              bool // not answered when the history was read

	Outcome Outcome
	Err     error    // as the client returned it
	Created string   // create: the path created
	Stat    *zk.Stat // set, get, exists (nil: no node), children
	Result  []byte   // get: the data
	Names   []string // children
}

// Outcome is how a call ended.
type Outcome uint8

const (
	// OK: it succeeded.
	OK Outcome = iota
	// Failed: the server refused it with an error code; a write did not
	// happen.
	Failed
	// Unknown: the client never learned (a connection lost, a session
	// expired, a timeout): a write may or may not have happened.
	Unknown
)

// String returns "ok", "failed" or "unknown".
func (o Outcome) String() string { return [...]string{"ok", "failed", "unknown"}[o] }

// Event is a session event or watch notification a client received.
type Event struct {
	Client  int
	Session int64
	Seq     int64 // its place in the recorder's order
	At      time.Duration
	zk.Event
}

// Conn is a go-zookeeper client whose calls are recorded. It is a *zk.Conn
// (embedded): the calls it records are Create, CreateContainer, CreateTTL,
// Delete, Set, Get, GetW, Exists, ExistsW, Children, ChildrenW, Sync and
// Multi; the others (AddAuth, SetACL, Close, ...) pass through unrecorded.
type Conn struct {
	*zk.Conn
	rec    *Recorder
	client int
}

// Connect connects a go-zookeeper client as zk.Connect does, with the
// given options, and records its calls and events. The Recorder sets the
// client's event callback after the options: one they set is replaced.
func (r *Recorder) Connect(servers []string, sessionTimeout time.Duration, options ...func(*zk.Conn)) (*Conn, <-chan zk.Event, error) {
	client, option := r.newClient()
	conn, events, err := zk.Connect(servers, sessionTimeout, func(c *zk.Conn) {
		for _, o := range options {
			o(c)
		}
	}, option)
	if err != nil {
		return nil, nil, err
	}
	return &Conn{Conn: conn, rec: r, client: client}, events, nil
}

// Option returns a go-zookeeper option that records a client's events, and
// the client's number, for Wrap: a client made without it has its calls
// recorded but not its events, and the watch checks skip it.
func (r *Recorder) Option() (option func(*zk.Conn), client int) {
	client, option = r.newClient()
	return option, client
}

// Wrap records the calls of conn as client's (from Option).
func (r *Recorder) Wrap(conn *zk.Conn, client int) *Conn {
	return &Conn{Conn: conn, rec: r, client: client}
}

func (r *Recorder) newClient() (int, func(*zk.Conn)) {
	r.mu.Lock()
	client := r.nextClient()
	r.mu.Unlock()
	var conn atomic.Pointer[zk.Conn]
	return client, func(c *zk.Conn) {
		conn.Store(c)
		zk.WithEventCallback(func(ev zk.Event) {
			var session int64
			if c := conn.Load(); c != nil {
				session = c.SessionID()
			}
			r.event(client, session, ev)
		})(c)
	}
}

// nextClient numbers a new client; r.mu must be held.
func (r *Recorder) nextClient() int {
	client := r.clients
	r.clients++
	return client
}

func (r *Recorder) event(client int, session int64, ev zk.Event) {
	seq := r.seq.Add(1)
	r.mu.Lock()
	r.events = append(r.events, Event{Client: client, Session: session, Seq: seq, At: time.Since(r.start), Event: ev})
	r.mu.Unlock()
}

// addLocked appends op to the history, numbering it; r.mu must be held.
func (r *Recorder) addLocked(op *Op) {
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
}

// begin records a call.
func (c *Conn) begin(op *Op) *Op {
	r := c.rec
	op.Client, op.Session = c.client, c.SessionID()
	op.Call, op.CallTime, op.Pending = r.seq.Add(1), time.Since(r.start), true
	r.mu.Lock()
	r.addLocked(op)
	r.mu.Unlock()
	return op
}

// end records a call's answer; fill sets the op's results, if it
// succeeded (go-zookeeper returns a zero Stat with some errors), or if it
// is a multi (its ops' own errors).
func (c *Conn) end(op *Op, err error, fill func()) {
	r := c.rec
	seq, at, session := r.seq.Add(1), time.Since(r.start), c.SessionID()
	r.mu.Lock()
	defer r.mu.Unlock()
	if session != op.Session {
		session = 0 // the session changed while the call was out: which one answered is not known
	}
	op.Return, op.ReturnTime, op.Session, op.Pending = seq, at, session, false
	op.Err, op.Outcome = err, outcome(err)
	if fill != nil && (err == nil || op.Kind == "multi") {
		fill()
	}
}

// outcome classifies a client's error: the server's error codes are
// definite; anything else may hide a write that happened.
func outcome(err error) Outcome {
	if err == nil {
		return OK
	}
	for _, definite := range []error{zk.ErrNoNode, zk.ErrNoAuth, zk.ErrBadVersion, zk.ErrNoChildrenForEphemerals,
		zk.ErrNodeExists, zk.ErrNotEmpty, zk.ErrInvalidACL, zk.ErrBadArguments, zk.ErrInvalidFlags,
		zk.ErrInvalidPath, zk.ErrAPIError} {
		if errors.Is(err, definite) {
			return Failed
		}
	}
	return Unknown
}

// Create records and makes a create.
func (c *Conn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	op := c.begin(&Op{Kind: "create", Path: path, Data: data, Flags: flags})
	p, err := c.Conn.Create(path, data, flags, acl)
	c.end(op, err, func() { op.Created = p })
	return p, err
}

// CreateContainer records and makes a createContainer.
func (c *Conn) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	op := c.begin(&Op{Kind: "create", Path: path, Data: data, Flags: flags})
	p, err := c.Conn.CreateContainer(path, data, flags, acl)
	c.end(op, err, func() { op.Created = p })
	return p, err
}

// CreateTTL records and makes a createTTL.
func (c *Conn) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	op := c.begin(&Op{Kind: "create", Path: path, Data: data, Flags: flags})
	p, err := c.Conn.CreateTTL(path, data, flags, acl, ttl)
	c.end(op, err, func() { op.Created = p })
	return p, err
}

// Delete records and makes a delete.
func (c *Conn) Delete(path string, version int32) error {
	op := c.begin(&Op{Kind: "delete", Path: path, Version: version})
	err := c.Conn.Delete(path, version)
	c.end(op, err, nil)
	return err
}

// Set records and makes a setData.
func (c *Conn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	op := c.begin(&Op{Kind: "set", Path: path, Data: data, Version: version})
	st, err := c.Conn.Set(path, data, version)
	c.end(op, err, func() { op.Stat = st })
	return st, err
}

// Get records and makes a getData.
func (c *Conn) Get(path string) ([]byte, *zk.Stat, error) {
	op := c.begin(&Op{Kind: "get", Path: path})
	data, st, err := c.Conn.Get(path)
	c.end(op, err, func() { op.Result, op.Stat = data, st })
	return data, st, err
}

// GetW records and makes a getData that sets a watch.
func (c *Conn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	op := c.begin(&Op{Kind: "get", Path: path, Watch: true})
	data, st, ch, err := c.Conn.GetW(path)
	c.end(op, err, func() { op.Result, op.Stat = data, st })
	return data, st, ch, err
}

// Exists records and makes an exists.
func (c *Conn) Exists(path string) (bool, *zk.Stat, error) {
	op := c.begin(&Op{Kind: "exists", Path: path})
	ok, st, err := c.Conn.Exists(path)
	c.end(op, err, func() {
		if ok {
			op.Stat = st
		}
	})
	return ok, st, err
}

// ExistsW records and makes an exists that sets a watch.
func (c *Conn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	op := c.begin(&Op{Kind: "exists", Path: path, Watch: true})
	ok, st, ch, err := c.Conn.ExistsW(path)
	c.end(op, err, func() {
		if ok {
			op.Stat = st
		}
	})
	return ok, st, ch, err
}

// Children records and makes a getChildren.
func (c *Conn) Children(path string) ([]string, *zk.Stat, error) {
	op := c.begin(&Op{Kind: "children", Path: path})
	names, st, err := c.Conn.Children(path)
	c.end(op, err, func() { op.Names, op.Stat = names, st })
	return names, st, err
}

// ChildrenW records and makes a getChildren that sets a watch.
func (c *Conn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	op := c.begin(&Op{Kind: "children", Path: path, Watch: true})
	names, st, ch, err := c.Conn.ChildrenW(path)
	c.end(op, err, func() { op.Names, op.Stat = names, st })
	return names, st, ch, err
}

// Sync records and makes a sync.
func (c *Conn) Sync(path string) (string, error) {
	op := c.begin(&Op{Kind: "sync", Path: path})
	p, err := c.Conn.Sync(path)
	c.end(op, err, nil)
	return p, err
}

// Multi records and makes a multi of *zk.CreateRequest, *zk.DeleteRequest,
// *zk.SetDataRequest and *zk.CheckVersionRequest.
func (c *Conn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	op := &Op{Kind: "multi"}
	for _, o := range ops {
		switch v := o.(type) {
		case *zk.CreateRequest:
			op.Sub = append(op.Sub, &Op{Kind: "create", Path: v.Path, Data: v.Data, Flags: v.Flags})
		case *zk.DeleteRequest:
			op.Sub = append(op.Sub, &Op{Kind: "delete", Path: v.Path, Version: v.Version})
		case *zk.SetDataRequest:
			op.Sub = append(op.Sub, &Op{Kind: "set", Path: v.Path, Data: v.Data, Version: v.Version})
		case *zk.CheckVersionRequest:
			op.Sub = append(op.Sub, &Op{Kind: "check", Path: v.Path, Version: v.Version})
		}
	}
	c.begin(op)
	res, err := c.Conn.Multi(ops...)
	for _, r := range res {
		if r.Error != nil && err == nil {
			err = r.Error
		}
	}
	c.end(op, err, func() {
		if len(res) == len(op.Sub) {
			for i, r := range res {
				op.Sub[i].Created, op.Sub[i].Stat, op.Sub[i].Err, op.Sub[i].Outcome = r.String, r.Stat, r.Error, outcome(r.Error)
			}
		}
	})
	return res, err
}

// Ops returns a copy of the history's operations, in the order they were
// called (pending ones included), with every reply a Proxy has forwarded.
func (r *Recorder) Ops() []Op {
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Op, len(r.ops))
	for i, op := range r.ops {
		out[i] = *op
		out[i].Sub = make([]*Op, len(op.Sub))
		for j, sub := range op.Sub {
			c := *sub
			out[i].Sub[j] = &c
		}
	}
	return out
}

// Events returns a copy of the events the clients received, in order,
// with every notification a Proxy has forwarded.
func (r *Recorder) Events() []Event {
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}
