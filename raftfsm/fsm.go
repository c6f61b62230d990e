package raftfsm

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Session is a replicated session: every member knows every session, its
// negotiated timeout and its password.
type Session struct {
	ID      int64
	Timeout int32 // negotiated, ms
	Passwd  []byte
}

// Result is what applying one command did.
type Result struct {
	Index   uint64   // the Raft log index, which is also the zxid
	Command *Command // the applied command
	// Code is the reply header's error code: OK, or why the write failed.
	// A multi's code is OK even when one of its ops failed.
	Code wire.Code
	// Resp is the reply body, nil for header-only replies.
	Resp wire.Record
	// Triggers are the watch triggers fired, in order.
	Triggers []tree.Trigger

	// Room for what applying most commands makes, so that it costs one
	// allocation: the decoded command (Command), the triggers of a write
	// to one node (its own and its parent's), a create's or setData's
	// reply body (Resp).
	cmd      Command
	triggers [2]tree.Trigger
	stat     wire.StatResponse
	created  wire.CreateResponse
}

// Observer hears of every applied command and restore. Its methods run
// synchronously inside Apply and Restore, with the FSM's write lock held, so
// they must not block and must not call back into the FSM; they may read the
// tree passed to them.
type Observer interface {
	// Applied is called after a command is applied, in log order.
	Applied(t *tree.Tree, r *Result)
	// Restored is called after a snapshot replaced the whole state.
	Restored(t *tree.Tree)
}

// BatchObserver is an Observer that also hears when each batch of commands
// Raft hands the FSM (one Apply or ApplyBatch) has been applied, still
// under the FSM's write lock: what it put off in Applied, it can do once for
// the batch.
type BatchObserver interface {
	Observer
	BatchApplied()
}

// FSM is the replicated state machine: a znode tree and a session table.
// It implements raft.FSM and raft.BatchingFSM.
type FSM struct {
	mu       sync.RWMutex // guards tree, sessions, and the observer's calls
	tree     *tree.Tree
	sessions map[int64]*Session

	lastZxid atomic.Int64
	obs      Observer
	batchObs BatchObserver // obs, if it is one
	config   []byte        // what /zookeeper/config holds on this member (SetConfig)
	// requests are the records requests decode into, reused from one apply
	// to the next, and auths the commands' auth ids (both under mu).
	requests wire.Requests
	auths    authTable
}

// New returns an FSM holding a fresh tree and no sessions. obs may be nil.
func New(obs Observer) *FSM {
	f := &FSM{tree: tree.New(), sessions: make(map[int64]*Session), obs: obs, auths: make(authTable)}
	f.batchObs, _ = obs.(BatchObserver)
	return f
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// SetConfig makes /zookeeper/config hold the ensemble's configuration on
// this member, now and after every restore, as a ZooKeeper member does when
// it starts and whenever it loads a snapshot (see tree.SetConfig).
func (f *FSM) SetConfig(data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.config = data
	f.tree.SetConfig(data, time.Now().UnixMilli())
}

// LastZxid returns the zxid (log index) of the last applied command.
func (f *FSM) LastZxid() int64 { return f.lastZxid.Load() }

// Read runs fn with the tree under the read lock: no command is applied
// while fn runs, so a read and the watch it registers are atomic with
// respect to the writes that would trigger it. fn must not keep the tree.
func (f *FSM) Read(fn func(t *tree.Tree)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.tree)
}

// Session returns a replicated session.
func (f *FSM) Session(id int64) (Session, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.sessions[id]
	if s == nil {
		return Session{}, false
	}
	return *s, true
}

// SessionCount returns how many replicated sessions there are.
func (f *FSM) SessionCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.sessions)
}

// Sessions returns every replicated session, ordered by id.
func (f *FSM) Sessions() []Session {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Session, 0, len(f.sessions))
	for _, s := range f.sessions {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Session) int { return cmpInt64(a.ID, b.ID) })
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Apply applies one log entry.
func (f *FSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := f.applyLocked(l)
	f.batchApplied()
	return res
}

// ApplyBatch applies several log entries under one lock acquisition.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range logs {
		out[i] = f.applyLocked(l)
	}
	f.batchApplied()
	return out
}

