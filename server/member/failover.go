package member

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/wire"
)

// Failover.
//
// A Raft follower notices a dead leader only when its heartbeat timeout
// passes without word from it: one to two Raft timeouts. A ZooKeeper
// follower starts an election the moment its connection to the leader
// breaks. A zkraft member keeps one connection to the leader, for
// forwarding, and the leader keeps Raft connections to it; when one of them
// breaks from the far side, and the leader's port then refuses a new one
// (the process is gone, or this member is cut off from it), the member
// stands as soon as Raft lets it: once a leader lease has passed since it
// last heard from the leader, it lowers Raft's heartbeat and election
// timeouts to the lease, which makes its follower loop look at its timer at
// once and find it expired. (Raft allows no timeout below the leader lease,
// which is three of the leader's heartbeat intervals, so that a live
// leader does not lose its lease between two heartbeats.) Raft's pre-vote
// keeps a live leader safe: a member that still hears from a leader refuses
// the pre-vote, so a member that stood by mistake cannot depose it.
// watchLeadership puts the usual timeouts back once a new leader is known,
// or after two Raft timeouts.

// leaseTimeout is Raft's leader lease: three heartbeat intervals (Raft's
// leader sends one every tenth of the heartbeat timeout), and no less
// than 50ms unless the Raft timeout is shorter than 100ms.
func (n *Node) leaseTimeout() time.Duration {
	return max(n.cfg.RaftTimeout*3/10, min(n.cfg.RaftTimeout/2, 50*time.Millisecond), 5*time.Millisecond)
}

// fastTimeout is the heartbeat and election timeout while standing after
// the leader's connection broke: the lowest Raft allows.
func (n *Node) fastTimeout() time.Duration { return n.leaseTimeout() }

// leaderLinkBroken is told that a connection with member leader broke from
// the far side (the member may not lead: then nothing is done). Several
// connections break at once when a leader dies; one probe is enough.
func (n *Node) leaderLinkBroken(leader int) {
	if self, _ := n.cfg.Self(); self.Observer || n.raft == nil {
		return
	}
	if _, id := n.raft.LeaderWithID(); id != raft.ServerID(itoa(leader)) {
		return // not the leader, or Raft has moved on already
	}
	if !n.probing.CompareAndSwap(false, true) {
		return
	}
	if !n.goOwned("leader-probe", func() {
		defer n.probing.Store(false)
		n.probeLeader(leader)
	}) {
		n.probing.Store(false)
	}
}

// probeLeader pings the leader on its forward port; if the leader is
// definitely gone, this member stands for election as soon as Raft lets
// it.
func (n *Node) probeLeader(leader int) {
	err := n.ping(leader)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return // the leader's process answers (or is slow): only a connection went
	}
	// Raft stands once its heartbeat timeout, lowered to the lease, has
	// passed since it last heard from the leader.
	if wait := n.fastTimeout() - time.Since(n.raft.LastContact()); wait > 0 {
		select {
		case <-time.After(wait):
		case <-n.quit:
			return
		}
	}
	if _, id := n.raft.LeaderWithID(); id != raft.ServerID(itoa(leader)) {
		return
	}
	n.log.Info("the connection to the leader broke and it cannot be reached: standing for election now",
		"leader", leader, "err", err)
	n.standNow(raft.ServerID(itoa(leader)))
}

// ping dials member id's forward port and waits for the answer to a ping.
// A dial alone proves nothing: a process that is being killed still
// completes connections for a moment, which it then resets unanswered. An
// error that is not a timeout means the member's process is gone, or cut
// off from this one.
func (n *Node) ping(id int) error {
	peer, ok := n.cfg.Peer(id)
	if !ok {
		return fmt.Errorf("member %d is not among the servers", id)
	}
	nc, err := dialPeer(n.cfg.Links, n.cfg.ServerID, id, peer.ForwardAddr, n.probeTimeout())
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(n.probeTimeout()))
	if _, err := nc.Write(appendFwd(nil, fwdPing, 1, nil)); err != nil {
		return err
	}
	frame, err := wire.NewFrameReader(nc, maxForwardFrame).Next()
	if err != nil {
		return err
	}
	if len(frame) < 10 || frame[0] != fwdPing {
		return fmt.Errorf("member %d: unexpected answer to a ping", id)
	}
	return nil
}

// probeTimeout bounds the ping that checks whether the leader is there.
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
