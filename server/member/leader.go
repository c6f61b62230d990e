package member

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// watchLeadership follows Raft's view of the leader. When this member
// becomes leader it has Host give every session a fresh deadline, as a new
// ZooKeeper leader does. Through a short election the member keeps its
// clients, serving reads and holding writes until a leader is known (see
// forwarder.client); when no leader has been known for syncLimit ticks
// (this member is cut off in a minority, or the others are gone), it stops
// serving, as a ZooKeeper member out of touch that long goes LOOKING: its
// clients are disconnected, so that they move to members that can serve,
// and new connections are refused until a leader is known again.
func (n *Node) watchLeadership() {
	obs := make(chan raft.Observation, 16)
	observer := raft.NewObserver(obs, false, nil)
	n.raftNow().RegisterObserver(observer)
	defer n.raftNow().DeregisterObserver(observer)
	// Often enough to see a leader change soon, and quorum loss within a
	// tick of its time.
	ticker := time.NewTicker(max(min(n.cfg.RaftTimeout/4, n.cfg.TickTime), time.Millisecond))
	defer ticker.Stop()
	var leaderless time.Time
	electing := time.Now() // a member starts without a leader
	var last raft.ServerID
	for {
		select {
		case <-n.quit:
			return
		case <-obs:
		case <-ticker.C:
		case <-n.leaderFoundGone:
		case <-n.caughtUpCh:
		}
		isLeader := n.raftNow().State() == raft.Leader
		if isLeader && !n.leading.Load() {
			n.stats.leaderSince.Store(time.Now().UnixNano())
			n.host.Elected()
			n.reconcileMembers() // finish a reconfig an earlier leader began
		}
		n.leading.Store(isLeader) // only after Elected: see Leading
		_, id := n.raftNow().LeaderWithID()
		if id != last {
			n.logLeader(last, id)
			last = id
			n.leaderChanged()
		}
		n.checkPresent(isLeader)
		if n.logBroken() {
			continue
		}
		known, goneSince := n.knownLeader()
		if known != "" {
			if !electing.IsZero() {
				n.stats.Election.Add(time.Since(electing).Milliseconds())
				electing = time.Time{}
			}
			n.markJoined()
			n.checkRepaired(n.raftNow().AppliedIndex())
			leaderless = time.Time{}
			n.leaderlessAt.Store(0)
			n.leaderKnown(true)
			if n.serving.Load() || n.caughtUp() {
				n.setServing(true, "")
			}
			continue
		}
		if leaderless.IsZero() {
			// A member catching up when its leader went must catch up
			// again with the next: what it caught up to may be old by then.
			n.offGen.Add(1)
			leaderless = time.Now()
			n.leaderlessAt.Store(leaderless.UnixNano())
			if !goneSince.IsZero() {
				leaderless = goneSince
			}
			if n.stats.joined.Load() { // a leader was lost, not awaited at start
				electing = leaderless
				n.stats.Looking.Add(1)
			}
			n.leaderKnown(false)
		}
		if time.Since(leaderless) > n.quorumLossTimeout() {
			n.setServing(false, "no leader: not serving clients until one is elected")
		}
	}
}

// caughtUp reports whether this member has caught up with its leader
// since it last stopped serving (or started), and if not starts doing so:
// it may serve only then, as a ZooKeeper follower serves once its leader
// has synced it. Otherwise, once it knew a leader, it would serve what its
// state machine held: after a restart, the tree as at its newest snapshot,
// since Raft applies what the log holds past it only once the new term's
// first entry commits; after a long partition, the tree as it was then.
// A client that saw a later state on another member is held back by the
// zxid it gives (CatchUp), but a new one was not.
func (n *Node) caughtUp() bool {
	gen := n.offGen.Load()
	if n.syncedGen.Load() == gen+1 {
		return true
	}
	if !n.syncing.CompareAndSwap(false, true) {
		return false
	}
	if !n.goOwned("catch-up", func() {
		defer n.syncing.Store(false)
		if err := n.Sync(n.quit); err != nil {
			level := slog.LevelDebug
			if n.syncFailedGen.Swap(gen+1) != gen+1 { // once each time it is not serving
				level = slog.LevelInfo
			}
			n.log.Log(context.Background(), level, "not serving yet: catching up with the leader failed; trying again", "err", err)
			return // tried again at the next look (watchLeadership)
		}
		n.syncedGen.Store(gen + 1)
		select {
		case n.caughtUpCh <- struct{}{}:
		default:
		}
	}) {
		n.syncing.Store(false)
	}
	return false
}

