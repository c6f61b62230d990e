package member

import (
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
)

func TestVoteGuard_Judge(t *testing.T) {
	fresh := logEnd{term: 1, index: 1}
	for _, tc := range []struct {
		name      string
		committed uint64     // highest commit index heard of
		survey    *logSurvey // what the other voters said, if asked
		last      logEnd     // where the candidate's log ends
		want      verdict
	}{
		{"a candidate holding everything committed", 400, nil, logEnd{3, 500}, grant},
		{"a candidate holding exactly the commit index", 400, nil, logEnd{3, 400}, grant},
		{"a candidate behind the commit index", 400, nil, logEnd{3, 399}, refuse},
		{"just started, nobody asked yet", 0, nil, fresh, hold},
		{"fresh cluster: all answered, all empty", 0, &logSurvey{most: fresh, complete: true}, fresh, grant},
		{"fresh cluster, one member down", 0, &logSurvey{most: fresh}, fresh, grant},
		{"nobody answered", 0, &logSurvey{}, fresh, grant},
		{"all answered: the most complete log", 0, &logSurvey{most: logEnd{2, 300}, complete: true}, logEnd{2, 300}, grant},
		{"all answered: an empty candidate beside a member with entries", 0, &logSurvey{most: logEnd{2, 300}, complete: true}, fresh, refuse},
		{"all answered: a later term outranks a longer log", 0, &logSurvey{most: logEnd{3, 10}, complete: true}, logEnd{2, 300}, refuse},
		{"one silent: a candidate with entries may lack committed ones", 0, &logSurvey{most: logEnd{2, 300}}, logEnd{2, 300}, refuse},
		{"one silent: an empty candidate beside a member with entries", 0, &logSurvey{most: logEnd{2, 300}}, fresh, refuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			g.note(&raft.AppendEntriesRequest{LeaderCommitIndex: tc.committed})
			if tc.survey != nil {
				g.surveyedLogs(*tc.survey)
			}
			if got := g.judge("vote", []byte("2"), tc.last, 5); got != tc.want {
				t.Errorf("committed %d, survey %+v, candidate's log ends %+v: judge = %v, want %v",
					tc.committed, tc.survey, tc.last, got, tc.want)
			}
		})
	}
}

// A voter that missed the survey but asked for a vote has said where its
// log ends: an empty candidate is refused beside it, and it is granted as
// the most complete.
func TestVoteGuard_CountsCandidatesRequestsAsAnswers(t *testing.T) {
	fresh, full := logEnd{term: 1, index: 1}, logEnd{term: 2, index: 31}
	g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.surveyedLogs(logSurvey{most: fresh, missing: []string{"2"}}) // member 1 answered empty, 2 did not
	if got := g.judge("vote", []byte("1"), fresh, 5); got != grant {
		t.Fatalf("before member 2 asked, an empty candidate (a fresh cluster without member 2): %v, want grant", got)
	}
	if got := g.judge("pre-vote", []byte("2"), full, 5); got != grant {
		t.Errorf("member 2, the most complete, asking itself: %v, want grant", got)
	}
	if got := g.judge("vote", []byte("1"), fresh, 5); got != refuse {
		t.Errorf("an empty candidate after member 2 said it holds 31 entries: %v, want refuse", got)
	}
}

func TestVoteGuard_NotesSnapshotsAndKeepsTheHighest(t *testing.T) {
	g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.note(&raft.InstallSnapshotRequest{LastLogIndex: 900})
	g.note(&raft.AppendEntriesRequest{LeaderCommitIndex: 100}) // an old, delayed one
	if got := g.committed.Load(); got != 900 {
		t.Fatalf("committed = %d, want 900", got)
	}
}

// TestVoteGuard_RefusalCarriesItsOwnTerm checks that a refused (pre-)vote
// answers with this member's term, not the candidate's: a reply with the
// candidate's pre-vote term would make it step down although the others
// grant it the election.
func TestVoteGuard_RefusalCarriesItsOwnTerm(t *testing.T) {
	g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.surveyedLogs(logSurvey{most: logEnd{term: 2, index: 60}, complete: true})
	for _, cmd := range []any{
		&raft.RequestPreVoteRequest{Term: 7, LastLogIndex: 50},
		&raft.RequestVoteRequest{Term: 7, LastLogIndex: 50},
	} {
		resp := make(chan raft.RPCResponse, 1)
		if g.check(raft.RPC{Command: cmd, RespChan: resp}) != refuse {
			t.Fatalf("%T from a candidate behind another member: not refused", cmd)
		}
		switch r := (<-resp).Response.(type) {
		case *raft.RequestPreVoteResponse:
			if r.Granted || r.Term != 0 {
				t.Errorf("pre-vote reply %+v, want refused with this member's term 0", r)
			}
		case *raft.RequestVoteResponse:
			if r.Granted || r.Term != 0 {
				t.Errorf("vote reply %+v, want refused with this member's term 0", r)
			}
		default:
			t.Errorf("reply of type %T", r)
		}
	}
}

