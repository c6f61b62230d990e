package member

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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
// breaks from the far side, the member pings the leader on its forward
// port. If the ping fails (the process is gone, or this member is cut off
// from it), the member asks the other voters whether they can reach the
// leader: each answers whether it finds the leader gone too (it pings it
// as well) and where its log ends. When a majority of the voters, this one
// included, find the leader gone, the member among them whose log is the
// most complete (ties: the lowest id) stands for election at once: it hands
// its own Raft a TimeoutNow, the message a leader sends to hand over
// leadership, so Raft stands without waiting for its timer and asks the
// others for votes marked as a leadership transfer, which they grant
// although they still remember the dead leader. The others wait for it; a
// member that finds itself no longer the best asks again.
//
// The majority is what keeps a live leader safe: a member cut off from a
// leader that the others still reach does not stand (and so does not raise
// its term, which would depose that leader when the link comes back);
// Raft's pre-vote covers its ordinary timeouts. Raft's own safety does not
// depend on any of this: a vote still goes only to a candidate whose log
// is as complete as the voter's.
//
// The leader's lease (how long a leader goes without hearing from a
// majority before it steps down) is a whole Raft timeout unless
// Config.LeaderLease says otherwise, so that a leader on a busy machine
// keeps office; failover does not wait for it.

// leaseTimeout is Raft's leader lease.
func (n *Node) leaseTimeout() time.Duration {
	if n.cfg.LeaderLease > 0 {
		return min(n.cfg.LeaderLease, n.cfg.RaftTimeout)
	}
	return n.cfg.RaftTimeout
}

// leaderLinkBroken is told that a connection with member leader broke from
// the far side (the member may not lead: then nothing is done). Several
// connections break at once when a leader dies; one probe is enough.
func (n *Node) leaderLinkBroken(leader int) {
	if self, ok := n.self(); !ok || self.Observer || n.raftNow() == nil {
		return
	}
	if _, id := n.raftNow().LeaderWithID(); id != raft.ServerID(itoa(leader)) {
		return // not the leader, or Raft has moved on already
	}
	n.standIfGone(leader, false)
}

// standIfGone starts a probe of leader, unless one runs: if the leader
// cannot be reached (known already when gone is set), this member takes
// part in choosing which member stands at once.
func (n *Node) standIfGone(leader int, gone bool) {
	if leader == n.cfg.ServerID || !n.probing.CompareAndSwap(false, true) {
		return
	}
	if !n.goOwned("leader-probe", func() {
		defer n.probing.Store(false)
		if !gone {
			err := n.ping(leader)
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				return // the leader's process answers (or is slow): only a connection went
			}
			n.log.Info("the connection to the leader broke and it cannot be reached", "leader", leader, "err", err)
		}
		// Found gone now, once the ping failed: an AppendEntries the leader
		// sent before the connection broke may still be applied while the
		// ping runs, and Raft counts it as contact. Counted from before the
		// ping, it looked like the leader heard from again, and the member
		// served on until Raft's own timeout.
		found := time.Now()
		n.goneLeader.Store(&goneLeader{id: raft.ServerID(itoa(leader)), at: found})
		select {
		case n.leaderFoundGone <- struct{}{}: // wake watchLeadership
		default:
		}
		n.chooseCandidate(leader)
	}) {
		n.probing.Store(false)
	}
}

// goneLeader is a leader this member found gone, and when: Raft still
// names it until its heartbeat timeout passes, but the time without a
// leader that ends in quorum loss counts from then (see watchLeadership).
type goneLeader struct {
	id        raft.ServerID
	at        time.Time
	again     bool        // found gone by a recheck: not checked again
	rechecked atomic.Bool // a contact since at was checked (knownLeader)
}

// knownLeader returns the leader Raft names, unless this member found it
// gone and has not heard from it since; then it returns "" and when the
// leader was found gone.
//
// Raft counts as contact an AppendEntries the leader sent before its
// connection broke and this member applies only after the probe found the
// leader gone. Taken at its word, one such late contact kept the member
// serving until Raft's own timeout. So the first contact since the leader
// was found gone is checked with a ping: if the leader answers, it is back;
// if not, it is found gone again, from now, and the next contact counts.
// Only watchLeadership calls it: it may start that ping.
func (n *Node) knownLeader() (raft.ServerID, time.Time) {
	_, id := n.raftNow().LeaderWithID()
	g := n.goneLeader.Load()
	if g == nil || id != g.id || id == "" || id == raft.ServerID(itoa(n.cfg.ServerID)) {
		return id, time.Time{}
	}
	if n.raftNow().LastContact().Before(g.at) {
		return "", g.at
	}
	if !g.again && g.rechecked.CompareAndSwap(false, true) {
		n.recheckGone(g)
	}
	return id, time.Time{}
}