// logBroken reports whether this member's log failed to write, and if so
// stops serving clients: a cluster member's state machine waits for ever
// for the entries the log did not write (unless a leader says they are
// committed), and its clients' writes with it, so they must go to another
// member; a standalone server writes nothing more (latchedLog). ZooKeeper
// exits on such a failure.
func (n *Node) logBroken() bool {
	err := n.storeFailed()
	if err == nil {
		return false
	}
	what := "the Raft log failed to write"
	if errors.Is(err, errApplyDamaged) {
		what = "an entry reached the state machine damaged"
	}
	if n.logFailReported.CompareAndSwap(false, true) {
		n.log.Error(what+": not serving clients until restarted", "err", err)
	}
	n.setServing(false, "not serving clients: "+what)
	return true
}

// quorumLossTimeout is how long a member goes without a leader before it
// stops serving: syncLimit ticks.
func (n *Node) quorumLossTimeout() time.Duration {
	return time.Duration(max(n.cfg.SyncLimit, 1)) * n.cfg.TickTime
}

// setServing switches serving on or off, for the reason given when off;
// switching it off disconnects every client (their sessions live on in the
// cluster).
func (n *Node) setServing(on bool, why string) {
	n.servingMu.Lock()
	if n.serving.Load() == on {
		n.servingMu.Unlock()
		return
	}
	n.serving.Store(on)
	if on {
		n.served.Store(true)
		close(n.servingCh)
		if off := n.stats.notServingSince; !off.IsZero() {
			n.stats.Unavailable.Add(time.Since(off).Milliseconds())
		}
	} else {
		n.servingCh = make(chan struct{})
		n.stats.notServingSince = time.Now()
		n.offAt.Store(n.stats.notServingSince.UnixNano())
		n.offGen.Add(1) // it must catch up again before it serves (caughtUp)
	}
	n.servingMu.Unlock()
	if on {
		n.log.Info("serving clients", "mode", n.Mode())
	} else {
		n.log.Warn(why)
	}
	n.host.ServingChanged(on)
}

// leaderKnown records whether Raft knows a leader, waking waitForLeader.
func (n *Node) leaderKnown(known bool) {
	n.servingMu.Lock()
	defer n.servingMu.Unlock()
	select {
	case <-n.leaderCh:
		if !known {
			n.leaderCh = make(chan struct{})
		}
	default:
		if known {
			close(n.leaderCh)
		}
	}
}

// leaderChanged wakes those waiting for Raft to name another leader.
func (n *Node) leaderChanged() {
	n.servingMu.Lock()
	defer n.servingMu.Unlock()
	close(n.changedCh)
	n.changedCh = make(chan struct{})
}

// leaderChanges returns a channel closed when Raft next names another
// leader (or none).
func (n *Node) leaderChanges() <-chan struct{} {
	n.servingMu.Lock()
	defer n.servingMu.Unlock()
	return n.changedCh
}

// waitForLeader waits up to d until a leader is known.
func (n *Node) waitForLeader(d time.Duration) bool { return n.waitClosed(&n.leaderCh, d, nil) }

// waitClosed waits up to d, or until done or shutdown, for the channel *ch
// (leaderCh, servingCh or changedCh, which servingMu guards) to be closed.
func (n *Node) waitClosed(ch *chan struct{}, d time.Duration, done <-chan struct{}) bool {
	n.servingMu.Lock()
	c := *ch
	n.servingMu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c:
		return true
	case <-timer.C:
	case <-done:
	case <-n.quit:
	}
	return false
}

// Touch notes a packet from a session on a member that does not lead; the
// next report tells the leader (see reportTouches).
func (n *Node) Touch(id int64) {
	n.mu.Lock()
	n.touched[id] = struct{}{}
	n.mu.Unlock()
}

