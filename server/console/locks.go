package console

import (
	"maps"
	"net/http"
	"slices"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

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
