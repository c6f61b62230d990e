package server

import (
	"slices"
	"time"

	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/tree"
)

// This file holds the read-only accessors the admin layer (server/admin)
// builds its commands from. Each takes a copy under the lock that guards
// what it reads; none is on the request path.

// ConnInfo is one client connection with a session, as cons shows it.
type ConnInfo struct {
	Remote                 string // the client's host:port
	Session                int64
	Timeout                time.Duration // the negotiated session timeout
	Established            time.Time
	Queued                 int // writes in flight
	Received, Sent         int64
	LastOp                 string // cons's four-letter op tag, "NA" before any
	LastCxid               int32
	LastZxid               int64
	LastResponse           time.Time // zero before any reply
	LastLatency            int64     // ms
	MinLatency, MaxLatency int64     // ms
	AvgLatency             int64     // ms, truncated as cons prints it
}

// Connections returns the connections that have a session, by session id.
func (s *Server) Connections() []ConnInfo {
	conns := s.connList()
	out := make([]ConnInfo, 0, len(conns))
	for _, c := range conns {
		st := &c.stats
		lo, _, hi := st.lat.minAvgMax()
		var avg int64
		if n := st.lat.count.Load(); n > 0 {
			avg = st.lat.sum.Load() / n
		}
		st.mu.Lock()
		info := ConnInfo{Remote: c.remote, Session: c.session, Timeout: c.timeout, Established: st.established,
			Queued: c.queued(), Received: st.recv.Load(), Sent: st.sent.Load(), LastOp: st.lastOp,
			LastCxid: st.lastCxid, LastZxid: st.lastZxid, LastResponse: st.lastResp, LastLatency: st.lastLat,
			MinLatency: lo, MaxLatency: hi, AvgLatency: avg}
		st.mu.Unlock()
		if info.LastOp == "" {
			info.LastOp = "NA"
		}
		out = append(out, info)
	}
	return out
}

// ResetConnectionStats zeroes every connection's counters (crst).
func (s *Server) ResetConnectionStats() {
	for _, c := range s.connList() {
		c.stats.reset()
	}
}

// ResetStats zeroes the server's request counters and latencies (srst).
func (s *Server) ResetStats() { s.stats.reset() }

// WatchSummary counts the connections that watch, the paths watched and
// the watches (wchs).
func (s *Server) WatchSummary() (conns, paths, watches int) { return s.watches.counts() }

// SessionExpiry returns the sessions whose liveness this member tracks,
// by the elapsed-clock millisecond their expiry bucket falls due, as
// ZooKeeper's dump groups them (only a leader tracks sessions).
func (s *Server) SessionExpiry() map[int64][]int64 {
	sessions := s.fsm.Sessions() // before s.mu: the FSM lock comes first
	out := make(map[int64][]int64)
	s.mu.Lock()
	for _, sess := range sessions {
		if deadline, ok := s.tracker.Deadline(sess.ID); ok {
			ms := deadline.Milliseconds()
			out[ms] = append(out[ms], sess.ID)
		}
	}
	s.mu.Unlock()
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// Ephemerals returns each session's ephemeral nodes, sorted.
func (s *Server) Ephemerals() map[int64][]string {
	out := make(map[int64][]string)
	s.fsm.Read(func(t *tree.Tree) {
		for _, id := range t.Owners() {
			paths := t.Ephemerals(id, "")
			slices.Sort(paths)
			out[id] = paths
		}
	})
	return out
}

// Digest returns the last applied zxid and the digest of the tree at it
// (equal on every member that applied the same zxid).
func (s *Server) Digest() (zxid int64, digest uint64) {
	s.fsm.Read(func(t *tree.Tree) {
		zxid, digest = s.fsm.LastZxid(), t.Digest()
	})
	return zxid, digest
}

// RaftStatus is a member's Raft at one moment (see member.RaftStatus).
type RaftStatus = member.RaftStatus

// RaftStatus returns this member's Raft figures.
func (s *Server) RaftStatus() RaftStatus { return s.node.RaftStatus() }

// Members returns the cluster's current members by id; none for a
// standalone server.
func (s *Server) Members() []Peer {
	peers := s.node.Servers()
	slices.SortFunc(peers, func(a, b Peer) int { return a.ID - b.ID })
	return peers
}

// LastSnapshot returns the last log index and the time of the newest
// snapshot this member wrote or received; ok is false while there is none.
func (s *Server) LastSnapshot() (zxid int64, at time.Time, ok bool) {
	return s.node.LastSnapshot()
}

// FsyncThresholdExceeded counts the appends to a durable Raft log that
// took over a second (ZooKeeper's fsync.warningthresholdms default).
func (s *Server) FsyncThresholdExceeded() int64 { return s.node.Stats().SlowFsyncs.Load() }

// CommitTime is the time from handing a command to this member's Raft,
// as leader, until it was committed and applied, in ms.
func (s *Server) CommitTime() Summary { return summaryOf(&s.node.Stats().Commit, true) }

// Closed reports whether Shutdown or Close has begun.
func (s *Server) Closed() bool { return s.closing() }