// reportTouches sends the sessions touched here to the leader twice a tick,
// as ZooKeeper's followers answer the leader's pings, after the zxid this
// member has applied; an empty batch still tells the leader this member is
// in touch. A new leader hears from it at once (a reconfig asks which
// members are in touch).
func (n *Node) reportTouches() {
	ticker := time.NewTicker(n.cfg.TickTime / 2)
	defer ticker.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-ticker.C:
		case <-n.leaderChanges():
		}
		if n.IsLeader() {
			continue
		}
		applied := uint64(n.fsm.LastZxid())
		n.mu.Lock()
		payload := make([]byte, 0, 8+8*len(n.touched))
		payload = binary.BigEndian.AppendUint64(payload, applied)
		for id := range n.touched {
			payload = binary.BigEndian.AppendUint64(payload, uint64(id))
		}
		clear(n.touched)
		n.mu.Unlock()
		if c, err := n.fwd.client(n.holdDeadline()); err == nil {
			c.send(fwdTouch, payload, nil)
			if d := n.digestToSend(); d != nil {
				c.send(fwdDigest, d, nil)
			}
			if p := n.presenceToSend(); p != nil {
				c.send(fwdPresence, p, nil)
			}
		}
	}
}

// Revalidate asks the leader whether a resuming session still lives,
// giving it a deadline counted from now with the new timeout. An error
// means the leader could not be asked, which says nothing of the session.
func (n *Node) Revalidate(id int64, timeout time.Duration) (bool, error) {
	if !n.cfg.Clustered() {
		return n.host.Revalidate(id, timeout), nil
	}
	payload := binary.BigEndian.AppendUint64(nil, uint64(id))
	payload = binary.BigEndian.AppendUint32(payload, uint32(timeout.Milliseconds()))
	var alive bool
	err := n.askLeader(func(deadline time.Time) error {
		reply, err := n.fwd.call(fwdRevalidate, payload, deadline)
		alive = len(reply) == 1 && reply[0] == 1
		return err
	}, func() { alive = n.host.Revalidate(id, timeout) })
	if err != nil {
		return false, fmt.Errorf("revalidate session %#x with the leader: %w", uint64(id), err)
	}
	return alive, nil
}

// askLeader runs ask, which sends a request to the leader by the deadline it
// is given, or local when this member is the leader, for up to ten Raft
// timeouts in all: through an election, a request that failed because
// leadership was moving (leaderMoved) is asked again of whoever leads next,
// within the same deadline. Revalidations and sync barriers are safe to
// repeat.
func (n *Node) askLeader(ask func(deadline time.Time) error, local func()) error {
	deadline := n.holdDeadline()
	for {
		if n.IsLeader() {
			local()
			return nil
		}
		changed := n.leaderChanges()
		err := ask(deadline)
		if err == nil || !leaderMoved(err) || time.Now().After(deadline) {
			return err
		}
		if !n.awaitLeaderMove(changed) {
			return ErrClosed
		}
	}
}

// awaitLeaderMove waits, after a request found leadership moving, for Raft
// to name another leader (changed, taken before the request was sent), or
// a tenth of a Raft timeout (at most 100ms); it reports false if the node
// stops first.
func (n *Node) awaitLeaderMove(changed <-chan struct{}) bool {
	select {
	case <-changed:
	case <-time.After(min(n.cfg.RaftTimeout/10, 100*time.Millisecond)):
	case <-n.quit:
		return false
	}
	return true
}

// leaderMoved reports whether a request to the leader failed because
// leadership was moving: worth asking again of the next leader.
func leaderMoved(err error) bool {
	return errors.Is(err, errLeaderLost) || errors.Is(err, errIsLeader) || errors.Is(err, errNotLeaderThere) ||
		errors.Is(err, errNotSent)
}

// retryEvery is how long a member waits before it tries again what failed
// for want of a peer or a leader: a Raft timeout, at most a second.
func (n *Node) retryEvery() time.Duration { return min(n.cfg.RaftTimeout, time.Second) }

// holdDeadline is how long, from now, a request waits through an election
// for a leader: ten Raft timeouts.
func (n *Node) holdDeadline() time.Time { return time.Now().Add(n.cfg.RaftTimeout * 10) }

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Sync brings this member up to date with the leader: it waits until
// everything the leader had applied when it received the barrier is applied
// here too. A standalone server is always up to date.
func (n *Node) Sync(done <-chan struct{}) error {
	if !n.cfg.Clustered() {
		return nil
	}
	var reply []byte
	var leaderErr error
	err := n.askLeader(func(deadline time.Time) (err error) {
		// The leader's barrier itself may take up to ten Raft timeouts.
		reply, err = n.fwd.call(fwdSync, nil, deadline.Add(n.cfg.RaftTimeout*10))
		return err
	}, func() { leaderErr = n.barrier(n.cfg.RaftTimeout * 10).Error() })
	switch {
	case err != nil:
		return fmt.Errorf("sync with the leader: %w", err)
	case leaderErr != nil:
		return fmt.Errorf("sync barrier: %w", leaderErr)
	case reply == nil:
		return nil // this member leads: the barrier is applied here
	case len(reply) != 8:
		return errors.New("sync with the leader: malformed reply")
	}
	target := int64(binary.BigEndian.Uint64(reply))
	return n.waitZxid(target, done, n.cfg.RaftTimeout*20)
}

