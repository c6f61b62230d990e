package member

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// digestSession is the session the digest tests create nodes in.
const digestSession = 7

// createCmd returns a command creating path, in digestSession.
func createCmd(path string) []byte {
	req := &wire.CreateRequest{Path: path, Data: []byte("d"), ACL: wire.OpenACLUnsafe}
	cmd := raftfsm.Command{Type: raftfsm.TypeRequest, Session: digestSession, Time: time.Now().UnixMilli(),
		Op: wire.OpCreate, Body: req.Append(nil)}
	return cmd.Encode()
}

// proposeCreates proposes creates of /<prefix>-<i> on the leader and waits
// until every member applied them.
func proposeCreates(t *testing.T, nodes []*Node, prefix string, count int) {
	t.Helper()
	leader := leaderOf(nodes)
	if _, ok := leader.fsm.Session(digestSession); !ok {
		session := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: digestSession, Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		leader.Propose(session.Encode(), 0)
	}
	for i := range count {
		leader.Propose(createCmd(fmt.Sprintf("/%s-%d", prefix, i)), 0)
	}
	var last int64
	eventually(t, "the leader to apply the creates", func() bool {
		var done bool
		leader.fsm.Read(func(tr *tree.Tree) { _, done = tr.Stat(fmt.Sprintf("/%s-%d", prefix, count-1)) })
		last = leader.fsm.LastZxid()
		return done
	})
	eventually(t, "every member to apply the creates", func() bool {
		for _, n := range nodes {
			if n.fsm.LastZxid() < last {
				return false
			}
		}
		return true
	})
}

// TestDigests_MembersAgree: every member digests its tree at the same
// zxids, and the digests are equal; the leader finds no mismatch.
func TestDigests_MembersAgree(t *testing.T) {
	nodes := startNodes(t, 3, func(c *Config) { c.digestBase = 32 })
	for round := range 10 { // a digest point a round at most: one digest at a time
		proposeCreates(t, nodes, fmt.Sprintf("a%d", round), 32)
	}
	leader := leaderOf(nodes)
	eventually(t, "digests at common zxids", func() bool {
		common := map[uint64]int{}
		for _, n := range nodes {
			for _, d := range n.digestList() {
				common[d.zxid]++
			}
		}
		all := 0
		for _, c := range common {
			if c == len(nodes) {
				all++
			}
		}
		return all >= 2
	})
	byZxid := map[uint64]uint64{}
	for _, n := range nodes {
		for _, d := range n.digestList() {
			if want, ok := byZxid[d.zxid]; ok {
				assert.Equal(t, want, d.digest, "member %d's digest at %d", n.cfg.ServerID, d.zxid)
			}
			byZxid[d.zxid] = d.digest
		}
	}
	eventually(t, "the followers' reports to reach the leader", func() bool {
		leader.digests.mu.Lock()
		defer leader.digests.mu.Unlock()
		return len(leader.digests.reported) == 0
	})
	assert.Zero(t, leader.stats.DigestMismatches.Load())
}

// TestDigests_ATreeGoneAstrayIsFound: a follower whose tree changed outside
// the log is reported by the leader at the next digest point.
func TestDigests_ATreeGoneAstrayIsFound(t *testing.T) {
	nodes := startNodes(t, 3, func(c *Config) { c.digestBase = 32 })
	proposeCreates(t, nodes, "a", 10)
	leader := leaderOf(nodes)
	astray := followerOf(nodes, leader)
	// A create only this member applies: its tree differs from now on.
	astray.fsm.Apply(&raft.Log{Index: uint64(astray.fsm.LastZxid()), Type: raft.LogCommand, Data: createCmd("/astray")})
	proposeCreates(t, nodes, "b", 200)
	eventually(t, "the leader to find the mismatch", func() bool { return leader.stats.DigestMismatches.Load() > 0 })
	m, ok := leader.LastDigestMismatch()
	require.True(t, ok)
	assert.Equal(t, astray.cfg.ServerID, m.Member)
	assert.NotEqual(t, m.Leader, m.Ours)
}

// digestList returns the member's kept digests.
func (n *Node) digestList() []zxidDigest {
	n.digests.mu.Lock()
	defer n.digests.mu.Unlock()
	return append([]zxidDigest(nil), n.digests.kept...)
}

// TestFetchEntry_AFollowerGetsAnEntryFromTheLeader: what a member whose own
// copy of an entry reads damaged gets from the leader is the entry, whole.
func TestFetchEntry_AFollowerGetsAnEntryFromTheLeader(t *testing.T) {
	nodes := startNodes(t, 3, func(c *Config) { c.DataDir = t.TempDir() })
	proposeCreates(t, nodes, "f", 20)
	leader := leaderOf(nodes)
	follower := followerOf(nodes, leader)
	index := uint64(leader.fsm.LastZxid())
	var want, got raft.Log
	require.NoError(t, follower.raftLog.GetLog(index, &want))
	require.NoError(t, follower.fetchEntry(index, &got))
	assert.Equal(t, want.Term, got.Term)
	assert.Equal(t, want.Data, got.Data)
	assert.Equal(t, want.Extensions, got.Extensions)
	assert.ErrorIs(t, leader.fetchEntry(index, &got), errNoLeaderToAsk, "the leader has no one to ask")
}
