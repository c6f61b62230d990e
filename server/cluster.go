package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// watchLeadership follows Raft's view of the leader. When this member
// becomes leader it gives every session a fresh deadline, as a new
// ZooKeeper leader does. Through a short election the member keeps its
// clients, serving reads and holding writes until a leader is known (see
// forwarder.client); when no leader has been known for three Raft timeouts
// (this member is cut off in a minority), it stops serving: its clients are
// disconnected, so that they move to members that can serve, and new
// connections are refused until a leader is known again.
func (s *Server) watchLeadership() {
	obs := make(chan raft.Observation, 16)
	observer := raft.NewObserver(obs, false, nil)
	s.raft.RegisterObserver(observer)
	defer s.raft.DeregisterObserver(observer)
	ticker := time.NewTicker(max(s.cfg.RaftTimeout/4, time.Millisecond))
	defer ticker.Stop()
	var leaderless time.Time
	for {
		select {
		case <-s.quit:
			return
		case <-obs:
		case <-ticker.C:
		}
		isLeader := s.raft.State() == raft.Leader
		if isLeader && !s.leading.Load() {
			s.onLeader()
		}
		s.leading.Store(isLeader) // only after onLeader: see expire
		if _, id := s.raft.LeaderWithID(); id != "" {
			leaderless = time.Time{}
			s.leaderKnown(true)
			s.setServing(true)
		} else if leaderless.IsZero() {
			leaderless = time.Now()
			s.leaderKnown(false)
		} else if time.Since(leaderless) > 3*s.cfg.RaftTimeout {
			s.setServing(false)
		}
	}
}

// setServing switches serving on or off; switching it off disconnects
// every client (their sessions live on in the cluster).
func (s *Server) setServing(on bool) {
	s.servingMu.Lock()
	if s.serving.Load() == on {
		s.servingMu.Unlock()
		return
	}
	s.serving.Store(on)
	if on {
		close(s.servingCh)
	} else {
		s.servingCh = make(chan struct{})
	}
	s.servingMu.Unlock()
	if on {
		s.log.Info("serving clients", "mode", s.mode())
		return
	}
	s.log.Warn("no leader: not serving clients until one is elected")
	s.closeConns("this member lost the leader")
}

// leaderKnown records whether Raft knows a leader, waking waitForLeader.
func (s *Server) leaderKnown(known bool) {
	s.servingMu.Lock()
	defer s.servingMu.Unlock()
	select {
	case <-s.leaderCh:
		if !known {
			s.leaderCh = make(chan struct{})
		}
	default:
		if known {
			close(s.leaderCh)
		}
	}
}

// waitForLeader waits up to d until a leader is known.
func (s *Server) waitForLeader(d time.Duration) bool { return s.waitClosed(&s.leaderCh, d, nil) }

// waitServing waits up to d for the member to serve.
func (s *Server) waitServing(d time.Duration) bool { return s.waitClosed(&s.servingCh, d, nil) }

// waitClosed waits up to d, or until done or shutdown, for the channel *ch
// (leaderCh or servingCh, which servingMu guards) to be closed.
func (s *Server) waitClosed(ch *chan struct{}, d time.Duration, done <-chan struct{}) bool {
	s.servingMu.Lock()
	c := *ch
	s.servingMu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c:
		return true
	case <-timer.C:
	case <-done:
	case <-s.quit:
	}
	return false
}

// closeConns closes every client connection, giving reason.
func (s *Server) closeConns(reason string) {
	for _, c := range s.allConns() {
		c.close(reason)
	}
}

func (s *Server) allConns() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// touchSession records a packet from a session: the leader extends its
// deadline, another member reports it to the leader with the next batch.
func (s *Server) touchSession(id int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.clustered() || s.isLeader() {
		s.tracker.Touch(id, now)
		return
	}
	s.touched[id] = struct{}{}
}

// reportTouches sends the sessions touched here to the leader twice a tick,
// as ZooKeeper's followers answer the leader's pings, after the zxid this
// member has applied; an empty batch still tells the leader this member is
// in touch.
func (s *Server) reportTouches() {
	ticker := time.NewTicker(s.cfg.TickTime / 2)
	defer ticker.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-ticker.C:
		}
		if s.isLeader() {
			continue
		}
		applied := uint64(s.fsm.LastZxid())
		s.mu.Lock()
		payload := make([]byte, 0, 8+8*len(s.touched))
		payload = binary.BigEndian.AppendUint64(payload, applied)
		for id := range s.touched {
			payload = binary.BigEndian.AppendUint64(payload, uint64(id))
		}
		clear(s.touched)
		s.mu.Unlock()
		if c, err := s.fwd.client(s.holdDeadline()); err == nil {
			c.send(fwdTouch, payload, nil)
		}
	}
}