// CatchUp waits briefly for this cluster member to apply a zxid a client
// has seen: a client that moves from a member ahead of this one (after a
// failover, say) needs this member only to catch up, which takes
// milliseconds, rather than to be turned away. Any zxid a client has seen
// was committed, so in a healthy cluster the wait is short. A standalone
// server has nothing to catch up with and refuses at once, as ZooKeeper.
func (n *Node) CatchUp(zxid int64, done <-chan struct{}) bool {
	if !n.cfg.Clustered() {
		return false
	}
	return n.waitZxid(zxid, done, min(5*n.cfg.RaftTimeout, 2*time.Second)) == nil
}

// Current waits, briefly, until this member (if it does not lead) has
// applied the writes that reached it before the read did: those a commit
// notice named (see transport.go), and the commands it has stored, which
// the leader commits within a round trip. So a client that heard of a write
// through another member and then reads here sees it, as with ZooKeeper,
// whose leader sends COMMIT before it answers, and a read never shows less
// than a ZooKeeper follower's would. The wait is for entries already here,
// so it is short; it gives up after a few milliseconds (an entry that is
// not committed, or that a new leader replaced) and never waits for that
// entry again. It costs a few atomic loads when nothing is pending.
func (n *Node) Current(done <-chan struct{}) {
	t := n.trans
	if t == nil {
		return
	}
	want := max(t.noticed.Load(), t.storedCommand.Load())
	if uint64(n.fsm.LastZxid()) >= want || want <= t.settled.Load() || n.IsLeader() {
		return
	}
	if err := n.waitZxid(int64(want), done, min(n.cfg.RaftTimeout, 5*time.Millisecond)); err != nil {
		raiseTo(&t.settled, want)
		n.log.Debug("read without waiting for a write stored here", "err", err)
	}
}

// waitZxid waits until this member has applied zxid.
func (n *Node) waitZxid(zxid int64, done <-chan struct{}, timeout time.Duration) error {
	if n.fsm.LastZxid() >= zxid {
		return nil
	}
	ch := make(chan struct{})
	n.zmu.Lock()
	n.zwaiters = append(n.zwaiters, zxidWaiter{zxid: zxid, ch: ch})
	n.zcount.Store(int32(len(n.zwaiters)))
	n.zmu.Unlock()
	if n.fsm.LastZxid() >= zxid { // applied while registering
		n.Applied(n.fsm.LastZxid())
	}
	var err error
	select {
	case <-ch:
		return nil
	case <-done:
		err = ErrClosed
	case <-n.quit:
		err = ErrClosed
	case <-time.After(timeout):
		err = fmt.Errorf("zxid %#x not applied here within %v", zxid, timeout)
	}
	n.dropZxidWaiter(ch) // so that applies stop looking at it
	return err
}

// dropZxidWaiter forgets a waiter that gave up, unless it was released.
func (n *Node) dropZxidWaiter(ch chan struct{}) {
	n.zmu.Lock()
	defer n.zmu.Unlock()
	n.zwaiters = slices.DeleteFunc(n.zwaiters, func(w zxidWaiter) bool { return w.ch == ch })
	n.zcount.Store(int32(len(n.zwaiters)))
}

type zxidWaiter struct {
	zxid int64
	ch   chan struct{}
}

// Applied tells the node that the state machine has applied everything up
// to zxid (an apply, or a restored snapshot): it wakes Sync and CatchUp
// waiters. It costs one atomic load when no one waits.
func (n *Node) Applied(zxid int64) {
	if n.zcount.Load() == 0 {
		return
	}
	n.zmu.Lock()
	defer n.zmu.Unlock()
	kept := n.zwaiters[:0]
	for _, w := range n.zwaiters {
		if w.zxid <= zxid {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	n.zwaiters = kept
	n.zcount.Store(int32(len(kept)))
}
