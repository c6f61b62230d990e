package member

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Membership and reconfig.
//
// The ensemble's configuration lives in the replicated tree, in
// /zookeeper/config, as in ZooKeeper: zoo.cfg's server lines only start it.
// A reconfig request goes to the leader (ProposePrepared), which checks it
// against the configuration and the members it hears from
// (Host.Prepare, QuorumSynced) and proposes the outcome: the new text, or
// the error. Every member, applying it, hands the new member list to
// SetServers, which addresses, votes and failover read from then on. The
// leader then brings Raft's own configuration in line, one change at a time
// (AddVoter, AddNonvoter, DemoteVoter for a member that left, which follows
// on without a vote; itself last, handing its office over first), and a
// new leader does the same when it takes
// office, so a change interrupted by a failover completes. Until Raft's
// configuration matches, a further reconfig is answered
// RECONFIGINPROGRESS.

// servers returns the current members.
func (n *Node) servers() []Peer { return *n.members.Load() }

// Servers returns the current members, as the last configuration applied
// here (or zoo.cfg, before any) names them.
func (n *Node) Servers() []Peer { return slices.Clone(n.servers()) }

// peer returns the current member with the given id.
func (n *Node) peer(id int) (Peer, bool) {
	for _, p := range n.servers() {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

// self returns this member's entry, and whether it is a member still.
func (n *Node) self() (Peer, bool) { return n.peer(n.cfg.ServerID) }

// Voters counts the current voting members.
func (n *Node) Voters() int { return voters(n.servers()) }

// idOf returns the id of the member whose Raft address is addr, 0 if none:
// a current member, or one that left and may still follow without a vote.
func (n *Node) idOf(addr raft.ServerAddress) int {
	for _, list := range [][]Peer{n.servers(), *n.known.Load()} {
		for _, p := range list {
			if raft.ServerAddress(p.RaftAddr) == addr {
				return p.ID
			}
		}
	}
	return 0
}

// followers returns the other members, and those that left and may
// follow on without a vote (each at the address it was last known by).
func (n *Node) followers() []Peer {
	out := n.others()
	known := *n.known.Load()
	for i := len(known) - 1; i >= 0; i-- {
		p := known[i]
		if p.ID != n.cfg.ServerID && !slices.ContainsFunc(out, func(q Peer) bool { return q.ID == p.ID }) {
			out = append(out, p)
		}
	}
	return out
}

// SetServers makes servers the members, as a configuration just applied
// (or restored) names them. It must not block: it runs inside the apply.
// On the leader it starts bringing Raft's configuration in line.
func (n *Node) SetServers(servers []Peer) {
	servers = slices.Clone(servers)
	n.members.Store(&servers)
	known := slices.Clone(*n.known.Load())
	for _, p := range servers {
		if !slices.Contains(known, p) {
			known = append(known, p)
		}
	}
	n.known.Store(&known)
	if n.notices != nil {
		n.notices.followMembers(n)
	}
	if n.IsLeader() {
		n.reconcileMembers()
	}
}

// reconcileMembers brings Raft's configuration in line with the members,
// on a goroutine of its own; one runs at a time, and one that finds another
// running leaves it a note to go round again.
func (n *Node) reconcileMembers() {
	if !n.cfg.Clustered() || n.raftNow() == nil {
		return
	}
	n.reconcileAgain.Store(true)
	if !n.reconciling.CompareAndSwap(false, true) {
		return
	}
	if !n.goOwned("reconcile-members", func() {
		defer n.reconciling.Store(false)
		for n.reconcileAgain.Swap(false) {
			if err := n.matchRaftConfiguration(); err != nil {
				n.log.Warn("could not bring raft's configuration in line with the members", "err", err)
				return
			}
		}
	}) {
		n.reconciling.Store(false)
	}
}

// raftChange is one step towards the members' configuration: peer joins
// Raft's configuration as a voter or non-voter, or, with demote, keeps
// following as a non-voter.
type raftChange struct {
	peer   Peer
	demote bool
}

// membershipChanges lists the steps that make Raft's configuration conf
// name servers as voters and non-voters, additions and changes first. A
// voter servers leave out becomes a non-voter, this member (self) last: a
// ZooKeeper follower that a reconfig removes is no longer counted, but
// stays connected to its leader as a learner, applying the writes and
// serving its clients, until it is shut down. Nothing is removed from
// Raft's configuration outright.
func membershipChanges(conf raft.Configuration, servers []Peer, self int) []raftChange {
	var out []raftChange
	have := make(map[raft.ServerID]raft.Server, len(conf.Servers))
	for _, s := range conf.Servers {
		have[s.ID] = s
	}
	want := make(map[raft.ServerID]bool, len(servers))
	for _, p := range servers {
		id := raft.ServerID(strconv.Itoa(p.ID))
		want[id] = true
		s, ok := have[id]
		suffrage := raft.Voter
		if p.Observer {
			suffrage = raft.Nonvoter
		}
		if !ok || s.Address != raft.ServerAddress(p.RaftAddr) || s.Suffrage != suffrage {
			out = append(out, raftChange{peer: p})
		}
	}
	var selfGone *raftChange
	for _, s := range conf.Servers {
		if want[s.ID] || s.Suffrage != raft.Voter {
			continue
		}
		id, _ := strconv.Atoi(string(s.ID))
		c := raftChange{peer: Peer{ID: id, RaftAddr: string(s.Address)}, demote: true}
		if id == self {
			selfGone = &c
			continue
		}
		out = append(out, c)
	}
	if selfGone != nil {
		out = append(out, *selfGone)
	}
	return out
}

// matchRaftConfiguration makes the changes membershipChanges lists, while
// this member leads.
func (n *Node) matchRaftConfiguration() error {
	f := n.raftNow().GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	timeout := 10 * n.cfg.RaftTimeout
	for _, c := range membershipChanges(f.Configuration(), n.servers(), n.cfg.ServerID) {
		if !n.IsLeader() {
			return nil // the next leader takes over
		}
		id := raft.ServerID(strconv.Itoa(c.peer.ID))
		var fut raft.Future
		switch {
		case c.demote && c.peer.ID == n.cfg.ServerID:
			// A leader that demotes itself steps down only once the change
			// commits, and then the others wait out a Raft timeout; handing
			// its office to the most complete member first makes the switch
			// at once. The new leader demotes this member (see Elected).
			n.log.Info("this leader is no longer a member: handing leadership over")
			fut = n.raftNow().LeadershipTransfer()
		case c.demote:
			n.log.Info("a member left: it follows on without a vote", "sid", c.peer.ID)
			fut = n.raftNow().DemoteVoter(id, 0, timeout)
		case c.peer.Observer:
			n.log.Info("adding an observer to raft's configuration", "sid", c.peer.ID, "addr", c.peer.RaftAddr)
			fut = n.raftNow().AddNonvoter(id, raft.ServerAddress(c.peer.RaftAddr), 0, timeout)
		default:
			n.log.Info("adding a voter to raft's configuration", "sid", c.peer.ID, "addr", c.peer.RaftAddr)
			fut = n.raftNow().AddVoter(id, raft.ServerAddress(c.peer.RaftAddr), 0, timeout)
		}
		if err := fut.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				return nil
			}
			return err
		}
	}
	return nil
}

