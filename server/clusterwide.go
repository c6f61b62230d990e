package server

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// The cluster seen from any member: each member describes itself to the
// leader (its console's URL, its clients' connections; member.Config's
// Presence), the leader adds every session's deadline to its own, and
// ClusterWide asks the leader for all of them.

// maxDescribedConns bounds the connections a member describes: the view
// is for a person to read, and goes to the leader every second.
const maxDescribedConns = 1000

// description is what a member tells the leader of itself, as JSON.
type description struct {
	Console string          `json:"console,omitempty"`
	Client  string          `json:"client,omitempty"` // the member's client address
	Conns   []describedConn `json:"conns,omitempty"`
	More    int             `json:"more,omitempty"` // connections left out past maxDescribedConns
	// Expiries are, from the leader only, the sessions' deadlines.
	Expiries []describedExpiry `json:"expiries,omitempty"`
}

type describedConn struct {
	Session int64  `json:"s"`
	Client  string `json:"c"`
	Since   int64  `json:"t"` // connected, Unix ms
	Heard   int64  `json:"h"` // the last request, Unix ms; 0 if none yet
}

type describedExpiry struct {
	Session int64 `json:"s"`
	In      int64 `json:"e"` // ms from when the description was made
}

// SessionStatus is a session in a ClusterView.
type SessionStatus struct {
	ID        int64
	Member    int       // the member its client is connected to, 0 if none is known
	Client    string    // the client's host:port, "" if not known
	Connected time.Time // when that connection was made
	Heard     time.Time // when that member last heard from the client; zero if not known
	// ExpiresIn is how long the session has left unless its client is
	// heard from, by the leader's deadline; -1 if not known.
	ExpiresIn time.Duration
}

// SetConsoleURL records the URL of this member's web console, which the
// other members' consoles link to.
func (s *Server) SetConsoleURL(u string) { s.console.Store(&u) }

func (s *Server) consoleURL() string {
	if p := s.console.Load(); p != nil {
		return *p
	}
	return ""
}

// describe returns this member's description.
func (s *Server) describe() description {
	d := description{Console: s.consoleURL(), Client: s.ConnectString()}
	for _, c := range s.connList() {
		if len(d.Conns) == maxDescribedConns {
			d.More++
			continue
		}
		dc := describedConn{Session: c.session, Client: c.remote, Since: c.stats.established.UnixMilli()}
		if h := c.stats.heard.Load(); h > 0 {
			dc.Heard = time.Unix(0, h).UnixMilli()
		}
		d.Conns = append(d.Conns, dc)
	}
	if s.node.Leading() {
		sessions := s.fsm.Sessions()
		now := s.clock.Elapsed()
		s.mu.Lock()
		for _, sess := range sessions {
			if at, ok := s.tracker.Deadline(sess.ID); ok {
				d.Expiries = append(d.Expiries, describedExpiry{Session: sess.ID, In: (at - now).Milliseconds()})
			}
		}
		s.mu.Unlock()
	}
	return d
}

// presence implements member.Config.Presence.
func (s *Server) presence() []byte {
	b, err := json.Marshal(s.describe())
	if err != nil {
		return nil
	}
	return b
}

// ownSessions is the sessions d knows of, as this member's.
func (s *Server) ownSessions(d description) []SessionStatus {
	byID := map[int64]*SessionStatus{}
	addDescribed(byID, s.cfg.ServerID, d, time.Now())
	return sortedSessions(byID)
}

// addDescribed adds to byID the sessions member's description d, made at
// at, tells of.
func addDescribed(byID map[int64]*SessionStatus, member int, d description, at time.Time) {
	get := func(id int64) *SessionStatus {
		st := byID[id]
		if st == nil {
			st = &SessionStatus{ID: id, ExpiresIn: -1}
			byID[id] = st
		}
		return st
	}
	for _, c := range d.Conns {
		st := get(c.Session)
		if since := time.UnixMilli(c.Since); st.Member != 0 && st.Connected.After(since) {
			continue // its client moved: the newer connection is where it is
		}
		st.Member, st.Client, st.Connected, st.Heard = member, c.Client, time.UnixMilli(c.Since), time.Time{}
		if c.Heard > 0 {
			st.Heard = time.UnixMilli(c.Heard)
		}
	}
	for _, e := range d.Expiries {
		get(e.Session).ExpiresIn = time.Duration(e.In)*time.Millisecond - time.Since(at)
	}
}

func sortedSessions(byID map[int64]*SessionStatus) []SessionStatus {
	out := make([]SessionStatus, 0, len(byID))
	for _, st := range byID {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b SessionStatus) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// ClusterWide is Cluster with what the leader knows of every member: each
// one's applied zxid, when it was last heard from, its console's URL, and
// its clients' sessions with the leader's deadlines. It asks the leader,
// waiting up to wait; if the leader cannot answer (none, or an older
// zkraft), it returns what Cluster does.
func (s *Server) ClusterWide(wait time.Duration) ClusterView {
	v := s.Cluster()
	if len(v.Members) < 2 {
		return v
	}
	view, err := s.node.View(time.Now().Add(wait))
	if err != nil {
		return v
	}
	now := time.Now()
	leaderApplied := int64(-1)
	for _, m := range view {
		if m.ID == v.Leader {
			leaderApplied = m.Applied
		}
	}
	byID := map[int64]*SessionStatus{}
	stale := max(5*time.Second, 3*s.cfg.TickTime) // a member silent this long is taken for gone, its clients with it
	for _, m := range view {
		var d description
		if len(m.Presence) > 0 && json.Unmarshal(m.Presence, &d) != nil {
			continue
		}
		if m.ID != v.Leader && now.Sub(m.Heard) > stale {
			d.Conns = nil
		}
		i := slices.IndexFunc(v.Members, func(ms MemberStatus) bool { return ms.ID == m.ID })
		if i < 0 {
			continue
		}
		ms := &v.Members[i]
		if m.ID != v.Leader {
			ms.Heard = m.Heard
		}
		if m.ID != v.Self {
			ms.Applied = m.Applied
			if leaderApplied >= 0 {
				ms.Lag = max(0, leaderApplied-m.Applied)
			}
		}
		ms.Console = cmp.Or(d.Console, ms.Console)
		ms.Client = cmp.Or(ms.Client, d.Client)
		addDescribed(byID, m.ID, d, now)
	}
	// This member's own connections are known here first-hand.
	addDescribed(byID, v.Self, s.describe(), now)
	v.Sessions = sortedSessions(byID)
	return v
}
