package member

import (
	"time"

	"github.com/hashicorp/raft"
)

// Failover.
//
// A Raft follower notices a dead leader only when its heartbeat timeout
// passes without word from it: a Raft timeout or two (1 to 2 s for a
// member of zoo.cfg processes). A ZooKeeper follower starts an election the
// moment its connection to the leader breaks. A zkraft member keeps one
// connection to the leader, for forwarding; when it breaks, and the
// leader's port then refuses a new one (the process is gone, or this member
// is cut off from it), the member stands at once: it lowers Raft's
// heartbeat and election timeouts for a moment, which makes its follower
// loop look at its timer now. Raft's pre-vote keeps a live leader safe: a
// member that still hears from a leader refuses the pre-vote, so a member
// that stood by mistake cannot depose it. watchLeadership puts the usual
// timeouts back once a new leader is known, or after two Raft timeouts.

// fastTimeout is the heartbeat and election timeout while standing after
// the leader's connection broke.
func (n *Node) fastTimeout() time.Duration {
	return min(max(n.cfg.RaftTimeout/20, 5*time.Millisecond), 50*time.Millisecond)
}

// leaderLinkBroken is told that the connection to leader broke from the
// far side.
func (n *Node) leaderLinkBroken(leader int) {
	if self, _ := n.cfg.Self(); self.Observer || n.raft == nil {
		return
	}
	if _, id := n.raft.LeaderWithID(); id != raft.ServerID(itoa(leader)) {
		return // Raft has moved on already
	}
	n.goOwned("leader-probe", func() {
		peer, ok := n.cfg.Peer(leader)
		if !ok {
			return
		}
		nc, err := dialPeer(n.cfg.Links, n.cfg.ServerID, leader, peer.ForwardAddr, n.probeTimeout())
		if err == nil {
			nc.Close() // the leader's process is there: the connection just went
			return
		}
		if _, id := n.raft.LeaderWithID(); id != raft.ServerID(itoa(leader)) {
			return
		}
		n.log.Info("the connection to the leader broke and it cannot be reached: standing for election now",
			"leader", leader, "err", err)
		n.standNow(raft.ServerID(itoa(leader)))
	})
}

// probeTimeout bounds the dial that checks whether the leader is there.
func (n *Node) probeTimeout() time.Duration { return min(n.cfg.RaftTimeout/2, 500*time.Millisecond) }

// standNow lowers Raft's timeouts so that this follower stands for
// election at once (see the package's failover notes).
func (n *Node) standNow(dead raft.ServerID) {
	n.reloadMu.Lock()
	n.fastSince, n.fastLeader = time.Now(), dead
	n.reloadMu.Unlock()
	fast := n.fastTimeout()
	if err := n.reloadConfig(func(rc *raft.ReloadableConfig) {
		rc.HeartbeatTimeout, rc.ElectionTimeout = fast, fast
	}); err != nil {
		n.log.Warn("stand for election", "err", err)
	}
}

// settleTimeouts puts the usual timeouts back after a fast election, once a
// leader other than the dead one is known, or two Raft timeouts on.
func (n *Node) settleTimeouts(leader raft.ServerID) {
	n.reloadMu.Lock()
	since, dead := n.fastSince, n.fastLeader
	n.reloadMu.Unlock()
	if since.IsZero() || (leader == "" || leader == dead) && time.Since(since) < 2*n.cfg.RaftTimeout {
		return
	}
	if err := n.reloadConfig(func(rc *raft.ReloadableConfig) {
		rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.RaftTimeout, n.cfg.RaftTimeout
	}); err != nil {
		n.log.Warn("restore raft timeouts", "err", err)
		return
	}
	n.reloadMu.Lock()
	n.fastSince = time.Time{}
	n.reloadMu.Unlock()
}
