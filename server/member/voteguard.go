package member

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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
// log ends before it.
//
// A member that has heard of no commit at all and holds nothing but the
// bootstrap configuration (it just started) cannot tell a fresh cluster
// from a running one whose leader is gone. It asks the other voters where
// their logs end (a survey, repeated while it stays so fresh), and decides
// by what it hears:
//   - every other voter answered: it votes only for a candidate whose log is
//     at least as complete as the most complete among them, as a ZooKeeper
//     ensemble elects the member with the highest zxid. Two members
//     restarted empty beside one that kept everything thus elect that one,
//     not one of themselves.
//   - some voter did not answer (it is down or cut off, and may hold what
//     the others lack): it votes only for a candidate as empty as itself,
//     and only while no voter that answered holds entries, as in a fresh
//     cluster starting without one of its members.
//
// A candidate's own (pre-)vote request tells where its log ends too: the
// guard counts every request it has seen as that voter's answer. So a
// survivor that missed a survey (it was slow to answer) still outranks
// two empty members, and still counts as having answered when it asks
// for their votes itself (found by TestClusterTwoRestartedMembersElect-
// TheOneThatKeptTheData under load: a wiped member whose survey missed the
// survivor voted, a few milliseconds after refusing the survivor's own
// pre-vote, for the other wiped member, which then led and made the
// survivor drop twenty acknowledged creates).
//
// Until its first survey is in, such a member holds its answer to a vote.
// In a running cluster it hears of the leader's commit index with the first
// heartbeat, and the survey stops.
//
// The cost is availability, not safety: if only members that lost entries
// remain, no leader is elected until one that has them returns. What no
// guard can save is an entry held only by members that all restarted.
//
// A durable member that kept its log needs no guard; one that starts with
// nothing stored (a new data dir, or one wiped when a disk was replaced)
// is as empty as an in-memory member and gets one (found by zkchaos: five
// durable members, one wiped and restarted at a time, lost 70 acknowledged
// creates when two stale members and the wiped one elected a leader).
type voteGuard struct {
	header raft.RPCHeader
	log    *slog.Logger

	// damaged is set for a member that may have lost entries it
	// acknowledged (see damage.go): it counts as fresh, whatever its log
	// holds, until it hears of a commit.
	damaged bool
	// floor, once a member's term and vote record was lost, is the highest
	// term it may have voted in (noFloor until every voter has told it its
	// term): it neither votes nor stands in a term up to it. 0: none.
	floor atomic.Uint64
	// votesUnknown is set for a member that started with nothing stored
	// (surveyFreshTerms): its floor is noFloor until it knows the others'
	// terms, or that the cluster is new.
	votesUnknown bool
	// repairing is set while a damaged member has not got back what it
	// lost: it does not stand (its log is shorter than what it may have
	// acknowledged, and a member behind it would vote for it), and it votes
	// only for a candidate whose log reaches where its own ended before the
	// damage (lostEnd), or, where that is not known, by the survey alone: a
	// commit index a leader told it is no bound on what it may have
	// acknowledged (a leader counts an acknowledgement it gave before the
	// damage).
	repairing atomic.Bool
	lostEnd   logEnd

	committed atomic.Uint64 // highest commit index a leader sent
	// committedTerm is the term of the leader that sent it: a candidate
	// holds the entries up to it only if its log ends in that term or a
	// later one (an index alone may end in stale entries of an older term).
	committedTerm atomic.Uint64
	raft          atomic.Pointer[raft.Raft] // this member's own Raft, once it runs

	survey   atomic.Pointer[logSurvey] // the latest survey, once one is in
	surveyed chan struct{}             // closed when the first survey is in

	mu    sync.Mutex
	heard map[string]logEnd // where each candidate that asked said its log ends
}

// logSurvey is what a fresh member learnt by asking the other voters where
// their logs end.
type logSurvey struct {
	most     logEnd   // the most complete log among those that answered
	complete bool     // every other voter answered
	missing  []string // the voters that did not answer, by Raft id
}

// verdict is the guard's answer to a (pre-)vote request.
type verdict int

const (
	grant  verdict = iota // Raft decides, by its own rules
	refuse                // the guard answers no
	hold                  // ask again when the first survey is in
)

// bootstrapIndex is the last log index of a member that holds nothing but
// the bootstrap configuration.
const bootstrapIndex = 1

func newVoteGuard(header raft.RPCHeader, log *slog.Logger) *voteGuard {
	return &voteGuard{header: header, log: log, surveyed: make(chan struct{}), heard: make(map[string]logEnd)}
}

// setRaft lets the guard read this member's own commit and last index.
func (g *voteGuard) setRaft(r *raft.Raft) { g.raft.Store(r) }