// recheckGone pings the leader g names, which was heard from after it was
// found gone (knownLeader).
func (n *Node) recheckGone(g *goneLeader) {
	leader, err := strconv.Atoi(string(g.id))
	if err != nil {
		return
	}
	n.goOwned("leader-recheck", func() {
		err := n.ping(leader)
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			n.goneLeader.CompareAndSwap(g, nil) // it answers: back
			return
		}
		// Found gone again, from now, and not checked again: a contact
		// after this is the leader heard from. (Rechecked at every one, a
		// leader that Raft hears but whose pings fail, its forward port cut
		// off, say, would be lost and found again at every heartbeat.)
		again := &goneLeader{id: g.id, at: time.Now(), again: true}
		if n.goneLeader.CompareAndSwap(g, again) {
			select {
			case n.leaderFoundGone <- struct{}{}: // wake watchLeadership
			default:
			}
		}
	})
}

// logEnd is where a member's log ends: Raft's order of completeness.
type logEnd struct{ term, index uint64 }

func (a logEnd) before(b logEnd) bool {
	return a.term < b.term || a.term == b.term && a.index < b.index
}

// goneView is one voter's answer to "is the leader gone?".
type goneView struct {
	id      int
	reached bool // it answered at all
	gone    bool
	end     logEnd
}

// chooseCandidate asks the other voters about the dead leader and stands
// for election if a majority find it gone and this member's log is the
// most complete among them; otherwise it waits for the member that is, and
// asks again if no leader comes, for at most two Raft timeouts (after which
// Raft's own timeouts have taken over).
func (n *Node) chooseCandidate(leader int) {
	deadline := time.Now().Add(2 * n.cfg.RaftTimeout)
	term := n.raftNow().CurrentTerm()
	for time.Now().Before(deadline) {
		changed := n.leaderChanges()
		if !n.stillLeads(leader) {
			return
		}
		self := goneView{id: n.cfg.ServerID, reached: true, gone: true, end: n.candidateLogEnd()}
		views := append(n.askGone(leader), self)
		best, ok := pickCandidate(views, n.Voters())
		if !ok && !quorumReached(views, n.Voters()) {
			// As a ZooKeeper follower whose leader's connection breaks goes
			// looking at once: no leader can be elected with the members
			// this one reaches, so its clients had better go elsewhere now
			// than after syncLimit ticks.
			n.setServing(false, "the leader is gone and too few members answer to elect another: not serving clients until a leader is elected")
			return
		}
		if !ok {
			n.log.Info("the leader is gone for a minority only: leaving the election to Raft's timeouts",
				"leader", leader, "voters", n.Voters())
			return
		}
		if best.id == n.cfg.ServerID {
			// The views were asked for a moment ago, and a member's log may
			// have grown since it answered (an append in flight when the
			// leader went): it may have found itself the best and stood.
			// Its vote request raised our term; standing now would start a
			// second election that deposes the first's winner.
			if n.raftNow().CurrentTerm() != term || !n.stillLeads(leader) {
				n.log.Info("another member stood for election first", "leader", leader)
				return
			}
			n.log.Info("the leader is gone for a majority: standing for election now", "leader", leader)
			n.trans.timeoutNow()
			return
		}
		// Member best stands: give it a probe's time to win.
		select {
		case <-changed:
		case <-time.After(n.probeTimeout()):
		case <-n.quit:
			return
		}
	}
}

// pickCandidate returns, if a majority of the voters find the leader gone,
// the one among them whose log is the most complete (ties: the lowest id).
func pickCandidate(views []goneView, voters int) (goneView, bool) {
	var best goneView
	gone := 0
	for _, v := range views {
		if !v.gone {
			continue
		}
		if gone == 0 || best.end.before(v.end) || v.end == best.end && v.id < best.id {
			best = v
		}
		gone++
	}
	return best, gone > voters/2
}

// quorumReached reports whether a majority of the voters answered.
func quorumReached(views []goneView, voters int) bool {
	reached := 0
	for _, v := range views {
		if v.reached {
			reached++
		}
	}
	return reached > voters/2
}

