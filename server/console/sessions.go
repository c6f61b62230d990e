package console

import (
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Session is a live session: its ephemeral nodes (every member knows them)
// and the watches it holds on this member (watches live with the
// connection, on the member the client is connected to).
type Session struct {
	ID         string   `json:"id"`
	TimeoutMs  int32    `json:"timeoutMs"`
	Ephemerals []string `json:"ephemerals"`
	Watches    []Watch  `json:"watches"`
}

// Watch is one watch a session holds.
type Watch struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // "data" or "child"
	Mode string `json:"mode"` // "one-shot", "persistent", "persistent-recursive"
}

// sessions lists the live sessions, ordered by id.
func (c *Console) sessions(w http.ResponseWriter, r *http.Request) {
	byID := make(map[int64][]Watch)
	for _, wt := range c.src.Watches() {
		byID[wt.Session] = append(byID[wt.Session], Watch{Path: wt.Path, Kind: wt.Kind.String(), Mode: wt.Mode.String()})
	}
	sessions := c.src.Sessions() // not inside Read: the FSM's lock is not reentrant
	out := make([]Session, 0, len(sessions))
	c.src.Read(func(t *tree.Tree) {
		for _, s := range sessions {
			eph := append([]string{}, t.Ephemerals(s.ID, "/")...) // [] in JSON when none
			slices.Sort(eph)
			ws := byID[s.ID]
			if ws == nil {
				ws = []Watch{}
			}
			out = append(out, Session{ID: sessionID(s.ID), TimeoutMs: s.Timeout, Ephemerals: eph, Watches: ws})
		}
	})
	writeJSON(w, out)
}

// LockQueue is a lock path whose children are one recipe's contenders,
// in the order they get the lock.
type LockQueue struct {
	Path   string     `json:"path"`
	Recipe string     `json:"recipe"`
	Nodes  []LockNode `json:"nodes"`
	// Error says why the queue could not be read (no READ permission).
	Error string `json:"error,omitempty"`
}

// LockNode is one contender.
type LockNode struct {
	Name    string `json:"name"`
	Session string `json:"session"` // the owner, for an ephemeral node
	Write   bool   `json:"write"`
	Holds   bool   `json:"holds"`
	Waits   string `json:"waits,omitempty"` // the node it waits for
	Since   int64  `json:"ctime"`
}

// locks lists every lock queue: the parents of ephemeral nodes whose
// children all carry one recipe's lock names (lockrecipe.ReadQueue),
// ordered by path. It reads the sessions' ephemerals, not the whole tree.
func (c *Console) locks(w http.ResponseWriter, r *http.Request) {
	sessions := c.src.Sessions()
	out := []LockQueue{}
	c.src.Read(func(t *tree.Tree) {
		parents := map[string]bool{}
		for _, s := range sessions {
			for _, p := range t.Ephemerals(s.ID, "/") {
				parents[parentOf(p)] = true
			}
		}
		for _, p := range slices.Sorted(maps.Keys(parents)) {
			if q, ok := c.lockQueue(t, p); ok {
				out = append(out, q)
			}
		}
	})
	writeJSON(w, out)
}

// lockQueue reads the children of p as a lock queue.
func (c *Console) lockQueue(t *tree.Tree, p string) (LockQueue, bool) {
	names, _, code := t.Children(p, c.ids)
	if code == wire.CodeNoAuth {
		return LockQueue{Path: p, Nodes: []LockNode{}, Error: denied(code, "READ")}, true
	}
	recipe, queue, ok := lockrecipe.ReadQueue(names)
	if !ok {
		return LockQueue{}, false
	}
	q := LockQueue{Path: p, Recipe: string(recipe)}
	for _, n := range queue {
		st, _ := t.Stat(join(p, n.Name))
		q.Nodes = append(q.Nodes, LockNode{Name: n.Name, Session: sessionID(st.EphemeralOwner),
			Write: n.Write, Holds: n.Holds, Waits: n.Waits, Since: st.Ctime})
	}
	return q, true
}

func parentOf(p string) string {
	i := len(p) - 1
	for i > 0 && p[i] != '/' {
		i--
	}
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// Member is one member in the cluster view.
type Member struct {
	ID       int    `json:"id"`
	Role     string `json:"role"`
	Self     bool   `json:"self"`
	RaftAddr string `json:"raftAddr,omitempty"`
	Client   string `json:"client,omitempty"`
	// Applied is the zxid the member applied, -1 where this member does
	// not know it (a follower knows only its own).
	Applied int64 `json:"applied"`
	// Lag is how far the member is behind (server.MemberStatus.Lag); -1
	// where unknown.
	Lag int64 `json:"lag"`
	// HeardMsAgo is how long ago the leader last heard from it; -1 where
	// unknown.
	HeardMsAgo int64 `json:"heardMsAgo"`
}

// Cluster is the cluster view, with what this member holds.
type Cluster struct {
	Self    int      `json:"self"`
	Leader  int      `json:"leader"`
	Members []Member `json:"members"`
	Holds   Holdings `json:"holds"`
}

// Holdings counts what this member's copy of the state holds.
type Holdings struct {
	Znodes     int   `json:"znodes"`
	Ephemerals int   `json:"ephemerals"`
	DataBytes  int64 `json:"dataBytes"`
	Sessions   int   `json:"sessions"`
	Watches    int   `json:"watches"` // held by this member's clients
}

// cluster answers the members as this member sees them.
func (c *Console) cluster(w http.ResponseWriter, r *http.Request) {
	v := clusterOf(c.src.Cluster(), time.Now())
	v.Holds.Sessions, v.Holds.Watches = len(c.src.Sessions()), len(c.src.Watches())
	c.src.Read(func(t *tree.Tree) {
		v.Holds.Znodes, v.Holds.Ephemerals, v.Holds.DataBytes = t.Len(), t.EphemeralCount(), t.ApproximateDataSize()
	})
	writeJSON(w, v)
}

func clusterOf(v server.ClusterView, now time.Time) Cluster {
	out := Cluster{Self: v.Self, Leader: v.Leader, Members: []Member{}}
	for _, m := range v.Members {
		mm := Member{ID: m.ID, Role: m.Role, Self: m.ID == v.Self, RaftAddr: m.RaftAddr, Client: m.Client,
			Applied: m.Applied, Lag: m.Lag, HeardMsAgo: -1}
		if !m.Heard.IsZero() {
			mm.HeardMsAgo = now.Sub(m.Heard).Milliseconds()
		}
		out.Members = append(out.Members, mm)
	}
	return out
}