func (g *voteGuard) note(cmd any) {
	var idx, term uint64
	switch req := cmd.(type) {
	case *raft.AppendEntriesRequest:
		idx, term = req.LeaderCommitIndex, req.Term
	case *raft.InstallSnapshotRequest:
		idx, term = req.LastLogIndex, req.Term // a snapshot holds only committed entries
	default:
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if idx > g.committed.Load() {
		g.committed.Store(idx)
		g.committedTerm.Store(term)
	}
}

// fresh reports whether this member has heard of no commit and holds
// nothing but the bootstrap configuration, and the commit index it knows.
func (g *voteGuard) fresh() (bool, uint64) {
	known, own := g.committed.Load(), uint64(0)
	if r := g.raft.Load(); r != nil {
		known, own = max(known, r.CommitIndex()), r.LastIndex()
	}
	return known == 0 && (own <= bootstrapIndex || g.damaged), known
}

// errMayNotStand is what a (pre-)vote request this member may not make
// fails with.
var errMayNotStand = errors.New("member: this member may not stand for election: it lost its term and vote record, or entries it is getting back")

// mayVote reports whether this member may vote in term.
func (g *voteGuard) mayVote(term uint64) bool {
	floor := g.floor.Load()
	return floor == 0 || (floor != noFloor && term > floor)
}

// mayStand reports whether this member may stand for election in term.
func (g *voteGuard) mayStand(term uint64) bool { return g.mayVote(term) && !g.repairing.Load() }

// surveyedLogs records a survey of the other voters' logs.
func (g *voteGuard) surveyedLogs(s logSurvey) {
	first := g.survey.Swap(&s) == nil
	if first {
		close(g.surveyed)
	}
}

// heardFrom notes where a candidate's log ends, and returns the survey s
// with what candidates said added: the most complete log among all, and
// complete if every voter that did not answer has asked since.
func (g *voteGuard) heardFrom(candidate string, end logEnd, s *logSurvey) logSurvey {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.heard[candidate].before(end) {
		g.heard[candidate] = end
	}
	if s == nil {
		return logSurvey{}
	}
	out := *s
	for _, e := range g.heard {
		if out.most.before(e) {
			out.most = e
		}
	}
	if !out.complete && len(out.missing) > 0 {
		out.complete = true
		for _, id := range out.missing {
			if _, ok := g.heard[id]; !ok {
				out.complete = false
			}
		}
	}
	return out
}

// judge decides whether a candidate whose log ends at end may have this
// member's vote, and logs a refusal.
func (g *voteGuard) judge(kind string, candidate []byte, end logEnd, term uint64) verdict {
	fresh, known := g.fresh()
	survey := g.survey.Load()
	merged := g.heardFrom(string(candidate), end, survey)
	repairing := g.repairing.Load()
	var refusal string
	switch {
	case !g.mayVote(term) && g.votesUnknown && g.floor.Load() == noFloor && survey == nil:
		return hold // the floor is settled, if it can be, before the first survey is in
	case !g.mayVote(term) && g.votesUnknown && g.floor.Load() == noFloor:
		refusal = "this member started with nothing stored: it may have voted in this term before, and waits for every voter's term"
	case !g.mayVote(term):
		refusal = "this member's term and vote record was lost: it may have voted in this term"
	case repairing && end.before(g.lostEnd):
		refusal = "the candidate's log ends before this member's did before its disk was damaged"
	case known > 0 && !(repairing && g.lostEnd == logEnd{}):
		if end.index >= known && (known != g.committed.Load() || end.term >= g.committedTerm.Load()) {
			return grant
		}
		refusal = "the candidate's log may lack committed entries"
	case !fresh && !repairing:
		// Entries but no commit heard of: a fresh cluster, where a member
		// with entries got them from a leader that committed nothing yet.
		return grant
	default:
		s := &merged
		switch {
		case survey == nil:
			return hold
		case s.complete && !end.before(s.most):
			return grant
		case s.complete:
			refusal = "another member's log is more complete"
		case !repairing && end.index <= bootstrapIndex && s.most.index <= bootstrapIndex:
			return grant
		default:
			refusal = "a member that may hold more did not answer"
		}
	}
	g.log.Info("refusing a "+kind+": "+refusal, "candidate", string(candidate),
		"candidate_last_index", end.index, "known_commit_index", known)
	return refuse
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

// check answers a vote or pre-vote request this member refuses, and
// reports what it did with it; it notes the commit index other RPCs carry.
func (g *voteGuard) check(rpc raft.RPC) verdict {
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		v := g.judge("vote", req.ID, logEnd{term: req.LastLogTerm, index: req.LastLogIndex}, req.Term)
		if v == refuse {
			rpc.Respond(&raft.RequestVoteResponse{RPCHeader: g.header, Term: g.term()}, nil)
		}
		return v
	case *raft.RequestPreVoteRequest:
		v := g.judge("pre-vote", req.ID, logEnd{term: req.LastLogTerm, index: req.LastLogIndex}, req.Term)
		if v == refuse {
			rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: g.header, Term: g.term()}, nil)
		}
		return v
	default:
		g.note(req)
	}
	return grant
}

// surveyLogs asks the other voters where their logs end while guard g's
// member is fresh, once a Raft timeout; the first answer goes in at once.
func (n *Node) surveyLogs(g *voteGuard) {
	for {
		n.surveyFreshTerms(g)
		g.surveyedLogs(n.askLogEnds())
		if fresh, _ := g.fresh(); !fresh && !g.repairing.Load() && (!g.votesUnknown || g.floor.Load() != noFloor) {
			return
		}
		select {
		case <-time.After(n.retryEvery()):
		case <-n.quit:
			return
		}
	}
}

// askLogEnds asks every other voter at once where its log ends.
func (n *Node) askLogEnds() logSurvey {
	s := logSurvey{complete: true}
	n.askVoters(0, fwdLogEnd, nil, func(id int, reply []byte, err error) {
		if err != nil || len(reply) < 16 {
			s.complete = false
			s.missing = append(s.missing, itoa(id))
			return
		}
		if end := readLogEnd(reply); s.most.before(end) {
			s.most = end
		}
	})
	return s
}

// appendLogEnd appends where this member's log ends: term, then index.
func appendLogEnd(dst []byte, end logEnd) []byte {
	dst = binary.BigEndian.AppendUint64(dst, end.term)
	return binary.BigEndian.AppendUint64(dst, end.index)
}

// readLogEnd reads what appendLogEnd wrote; src holds at least 16 bytes.
func readLogEnd(src []byte) logEnd {
	return logEnd{term: binary.BigEndian.Uint64(src), index: binary.BigEndian.Uint64(src[8:])}
}