// revalidateSession asks the leader whether a resuming session still lives,
// giving it a deadline counted from now with the new timeout. An error
// means the leader could not be asked, which says nothing of the session.
func (s *Server) revalidateSession(id int64, timeout time.Duration) (bool, error) {
	if !s.cfg.clustered() {
		return s.revalidate(id, timeout), nil
	}
	payload := binary.BigEndian.AppendUint64(nil, uint64(id))
	payload = binary.BigEndian.AppendUint32(payload, uint32(timeout.Milliseconds()))
	var alive bool
	err := s.askLeader(func(deadline time.Time) error {
		reply, err := s.fwd.call(fwdRevalidate, payload, deadline)
		alive = len(reply) == 1 && reply[0] == 1
		return err
	}, func() { alive = s.revalidate(id, timeout) })
	if err != nil {
		return false, fmt.Errorf("revalidate session %s with the leader: %w", hexID(id), err)
	}
	return alive, nil
}

// askLeader runs ask, which sends a request to the leader by the deadline it
// is given, or local when this member is the leader, for up to ten Raft
// timeouts in all: through an election, a request that failed because
// leadership was moving (leaderMoved) is asked again of whoever leads next,
// within the same deadline. Revalidations and sync barriers are safe to
// repeat.
func (s *Server) askLeader(ask func(deadline time.Time) error, local func()) error {
	deadline := s.holdDeadline()
	for {
		if s.isLeader() {
			local()
			return nil
		}
		err := ask(deadline)
		if err == nil || !leaderMoved(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(s.cfg.RaftTimeout / 10):
		case <-s.quit:
			return ErrServerClosed
		}
	}
}

// leaderMoved reports whether a request to the leader failed because
// leadership was moving: worth asking again of the next leader.
func leaderMoved(err error) bool {
	return errors.Is(err, errLeaderLost) || errors.Is(err, errIsLeader) || errors.Is(err, errNotLeaderThere)
}

// holdDeadline is how long, from now, a request waits through an election
// for a leader: ten Raft timeouts.
func (s *Server) holdDeadline() time.Time { return time.Now().Add(s.cfg.RaftTimeout * 10) }

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// syncBarrier brings this member up to date with the leader: it waits until
// everything the leader had applied when it received the barrier is applied
// here too. A standalone server is always up to date.
func (s *Server) syncBarrier(done <-chan struct{}) error {
	if !s.cfg.clustered() {
		return nil
	}
	var reply []byte
	var leaderErr error
	err := s.askLeader(func(deadline time.Time) (err error) {
		// The leader's barrier itself may take up to ten Raft timeouts.
		reply, err = s.fwd.call(fwdSync, nil, deadline.Add(s.cfg.RaftTimeout*10))
		return err
	}, func() { leaderErr = s.raft.Barrier(s.cfg.RaftTimeout * 10).Error() })
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
	return s.waitZxid(target, done, s.cfg.RaftTimeout*20)
}

// catchUp waits briefly for this cluster member to apply a zxid a client
// has seen: a client that moves from a member ahead of this one (after a
// failover, say) needs this member only to catch up, which takes
// milliseconds, rather than to be turned away. Any zxid a client has seen
// was committed, so in a healthy cluster the wait is short. A standalone
// server has nothing to catch up with and refuses at once, as ZooKeeper.
func (s *Server) catchUp(zxid int64, done <-chan struct{}) bool {
	if !s.cfg.clustered() {
		return false
	}
	return s.waitZxid(zxid, done, min(5*s.cfg.RaftTimeout, 2*time.Second)) == nil
}

// waitZxid waits until this member has applied zxid.
func (s *Server) waitZxid(zxid int64, done <-chan struct{}, timeout time.Duration) error {
	if s.fsm.LastZxid() >= zxid {
		return nil
	}
	ch := make(chan struct{})
	s.zmu.Lock()
	s.zwaiters = append(s.zwaiters, zxidWaiter{zxid: zxid, ch: ch})
	s.zcount.Store(int32(len(s.zwaiters)))
	s.zmu.Unlock()
	if s.fsm.LastZxid() >= zxid { // applied while registering
		s.releaseZxidWaiters(s.fsm.LastZxid())
	}
	var err error
	select {
	case <-ch:
		return nil
	case <-done:
		err = ErrServerClosed
	case <-s.quit:
		err = ErrServerClosed
	case <-time.After(timeout):
		err = fmt.Errorf("zxid %#x not applied here within %v", zxid, timeout)
	}
	s.dropZxidWaiter(ch) // so that applies stop looking at it
	return err
}

// dropZxidWaiter forgets a waiter that gave up, unless it was released.
func (s *Server) dropZxidWaiter(ch chan struct{}) {
	s.zmu.Lock()
	defer s.zmu.Unlock()
	s.zwaiters = slices.DeleteFunc(s.zwaiters, func(w zxidWaiter) bool { return w.ch == ch })
	s.zcount.Store(int32(len(s.zwaiters)))
}

type zxidWaiter struct {
	zxid int64
	ch   chan struct{}
}

// releaseZxidWaiters wakes the waiters for zxids up to applied.
func (s *Server) releaseZxidWaiters(applied int64) {
	s.zmu.Lock()
	defer s.zmu.Unlock()
	kept := s.zwaiters[:0]
	for _, w := range s.zwaiters {
		if w.zxid <= applied {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	s.zwaiters = kept
	s.zcount.Store(int32(len(kept)))
}