// awaitReconciled waits, on the leader, until Raft's configuration names
// exactly the members (a reconfig's change is made after it applies, so
// that a client's next reconfig finds the last one done, as ZooKeeper's
// client does when its reply comes), for at most ten Raft timeouts.
func (n *Node) awaitReconciled() {
	if !n.IsLeader() {
		return
	}
	// Everything committed applied here first: a reconfig a follower has
	// already answered may not have reached this member's state yet.
	_ = n.barrier(10 * n.cfg.RaftTimeout).Error()
	n.leadingWhile(n.ReconfigInProgress)
	// A member that has just become the leader has heard from none of
	// the others yet: they report to it as soon as they learn it leads,
	// and every half tick after. Wait for a quorum of them, as ZooKeeper's
	// new leader has its quorum synced before it serves, so that a
	// reconfig that comes at once is not refused for want of a quorum in
	// touch (NEWCONFIGNOQUORUM) that is there. A leader that hears from no
	// quorum loses its office (Raft's leader lease) before the deadline.
	n.leadingWhile(func() bool { return !n.QuorumSynced(n.servers()) })
}

// leadingWhile waits, looking every 5 ms, while this member leads and cond
// holds, for at most ten Raft timeouts.
func (n *Node) leadingWhile(cond func() bool) {
	deadline := time.Now().Add(10 * n.cfg.RaftTimeout)
	for n.IsLeader() && cond() && time.Now().Before(deadline) {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-n.quit:
			return
		}
	}
}

