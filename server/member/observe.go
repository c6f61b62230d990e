package member

import (
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Report is what a leader last heard from another member: the zxid it
// had applied, and when. Members report twice a tick.
type Report struct {
	ID      int
	Applied int64
	Heard   time.Time
}

// Reports returns, on the leader, the last report of each member that
// sent one since this member started, ordered by id; elsewhere nil (only
// the leader hears them).
func (n *Node) Reports() []Report {
	if !n.IsLeader() {
		return nil
	}
	n.mu.Lock()
	out := make([]Report, 0, len(n.applied))
	for id, zxid := range n.applied {
		out = append(out, Report{ID: id, Applied: int64(zxid), Heard: n.lastHeard[id]})
	}
	n.mu.Unlock()
	slices.SortFunc(out, func(a, b Report) int { return a.ID - b.ID })
	return out
}

// LeaderID returns the id of the member Raft names leader, 0 if none (a
// standalone server leads itself).
func (n *Node) LeaderID() int {
	r := n.raftNow()
	if r == nil {
		return 0
	}
	if !n.cfg.Clustered() {
		if r.State() == raft.Leader {
			return n.cfg.ServerID
		}
		return 0
	}
	_, id := r.LeaderWithID()
	i, err := strconv.Atoi(string(id))
	if err != nil {
		return 0
	}
	return i
}

// Backlog returns how many log entries this member knows committed but has
// not applied yet, 0 before Start.
func (n *Node) Backlog() int64 {
	r := n.raftNow()
	if r == nil {
		return 0
	}
	commit, applied := r.CommitIndex(), r.AppliedIndex()
	if commit <= applied {
		return 0
	}
	return int64(commit - applied)
}
