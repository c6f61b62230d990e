package console

import (
	"encoding/hex"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

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
	// Member and Client say where the owner's client is connected (0
	// and "" if not known: see Session).
	Member int    `json:"member"`
	Client string `json:"client,omitempty"`
	// Data is the node's data, as text if it is (Curator writes the
	// client's IP address, lockrecipe what Options give), else in hex; at
	// most lockDataShown bytes of it.
	Data  string `json:"data"`
	Write bool   `json:"write"`
	Holds bool   `json:"holds"`
	// Taking marks, in a semaphore's leases, the lease of the taker that
	// holds the semaphore's mutex: it waits until few enough leases are
	// left, so it holds none yet.
	Taking bool   `json:"taking,omitempty"`
	Waits  string `json:"waits,omitempty"` // the node it waits for
	Since  int64  `json:"ctime"`
}

// lockDataShown bounds the data shown per lock node.
const lockDataShown = 120

// locks lists every lock queue: the parents of ephemeral nodes whose
// children all carry one recipe's lock names (lockrecipe.ReadQueue),
// ordered by path. It reads the sessions' ephemerals, not the whole tree.
func (c *Console) locks(w http.ResponseWriter, r *http.Request) {
	sessions := c.src.Sessions()
	where := sessionsWhere(c.src.Cluster(), time.Now())
	out := []LockQueue{}
	c.src.Read(func(t *tree.Tree) {
		parents := map[string]bool{}
		for _, s := range sessions {
			for _, p := range t.Ephemerals(s.ID, "/") {
				parents[parentOf(p)] = true
			}
		}
		for _, p := range slices.Sorted(maps.Keys(parents)) {
			if q, ok := c.lockQueue(t, p, where); ok {
				out = append(out, q)
			}
		}
	})
	markTakers(out)
	writeJSON(w, out)
}

// markTakers marks in each semaphore's leases the lease of the taker that
// holds the semaphore's mutex (<path>/locks beside <path>/leases): it waits
// for leases to be released and holds none yet.
func markTakers(queues []LockQueue) {
	mutexHolder := map[string]string{} // a mutex queue's path: its holder's session
	for _, q := range queues {
		for _, n := range q.Nodes {
			if q.Recipe == string(lockrecipe.RecipeMutex) && n.Holds {
				mutexHolder[q.Path] = n.Session
			}
		}
	}
	for i := range queues {
		q := &queues[i]
		if q.Recipe != string(lockrecipe.RecipeLeases) || !strings.HasSuffix(q.Path, "/leases") {
			continue
		}
		holder, ok := mutexHolder[strings.TrimSuffix(q.Path, "leases")+"locks"]
		if !ok {
			continue
		}
		for j := range q.Nodes {
			if q.Nodes[j].Session == holder {
				q.Nodes[j].Taking, q.Nodes[j].Holds = true, false
			}
		}
	}
}

// lockData shows a lock node's data: text if it is, else hex.
func lockData(data []byte) string {
	shown := data[:min(len(data), lockDataShown)]
	var s string
	if isText(shown) {
		s = string(shown)
	} else {
		s = hex.EncodeToString(shown)
	}
	if len(data) > lockDataShown {
		s += "…"
	}
	return s
}

// lockQueue reads the children of p as a lock queue.
func (c *Console) lockQueue(t *tree.Tree, p string, where map[int64]whereabouts) (LockQueue, bool) {
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
		path := join(p, n.Name)
		st, _ := t.Stat(path)
		owner := where[st.EphemeralOwner]
		ln := LockNode{Name: n.Name, Session: sessionID(st.EphemeralOwner), Member: owner.Member, Client: owner.Client,
			Write: n.Write, Holds: n.Holds || recipe == lockrecipe.RecipeLeases, Waits: n.Waits, Since: st.Ctime}
		if data, _, code := t.Get(path, c.ids); code == wire.CodeOK {
			ln.Data = lockData(data)
		} else {
			ln.Data = "(" + denied(code, "READ") + ")"
		}
		q.Nodes = append(q.Nodes, ln)
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