// stillLeads reports whether this member's Raft still takes leader as the
// leader, or knows none, and this member still follows.
func (n *Node) stillLeads(leader int) bool {
	_, id := n.raftNow().LeaderWithID()
	return n.raftNow().State() == raft.Follower && (id == "" || id == raft.ServerID(itoa(leader)))
}

// logEnd is where this member's log ends.
func (n *Node) logEnd() logEnd {
	term, _ := strconv.ParseUint(n.raftNow().Stats()["last_log_term"], 10, 64)
	return logEnd{term: term, index: n.raftNow().LastIndex()}
}

// askGone asks every other voter at once whether leader is gone for it. A
// voter that cannot be asked counts as one that still has the leader.
func (n *Node) askGone(leader int) []goneView {
	var views []goneView
	n.askVoters(leader, fwdGone, binary.BigEndian.AppendUint32(nil, uint32(leader)), func(id int, reply []byte, err error) {
		v := goneView{id: id}
		if err == nil && len(reply) >= 17 {
			v.reached, v.gone = true, reply[0] == 1
			v.end = readLogEnd(reply[1:])
		}
		views = append(views, v)
	})
	return views
}

// askVoters asks every other voter but member except (0: none) at once,
// each on a connection of its own, and hands got each answer, one at a
// time, once all are in or have failed.
func (n *Node) askVoters(except int, typ byte, payload []byte, got func(id int, reply []byte, err error)) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, p := range n.servers() {
		if p.Observer || p.ID == n.cfg.ServerID || p.ID == except {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, err := n.ask(p.ID, typ, payload, 2*n.probeTimeout())
			mu.Lock()
			defer mu.Unlock()
			got(p.ID, reply, err)
		}()
	}
	wg.Wait()
}

// answerGone answers another member's "is the leader gone?": gone if this
// member knows no leader, or the leader it knows is that one and a ping
// fails; then it takes part in choosing who stands. The answer carries
// where this member's log ends.
func (n *Node) answerGone(payload []byte) []byte {
	gone := false
	if len(payload) >= 4 {
		leader := int(binary.BigEndian.Uint32(payload))
		_, id := n.raftNow().LeaderWithID()
		switch {
		case id == "":
			gone = true
		case id == raft.ServerID(itoa(leader)):
			err := n.ping(leader)
			gone = err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
			if gone {
				n.standIfGone(leader, true)
			}
		}
	}
	return appendLogEnd([]byte{b2u8(gone)}, n.candidateLogEnd())
}

// candidateLogEnd is where this member's log ends, as it offers itself to
// stand: nowhere while it may not stand (see voteGuard.mayStand), so that
// another is chosen.
func (n *Node) candidateLogEnd() logEnd {
	if g := n.guard(); g != nil && !g.mayStand(n.raftNow().CurrentTerm()+1) {
		return logEnd{}
	}
	return n.logEnd()
}

// ping dials member id's forward port and waits for the answer to a ping.
// A dial alone proves nothing: a process that is being killed still
// completes connections for a moment, which it then resets unanswered. An
// error that is not a timeout means the member's process is gone, or cut
// off from this one.
func (n *Node) ping(id int) error {
	_, err := n.ask(id, fwdPing, nil, n.probeTimeout())
	return err
}

// ask sends member id one request of type typ on a connection of its own
// and returns the answer's payload.
func (n *Node) ask(id int, typ byte, payload []byte, timeout time.Duration) ([]byte, error) {
	peer, ok := n.peer(id)
	if !ok {
		return nil, fmt.Errorf("member %d is not among the servers", id)
	}
	nc, err := dialPeer(n.cfg.Links, n.cfg.PeerVia, n.cfg.ServerID, id, peer.ForwardAddr, timeout)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(appendFwd(nil, typ, 1, payload)); err != nil {
		return nil, err
	}
	frame, err := wire.NewFrameReader(nc, maxForwardFrame).Next()
	if err != nil {
		return nil, err
	}
	if len(frame) < 10 || frame[0] != typ {
		return nil, fmt.Errorf("member %d: unexpected answer", id)
	}
	if frame[9] != fwdOK {
		return nil, fwdError(frame[9], frame[10:])
	}
	return frame[10:], nil
}

// probeTimeout bounds the ping that checks whether the leader is there.
func (n *Node) probeTimeout() time.Duration { return min(n.cfg.RaftTimeout/2, 500*time.Millisecond) }