func (f *FSM) batchApplied() {
	if f.batchObs != nil {
		f.batchObs.BatchApplied()
	}
}

func (f *FSM) applyLocked(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	res := &Result{Index: l.Index}
	cmd := &res.cmd
	if err := cmd.decode(l.Data, f.auths); err != nil {
		panic(fmt.Sprintf("raftfsm: log index %d: %v", l.Index, err))
	}
	handler := handlers[cmd.Type&^Ignorable]
	if handler == nil {
		if cmd.Type&Ignorable != 0 {
			return nil
		}
		panic(fmt.Sprintf("raftfsm: log index %d: unknown command type %d", l.Index, cmd.Type))
	}
	res.Command = cmd
	zxid := int64(l.Index)
	handler(f, cmd, zxid, res)
	f.lastZxid.Store(zxid)
	if f.obs != nil {
		f.obs.Applied(f.tree, res)
	}
	return res
}

var handlers = map[Type]func(f *FSM, c *Command, zxid int64, res *Result){
	TypeRequest:       (*FSM).applyRequest,
	TypeCreateSession: (*FSM).applyCreateSession,
	TypeCloseSession:  (*FSM).applyCloseSession,
	TypeReap:          (*FSM).applyReap,
	TypeReconfig:      (*FSM).applyReconfig,
}

// context is the tree's context for applying c, its triggers going to
// res's room first.
func (f *FSM) context(c *Command, zxid int64, res *Result) *tree.Context {
	return &tree.Context{Zxid: zxid, Time: c.Time, Session: c.Session, Auth: c.Auth, ExtendedTypes: c.ExtendedTypes,
		Triggers: res.triggers[:0]}
}

func (f *FSM) applyCreateSession(c *Command, _ int64, res *Result) {
	if c.Session == 0 || f.sessions[c.Session] != nil {
		res.Code = wire.CodeNodeExists
		return
	}
	f.sessions[c.Session] = &Session{ID: c.Session, Timeout: c.Timeout, Passwd: c.Passwd}
}

func (f *FSM) applyCloseSession(c *Command, zxid int64, res *Result) {
	if f.sessions[c.Session] == nil {
		res.Code = wire.CodeSessionExpired
		return
	}
	ctx := f.context(c, zxid, res)
	f.tree.CloseSession(ctx, c.Session)
	delete(f.sessions, c.Session)
	res.Triggers = ctx.Triggers
}

func (f *FSM) applyReap(c *Command, zxid int64, res *Result) {
	ctx := f.context(c, zxid, res)
	res.Code = f.tree.DeleteContainer(ctx, c.Path)
	res.Triggers = ctx.Triggers
}

// applyReconfig applies a reconfig the leader decided: its error, or the
// new configuration in /zookeeper/config, versioned with this zxid.
func (f *FSM) applyReconfig(c *Command, zxid int64, res *Result) {
	if c.Session != 0 && f.sessions[c.Session] == nil {
		res.Code = wire.CodeSessionExpired
		return
	}
	if res.Code = c.Code; c.Code != wire.CodeOK {
		return
	}
	if c.Session == 0 && f.tree.ConfigZxid() > 0 { // versioned already, by an earlier leader
		return
	}
	data := fmt.Appendf(slices.Clone(c.Body), "version=%x", zxid)
	ctx := f.context(c, zxid, res)
	st := f.tree.Reconfigure(ctx, data)
	f.config = data
	res.Resp = &wire.GetDataResponse{Data: data, Stat: st}
	res.Triggers = ctx.Triggers
}

// ConfigVersioned reports whether a reconfig (a client's or the first
// leader's) has set /zookeeper/config.
func (f *FSM) ConfigVersioned() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.tree.ConfigZxid() > 0
}

// Config returns what /zookeeper/config holds.
func (f *FSM) Config() []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.config
}

