package console

import (
	"net/http"
	"slices"

	"github.com/zkraft/zkraft/tree"
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
