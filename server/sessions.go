package server

import (
	"math"
	"strconv"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
)

func hexID(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// newSessionID returns a session id no other member hands out.
func (s *Server) newSessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.Next()
}

// Elected implements member.Host: it gives every replicated session a
// fresh deadline, as a new ZooKeeper leader does: liveness is only known to
// the member that led.
func (s *Server) Elected() {
	s.reconfig.pending.Store(false) // a reconfig an earlier term proposed has applied, or never will
	s.versionConfig()
	now := s.clock.Elapsed()
	sessions := s.fsm.Sessions()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range sessions {
		s.tracker.Add(sess.ID, time.Duration(sess.Timeout)*time.Millisecond, now)
	}
}

// touchSession records a packet from a session: the leader extends its
// deadline, another member reports it to the leader with the next batch.
func (s *Server) touchSession(id int64, now time.Duration) {
	if !s.node.IsLeader() {
		s.node.Touch(id)
		return
	}
	s.mu.Lock()
	s.tracker.Touch(id, now)
	s.mu.Unlock()
}

// TouchSessions implements member.Host: on the leader, it extends the
// sessions another member reports alive.
func (s *Server) TouchSessions(ids []int64) {
	now := s.clock.Elapsed()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.tracker.Touch(id, now)
	}
}

// closeConns closes every client connection, giving reason.
func (s *Server) closeConns(reason string) {
	for _, c := range s.allConns() {
		c.close(reason)
	}
}

// finishConns closes every client connection once what is queued for it
// has been written (replies to writes this member applied before it
// stopped serving).
func (s *Server) finishConns(reason string) {
	for _, c := range s.allConns() {
		c.log.Debug("finishing connection", "reason", reason)
		c.finish()
	}
}

// allConns returns the client connections.
func (s *Server) allConns() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// touch records a packet from session id, received at now. Deadlines fall
// on the tracker's tick boundaries (of the server's elapsed time), so it
// only reaches the tracker once per tick.
func (c *conn) touch(now time.Time) {
	c.stats.heard.Store(now.UnixNano())
	elapsed := c.srv.clock.Elapsed()
	tick := int64(elapsed / c.srv.cfg.TickTime)
	if tick == c.lastTick {
		return
	}
	c.lastTick = tick
	if c.readOnly.Load() {
		c.srv.ro.touch(c.session, now)
		return
	}
	c.srv.touchSession(c.session, elapsed)
}

// Revalidate implements member.Host: when a client resumes a session, it
// checks on the leader that the session is still alive, and gives it a
// deadline counted from now with the new timeout.
func (s *Server) Revalidate(id int64, timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tracker.Contains(id) {
		return false
	}
	s.tracker.Add(id, timeout, s.clock.Elapsed())
	return true
}

// expireSessions runs on every tick boundary and proposes closeSession for
// every session whose deadline has passed.
func (s *Server) expireSessions() {
	tick := s.cfg.TickTime
	timer := time.NewTimer(tick - s.clock.Elapsed()%tick)
	defer timer.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-timer.C:
			now := s.clock.Elapsed()
			timer.Reset(tick - now%tick)
			s.expire(now)
		}
	}
}

func (s *Server) expire(now time.Duration) {
	// Raft may call this member leader before Elected has reset the
	// deadlines, which a follower's tracker holds from the sessions'
	// creation: expiring then could end live sessions.
	if !s.node.Leading() {
		return
	}
	s.mu.Lock()
	expired := s.tracker.Expired(now)
	s.mu.Unlock()
	// Proposed first, logged after: formatting a thousand lines on this
	// goroutine held the later expiries back by as many milliseconds, and
	// the watchers of their ephemerals with them.
	lines := s.expiredLines(expired)
	for _, id := range expired {
		s.stats.expired.Add(1)
		s.propose(&raftfsm.Command{Type: raftfsm.TypeCloseSession, Session: id, Time: s.nowMillis()}, answer{})
	}
	s.logExpired(lines)
}

// ExpireSession expires a session now, as if its timeout had run out: its
// ephemerals are deleted and its connection is closed. It reports whether
// the session existed. Tests use it to provoke expiry with one call.
func (s *Server) ExpireSession(id int64) bool {
	if _, ok := s.fsm.Session(id); !ok {
		return false
	}
	s.logExpired(s.expiredLines([]int64{id}))
	s.mu.Lock()
	s.tracker.Remove(id)
	s.mu.Unlock()
	res := s.proposeWait(&raftfsm.Command{Type: raftfsm.TypeCloseSession, Session: id, Time: s.nowMillis()}, nil)
	return res != nil && res.Code == 0
}

// advanced runs when a test advances the server's clock (a clock.Advancer
// such as servertest's fake clock): on the leader, it expires the sessions
// and reaps the TTL nodes and containers that the new time makes due, and
// returns once each is applied here, so that the test finds them gone.
// Raft's own timing stays real: the clock moves what ZooKeeper times
// itself (sessions, TTLs, containers), and the leader proposes what is due.
func (s *Server) advanced() {
	select {
	case <-s.quit:
		return
	default:
	}
	if !s.node.Leading() {
		return
	}
	s.mu.Lock()
	expired := s.tracker.Expired(s.clock.Elapsed())
	s.mu.Unlock()
	s.logExpired(s.expiredLines(expired))
	for _, id := range expired {
		s.stats.expired.Add(1)
		s.proposeWait(&raftfsm.Command{Type: raftfsm.TypeCloseSession, Session: id, Time: s.nowMillis()}, nil)
	}
	// A reap can empty a container, due in the next pass; each pass must
	// make progress.
	for reaped := true; reaped; {
		reaped = false
		now := s.nowMillis()
		var paths []string
		s.fsm.Read(func(t *treeT) { paths = t.Reapable(now, math.MaxInt32) })
		for _, p := range paths {
			r := s.proposeWait(&raftfsm.Command{Type: raftfsm.TypeReap, Path: p, Time: now}, nil)
			reaped = reaped || r != nil && r.Code == 0
		}
	}
}

// reapContainers deletes empty containers and expired TTL nodes every
// ContainerCheckInterval, at most ContainerMaxPerMinute a minute.
func (s *Server) reapContainers() {
	interval := s.cfg.ContainerCheckInterval
	perRun := max(1, int(int64(s.cfg.ContainerMaxPerMinute)*int64(interval)/int64(time.Minute)))
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-ticker.C:
			if !s.node.Leading() {
				continue
			}
			now := s.nowMillis()
			var paths []string
			s.fsm.Read(func(t *treeT) { paths = t.Reapable(now, perRun) })
			for _, p := range paths {
				s.propose(&raftfsm.Command{Type: raftfsm.TypeReap, Path: p, Time: now}, answer{})
			}
		}
	}
}
