package server

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/wire"
)

// Change is what one applied command, or a restore, changed on this member,
// as an observer (the web console) hears of it.
type Change struct {
	// Zxid is the command's zxid; for a restore, the last one applied.
	Zxid int64
	// Paths are the nodes created, deleted or changed (data or ACL) and the
	// parents whose children changed, each once, in the order the tree
	// fired them. Observers share the slice: it must not be modified.
	Paths []string
	// Sessions says a session was created or closed.
	Sessions bool
	// Restored says a snapshot replaced the whole state: anything may have
	// changed, and Paths is empty.
	Restored bool
}

// Observe calls fn with every change this member applies after Observe
// returns, in log order, until stop is called. fn runs inside the apply,
// under the FSM's write lock: it must not block and must not call into the
// server or the FSM (copy what it needs and hand it off). While nobody
// observes, an apply pays one atomic load.
func (s *Server) Observe(fn func(Change)) (stop func()) { return s.observe.add(fn) }

// observers are the functions Observe registered.
type observers struct {
	mu   sync.Mutex // serializes add and stop
	list atomic.Pointer[[]*func(Change)]
}

func (o *observers) add(fn func(Change)) func() {
	p := &fn
	o.mu.Lock()
	o.store(append(o.load(), p))
	o.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			o.store(slices.DeleteFunc(slices.Clone(o.load()), func(q *func(Change)) bool { return q == p }))
			o.mu.Unlock()
		})
	}
}

func (o *observers) load() []*func(Change) {
	if p := o.list.Load(); p != nil {
		return slices.Clip(*p)
	}
	return nil
}

func (o *observers) store(list []*func(Change)) {
	if len(list) == 0 {
		o.list.Store(nil)
		return
	}
	o.list.Store(&list)
}

// applied tells the observers what an applied command changed.
func (o *observers) applied(r *raftfsm.Result) {
	p := o.list.Load()
	if p == nil {
		return
	}
	cmd := r.Command
	c := Change{Zxid: int64(r.Index),
		Sessions: r.Code == 0 && (cmd.Type == raftfsm.TypeCreateSession || cmd.Type == raftfsm.TypeCloseSession)}
	for _, t := range r.Triggers {
		if !slices.Contains(c.Paths, t.Path) {
			c.Paths = append(c.Paths, t.Path)
		}
	}
	if cmd.Type == raftfsm.TypeRequest && cmd.Op == wire.OpSetACL && r.Code == 0 {
		var req wire.SetACLRequest // fires no watch: the path is in the request
		if _, err := req.Decode(cmd.Body); err == nil {
			c.Paths = append(c.Paths, req.Path)
		}
	}
	for _, fn := range *p {
		(*fn)(c)
	}
}

// restored tells the observers that a snapshot replaced the state.
func (o *observers) restored(zxid int64) {
	if p := o.list.Load(); p != nil {
		for _, fn := range *p {
			(*fn)(Change{Zxid: zxid, Restored: true})
		}
	}
}

// ClusterView is the cluster as this member sees it.
type ClusterView struct {
	Self    int // this member's id
	Leader  int // the id of the member Raft names leader, 0 if none
	Members []MemberStatus
	Disk    DiskHealth // what this member found wrong with its disk, and the leader with members' trees
	// Sessions are the sessions whose connection or deadline is known,
	// ordered by id: only this member's own in Cluster, every member's in
	// ClusterWide.
	Sessions []SessionStatus
}

// DiskHealth is the damage a member found in its files (see
// server/raftstore), and, on the leader, the members whose tree differed
// from its own (digest mismatches).
type DiskHealth struct {
	Corruptions int64 // damage found in this member's files or entries
	TornWrites  int64 // ends of appends a crash cut short, dropped
	Repairing   bool  // getting back from the leader entries the damage lost
	// DigestMismatches counts, on the leader, the times a member's tree
	// differed from its own at the same zxid; LastMismatch is the newest,
	// nil if none.
	DigestMismatches int64
	LastMismatch     *DigestMismatch
}

// DigestMismatch is a member whose tree's digest differed from the
// leader's at the same zxid.
type DigestMismatch = member.DigestMismatch

// MemberStatus is one member in a ClusterView.
type MemberStatus struct {
	ID       int
	RaftAddr string // empty for a standalone server
	Client   string // the client address zoo.cfg gives, if any
	Observer bool
	// Role is "standalone", "leader", "follower" or "observer".
	Role string
	// Applied is the zxid the member has applied: this member's own, and
	// on the leader every member's as last reported; -1 where unknown.
	Applied int64
	// Lag is how far the member is behind: for this member, the log
	// entries it knows committed and has not applied; on the leader, for
	// the others, how many zxids their last report is behind its own
	// applied zxid; -1 where unknown.
	Lag int64
	// Heard is when the leader last heard from the member (the leader's
	// view, which ClusterWide gives any member; zero elsewhere and for
	// the leader itself).
	Heard time.Time
	// Console is the URL of the member's web console, if it has one and
	// said so (SetConsoleURL; others' in ClusterWide only).
	Console string
}

// Cluster returns the members as this member sees them, ordered by id.
func (s *Server) Cluster() ClusterView {
	self := s.cfg.ServerID
	v := ClusterView{Self: self, Leader: s.node.LeaderID(), Disk: s.diskHealth()}
	last := s.fsm.LastZxid()
	servers := s.node.Servers()
	if len(servers) == 0 {
		v.Members = []MemberStatus{{ID: self, Role: "standalone", Applied: last, Lag: s.node.Backlog(), Client: s.ConnectString(),
			Console: s.consoleURL()}}
		v.Sessions = s.ownSessions(s.describe())
		return v
	}
	reports := s.node.Reports()
	for _, p := range servers {
		m := MemberStatus{ID: p.ID, RaftAddr: p.RaftAddr, Client: p.Client, Observer: p.Observer, Role: "follower", Applied: -1, Lag: -1}
		switch {
		case p.ID == v.Leader:
			m.Role = "leader"
		case p.Observer:
			m.Role = "observer"
		}
		if p.ID == self {
			m.Applied, m.Lag = last, s.node.Backlog()
			m.Client = cmp.Or(m.Client, s.ConnectString())
			m.Console = s.consoleURL()
		}
		for _, r := range reports {
			if r.ID == p.ID && p.ID != self {
				m.Applied, m.Heard, m.Lag = r.Applied, r.Heard, max(0, last-r.Applied)
			}
		}
		v.Members = append(v.Members, m)
	}
	slices.SortFunc(v.Members, func(a, b MemberStatus) int { return a.ID - b.ID })
	v.Sessions = s.ownSessions(s.describe())
	return v
}

// diskHealth returns what this member found wrong with its disk.
func (s *Server) diskHealth() DiskHealth {
	st := s.node.Stats()
	h := DiskHealth{Corruptions: st.Corruptions.Load(), TornWrites: st.TornWrites.Load(), Repairing: s.node.Repairing(),
		DigestMismatches: st.DigestMismatches.Load()}
	if m, ok := s.node.LastDigestMismatch(); ok {
		h.LastMismatch = &m
	}
	return h
}