// ReconfigInProgress reports, on the leader, whether Raft's configuration
// does not yet name exactly the members.
func (n *Node) ReconfigInProgress() bool {
	if n.raftNow() == nil || !n.cfg.Clustered() {
		return false
	}
	f := n.raftNow().GetConfiguration()
	return f.Error() != nil || len(membershipChanges(f.Configuration(), n.servers(), n.cfg.ServerID)) > 0
}

// QuorumSynced reports, on the leader, whether a majority of the voters of
// servers are in touch with it: itself, and members of the current
// configuration that reported within the last two ticks. A member not yet
// part of the ensemble is not in touch. ZooKeeper's leader refuses a
// reconfig without such a majority (NEWCONFIGNOQUORUM).
func (n *Node) QuorumSynced(servers []Peer) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	synced, total := 0, 0
	for _, p := range servers {
		if p.Observer {
			continue
		}
		total++
		cur, member := n.peer(p.ID)
		switch {
		case p.ID == n.cfg.ServerID:
			synced++
		case member && cur.RaftAddr == p.RaftAddr && time.Since(n.lastHeard[p.ID]) <= 2*n.cfg.TickTime:
			synced++
		}
	}
	return synced > total/2
}

// ProposePrepared proposes a command only the leader may decide (a
// reconfig): the leader passes it through Host.Prepare first, and proposes
// what that returns; another member sends it to the leader to do so. Like
// Propose, its success shows as the apply of what was proposed.
func (n *Node) ProposePrepared(data []byte, reqID uint64) {
	n.proposePrepared(data, reqID, n.holdDeadline())
}

// proposePrepared is ProposePrepared until deadline: a leader that hands
// its office over before it prepared the command answers that it does not
// lead, having done nothing, and the command goes to the next one. It waits
// for Raft here to name another leader first (or a tenth of a Raft timeout
// between tries): Raft names the one that left for a while yet, and three
// tries in a row used to be spent on it within a millisecond, failing the
// client's reconfig and closing its connection.
func (n *Node) proposePrepared(data []byte, reqID uint64, deadline time.Time) {
	local := func() {
		// This member may have become the leader since the wait below,
		// and not have brought Raft's configuration in line yet: a
		// reconfig just applied that removed the last leader leaves the
		// new one to do it.
		n.awaitReconciled()
		n.applyLocal(n.host.Prepare(data), reqID)
	}
	n.awaitReconciled() // may hand leadership over: then forward
	if !n.cfg.Clustered() || n.IsLeader() {
		local()
		return
	}
	changed := n.leaderChanges()
	n.forward(fwdPrepare, data, reqID, local, func(err error) bool {
		if !errors.Is(err, errNotLeaderThere) || time.Now().After(deadline) {
			return false
		}
		return n.goOwned("prepare-again", func() {
			if !n.awaitLeaderMove(changed) {
				n.failProposal(reqID, ErrClosed)
				return
			}
			if !n.host.Awaited(reqID) { // its client gave up, or went
				n.failProposal(reqID, errNotLeaderThere)
				return
			}
			n.proposePrepared(data, reqID, deadline)
		})
	})
}
