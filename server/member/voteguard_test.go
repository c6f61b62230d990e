package member

import (
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
)

func TestVoteGuard_MayElect(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed uint64 // highest commit index heard of
		last      uint64 // the candidate's last log index
		want      bool
	}{
		{"fresh cluster: a candidate with the bootstrap configuration only", 0, 1, true},
		{"just restarted: a candidate with entries may lack committed ones", 0, 500, false},
		{"a candidate holding everything committed", 400, 500, true},
		{"a candidate holding exactly the commit index", 400, 400, true},
		{"a candidate behind the commit index", 400, 399, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newVoteGuard(raft.RPCHeader{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			g.note(&raft.AppendEntriesRequest{LeaderCommitIndex: tc.committed})
			if got := g.mayElect("vote", []byte("2"), tc.last); got != tc.want {
				t.Errorf("committed %d, candidate's last %d: mayElect = %v, want %v", tc.committed, tc.last, got, tc.want)
			}
		})
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
	for _, cmd := range []any{
		&raft.RequestPreVoteRequest{Term: 7, LastLogIndex: 50},
		&raft.RequestVoteRequest{Term: 7, LastLogIndex: 50},
	} {
		resp := make(chan raft.RPCResponse, 1)
		if !g.refused(raft.RPC{Command: cmd, RespChan: resp}) {
			t.Fatalf("%T from a candidate with entries, before any commit is known: not refused", cmd)
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
