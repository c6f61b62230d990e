package console

import (
	"net/http"
	"slices"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/tree"
)

// Session is a live session: where its client is connected and when it
// was last heard from (as the leader gathers it from every member: see
// server.Server.ClusterWide), its ephemeral nodes (every member knows
// them) and the watches it holds on this member (watches live with the
// connection, on the member the client is connected to).
type Session struct {
	ID        string `json:"id"`
	TimeoutMs int32  `json:"timeoutMs"`
	// Member is the member its client is connected to, 0 if none is
	// known (disconnected, or the leader could not be asked).
	Member int    `json:"member"`
	Client string `json:"client,omitempty"` // the client's host:port
	// ConnectedMsAgo and HeardMsAgo are how long ago the connection was
	// made and its member last heard from the client; -1 if not known.
	ConnectedMsAgo int64 `json:"connectedMsAgo"`
	HeardMsAgo     int64 `json:"heardMsAgo"`
	// ExpiresInMs is how long the session has left by the leader's
	// deadline unless its client is heard from; -1 if not known.
	ExpiresInMs int64    `json:"expiresInMs"`
	Ephemerals  []string `json:"ephemerals"`
	Watches     []Watch  `json:"watches"`
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
	where := sessionsWhere(c.src.Cluster(), time.Now())
	out := make([]Session, 0, len(sessions))
	c.src.Read(func(t *tree.Tree) {
		for _, s := range sessions {
			eph := append([]string{}, t.Ephemerals(s.ID, "/")...) // [] in JSON when none
			slices.Sort(eph)
			ws := byID[s.ID]
			if ws == nil {
				ws = []Watch{}
			}
			sess := Session{ID: sessionID(s.ID), TimeoutMs: s.Timeout, ConnectedMsAgo: -1, HeardMsAgo: -1, ExpiresInMs: -1,
				Ephemerals: eph, Watches: ws}
			if st, ok := where[s.ID]; ok {
				sess.Member, sess.Client, sess.ConnectedMsAgo, sess.HeardMsAgo, sess.ExpiresInMs =
					st.Member, st.Client, st.ConnectedMsAgo, st.HeardMsAgo, st.ExpiresInMs
			}
			out = append(out, sess)
		}
	})
	writeJSON(w, out)
}

// whereabouts is what the cluster view tells of a session.
type whereabouts struct {
	Member                     int
	Client                     string
	ConnectedMsAgo, HeardMsAgo int64
	ExpiresInMs                int64
}

// sessionsWhere indexes v's sessions by id.
func sessionsWhere(v server.ClusterView, now time.Time) map[int64]whereabouts {
	out := make(map[int64]whereabouts, len(v.Sessions))
	for _, st := range v.Sessions {
		w := whereabouts{Member: st.Member, Client: st.Client, ConnectedMsAgo: -1, HeardMsAgo: -1, ExpiresInMs: -1}
		if !st.Connected.IsZero() {
			w.ConnectedMsAgo = max(0, now.Sub(st.Connected).Milliseconds())
		}
		if !st.Heard.IsZero() {
			w.HeardMsAgo = max(0, now.Sub(st.Heard).Milliseconds())
		}
		if st.ExpiresIn >= 0 {
			w.ExpiresInMs = st.ExpiresIn.Milliseconds()
		}
		out[st.ID] = w
	}
	return out
}