// applyRequest applies a client's write. Its session must still exist (a
// closed or expired session gets SESSIONEXPIRED, as ZooKeeper answers a
// closing session's requests); a
// body that does not decode is MARSHALLINGERROR, as ZooKeeper answers.
func (f *FSM) applyRequest(c *Command, zxid int64, res *Result) {
	if f.sessions[c.Session] == nil {
		res.Code = wire.CodeSessionExpired
		return
	}
	if c.Op == wire.OpDeleteContainer {
		// ZooKeeper 3.8.0 reads a client's deleteContainer as the whole raw
		// packet taken as a UTF-8 path; its header's NULs always make that
		// BADARGUMENTS. Only the leader's reaper (TypeReap) deletes containers.
		res.Code = wire.CodeBadArguments
		return
	}
	rec, ok := f.requests.For(c.Op)
	if !ok || rec == nil {
		res.Code = wire.CodeUnimplemented
		return
	}
	defer f.requests.Clear() // what the tree does not keep may go
	// The data the request carries is read in place from the log entry: the
	// tree copies what it keeps, and the record is cleared when done.
	if _, err := f.requests.DecodeAliasing(rec, c.Body); err != nil {
		res.Code = wire.CodeMarshallingError
		return
	}
	ctx := f.context(c, zxid, res)
	res.Code, res.Resp = f.write(ctx, c.Op, rec, res)
	res.Triggers = ctx.Triggers
}

// write applies a write request; its reply body may be in res's room.
func (f *FSM) write(ctx *tree.Context, op wire.Op, rec wire.Record, res *Result) (wire.Code, wire.Record) {
	switch r := rec.(type) {
	case *wire.CreateRequest:
		return f.create(ctx, tree.CreateArgs{Op: op, Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags, TTL: -1}, res)
	case *wire.CreateTTLRequest:
		return f.create(ctx, tree.CreateArgs{Op: op, Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags, TTL: r.TTL}, res)
	case *wire.DeleteRequest:
		return f.tree.Delete(ctx, r.Path, r.Version), nil
	case *wire.SetDataRequest:
		st, code := f.tree.SetData(ctx, r.Path, r.Data, r.Version)
		return res.statReply(st, code)
	case *wire.SetACLRequest:
		st, code := f.tree.SetACL(ctx, r.Path, r.ACL, r.Version)
		return res.statReply(st, code)
	case *wire.MultiRequest:
		if r.Read {
			return wire.CodeMarshallingError, nil
		}
		return wire.CodeOK, &wire.MultiResponse{Results: f.tree.Multi(ctx, r.Ops)}
	case *wire.CheckVersionRequest:
		// A check outside a multi: ZooKeeper 3.8.0 runs it as a write, so a
		// failing one gets its code; a passing one gets OK here (ZooKeeper
		// 3.8.0 hits a NullPointerException and never answers it).
		return f.tree.CheckVersion(ctx, r.Path, r.Version), nil
	case *wire.ReconfigRequest:
		return wire.CodeReconfigDisabled, nil
	}
	return wire.CodeUnimplemented, nil
}

func (f *FSM) create(ctx *tree.Context, a tree.CreateArgs, res *Result) (wire.Code, wire.Record) {
	path, st, code := f.tree.Create(ctx, a)
	switch {
	case code != wire.CodeOK:
		return code, nil
	case a.Op == wire.OpCreate:
		res.created = wire.CreateResponse{Path: path}
		return code, &res.created
	}
	return code, &wire.Create2Response{Path: path, Stat: st}
}

// statReply is a reply of st alone, in res's room.
func (res *Result) statReply(st wire.Stat, code wire.Code) (wire.Code, wire.Record) {
	if code != wire.CodeOK {
		return code, nil
	}
	res.stat = wire.StatResponse{Stat: st}
	return code, &res.stat
}

// Check verifies the state's invariants: the tree's own (tree.Check), and
// that every ephemeral node's owner is a live session.
func (f *FSM) Check() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	err := f.tree.Check()
	for _, owner := range f.tree.Owners() {
		if f.sessions[owner] == nil {
			err = errors.Join(err, fmt.Errorf("ephemerals owned by unknown session %#x", owner))
		}
	}
	return err
}

// Digest returns the tree's order-independent digest (tree.Tree.Digest).
func (f *FSM) Digest() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.tree.Digest()
}
