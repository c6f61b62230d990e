package member

import (
	"testing"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
)

// TestForward_AnsweredProposalsAreUncounted: every proposal a follower
// forwards (a write, or a command the leader prepares) is uncounted on the
// leader once Raft answers it, so that stopping the leader does not wait
// for answers that have already come (it waited ten seconds for each
// forwarded reconfig).
func TestForward_AnsweredProposalsAreUncounted(t *testing.T) {
	nodes := startNodes(t, 3, nil)
	leader := leaderOf(nodes)
	follower := followerOf(nodes, leader)
	eventually(t, "the follower to know the leader", func() bool { return follower.waitForLeader(0) })
	session := func(id int64) []byte {
		cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: id, Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		return cmd.Encode()
	}
	follower.Propose(session(1), 0)
	follower.ProposePrepared(session(2), 0)
	for _, id := range []int64{1, 2} {
		eventually(t, "the leader to apply the forwarded proposals", func() bool {
			_, ok := leader.fsm.Session(id)
			return ok
		})
	}
	eventually(t, "the leader to uncount what Raft answered", func() bool { return leader.unanswered.Load() == 0 })
}