// TestVoteGuard_ADamagedMember: a member getting back entries a damaged
// disk lost votes only for a candidate whose log reaches where its own
// ended before the damage, and, where that is not known, by the survey
// alone: a commit index a leader told it is no bound on what it may have
// acknowledged. A commit index bounds a candidate only in its leader's term.
func TestVoteGuard_ADamagedMember(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lostEnd logEnd
		survey  *logSurvey
		last    logEnd
		want    verdict
	}{
		{"short of where its log ended", logEnd{3, 500}, nil, logEnd{3, 499}, refuse},
		{"where its log ended, past the commit index", logEnd{3, 500}, nil, logEnd{3, 500}, grant},
		{"end not known, nobody asked yet", logEnd{}, nil, logEnd{3, 900}, hold},
		{"end not known, all answered", logEnd{}, &logSurvey{most: logEnd{3, 600}, complete: true}, logEnd{3, 600}, grant},
		{"end not known, all answered, a shorter candidate", logEnd{}, &logSurvey{most: logEnd{3, 600}, complete: true}, logEnd{3, 599}, refuse},
		{"end not known, one silent", logEnd{}, &logSurvey{most: logEnd{3, 600}}, logEnd{3, 900}, refuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			g.damaged, g.lostEnd = true, tc.lostEnd
			g.repairing.Store(true)
			g.note(&raft.AppendEntriesRequest{Term: 3, LeaderCommitIndex: 400})
			if tc.survey != nil {
				g.surveyedLogs(*tc.survey)
			}
			if got := g.judge("vote", []byte("2"), tc.last, 5); got != tc.want {
				t.Errorf("judge = %v, want %v", got, tc.want)
			}
			if g.mayStand(5) {
				t.Error("a member getting back what it lost stands")
			}
		})
	}
	g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.note(&raft.AppendEntriesRequest{Term: 4, LeaderCommitIndex: 400})
	if got := g.judge("vote", []byte("2"), logEnd{3, 900}, 5); got != refuse {
		t.Errorf("a log ending in an older term than the commit index's leader: %v, want refuse", got)
	}
	if got := g.judge("vote", []byte("2"), logEnd{4, 400}, 5); got != grant {
		t.Errorf("a log ending at the commit index in its leader's term: %v, want grant", got)
	}
}

// A member that started with nothing stored (a wiped data dir, or in
// memory) may have voted before in the term the others are in: until every
// voter has told it its term (or the cluster is new) it holds, then
// refuses, votes, however complete the candidate's log, even with a commit
// index a leader told it (a deposed leader, paused meanwhile, still sends
// one). Found by zkchaos: a wiped former leader of a term voted, in that
// term, for a paused and deposed leader, which overwrote the term's
// committed entries.
func TestVoteGuard_StartedWithNothingStored(t *testing.T) {
	g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.votesUnknown = true
	g.floor.Store(noFloor)
	candidate := logEnd{term: 256, index: 918980}
	g.note(&raft.AppendEntriesRequest{Term: 256, LeaderCommitIndex: 918980})
	if got := g.judge("vote", []byte("2"), candidate, 257); got != hold {
		t.Errorf("before the first survey: %v, want hold", got)
	}
	g.surveyedLogs(logSurvey{most: candidate, missing: []string{"1"}})
	if got := g.judge("vote", []byte("2"), candidate, 257); got != refuse {
		t.Errorf("a voter did not tell its term: %v, want refuse", got)
	}
	g.floor.Store(257) // every voter told: the highest term is 257
	if got := g.judge("vote", []byte("2"), candidate, 257); got != refuse {
		t.Errorf("in the floor's term: %v, want refuse", got)
	}
	if got := g.judge("vote", []byte("2"), candidate, 258); got != grant {
		t.Errorf("past the floor: %v, want grant", got)
	}
}
