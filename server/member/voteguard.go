package member

import (
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// voteGuard wraps an in-memory cluster member's Raft transport so that its
// vote never elects a leader that lacks committed entries.
//
// Raft's election is safe because a member never forgets its log: a
// committed entry is on a majority, so a candidate without it cannot gather
// a majority of votes. A member kept in memory forgets everything when it
// restarts, and then grants its vote to any candidate, however far behind.
// Kill the leader while a member restarted earlier is still catching up,
// and that member and the restarted leader could elect each other with the
// last entries missing, which the surviving member would then have to drop:
// acknowledged writes would be lost.
//
// So each member notes the highest commit index a leader has told it since
// it started (in AppendEntries, heartbeats and snapshots), or that its own
// Raft knows, and refuses its vote, and its pre-vote, to a candidate whose
// log ends before it. A member that has heard of no commit at all and holds
// nothing but the bootstrap configuration (it just started) votes only for
// candidates in the same state, as in a fresh cluster; in a running cluster
// it hears of the leader's commit index with the first heartbeat.
// The cost is availability, not safety: if only members that lost entries
// remain, no leader is elected until one that has them returns.
//
// A durable member remembers its log and needs no guard.
type voteGuard struct {
	header raft.RPCHeader
	log    *slog.Logger

	committed atomic.Uint64             // highest commit index a leader sent
	raft      atomic.Pointer[raft.Raft] // this member's own Raft, once it runs
}

// bootstrapIndex is the last log index of a member that holds nothing but
// the bootstrap configuration.
const bootstrapIndex = 1

func newVoteGuard(header raft.RPCHeader, log *slog.Logger) *voteGuard {
	return &voteGuard{header: header, log: log}
}

// setRaft lets the guard read this member's own commit and last index.
func (g *voteGuard) setRaft(r *raft.Raft) { g.raft.Store(r) }

func (g *voteGuard) note(cmd any) {
	var idx uint64
	switch req := cmd.(type) {
	case *raft.AppendEntriesRequest:
		idx = req.LeaderCommitIndex
	case *raft.InstallSnapshotRequest:
		idx = req.LastLogIndex // a snapshot holds only committed entries
	default:
		return
	}
	raiseTo(&g.committed, idx)
}

// mayElect reports whether a candidate whose log ends at last may have
// this member's vote, and logs a refusal.
func (g *voteGuard) mayElect(kind string, candidate []byte, last uint64) bool {
	known, own := g.committed.Load(), uint64(0)
	if r := g.raft.Load(); r != nil {
		known, own = max(known, r.CommitIndex()), r.LastIndex()
	}
	switch {
	case known > 0:
		if last >= known {
			return true
		}
	case last <= bootstrapIndex || own > bootstrapIndex:
		// Nothing committed heard of: a fresh cluster, where a member
		// with entries got them from a leader that committed nothing yet.
		return true
	}
	g.log.Info("refusing a "+kind+": the candidate's log may lack committed entries",
		"candidate", string(candidate), "candidate_last_index", last, "known_commit_index", known)
	return false
}

// term is this member's current term, which a refusal carries as Raft's
// own do: a candidate steps down on a newer term in a reply, so a refusal
// carrying the candidate's own (pre-)vote term would make it give up even
// when the others grant it the election.
func (g *voteGuard) term() uint64 {
	if r := g.raft.Load(); r != nil {
		return r.CurrentTerm()
	}
	return 0
}

// refused answers a vote or pre-vote request this member refuses, and
// reports whether it did; it notes the commit index other RPCs carry.
func (g *voteGuard) refused(rpc raft.RPC) bool {
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		if !g.mayElect("vote", req.ID, req.LastLogIndex) {
			rpc.Respond(&raft.RequestVoteResponse{RPCHeader: g.header, Term: g.term()}, nil)
			return true
		}
	case *raft.RequestPreVoteRequest:
		if !g.mayElect("pre-vote", req.ID, req.LastLogIndex) {
			rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: g.header, Term: g.term()}, nil)
			return true
		}
	default:
		g.note(req)
	}
	return false
}
