package server

import (
	"time"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/tree"
)

type treeT = tree.Tree

var _ raftfsm.BatchObserver = (*Server)(nil)

// Applied implements raftfsm.Observer. It runs inside the FSM's apply, under
// its write lock and in log order: it first queues the watch notifications
// the change fires on the watching connections, then completes this
// member's request. So every client receives an event before any later reply
// that shows the change, and before the writer's own reply.
func (s *Server) Applied(_ *tree.Tree, r *raftfsm.Result) {
	s.stats.commits.Add(1)
	if len(r.Triggers) > 0 {
		s.flushLater(s.watches.fire(r.Triggers, s.handoff))
	}
	cmd := r.Command
	if cmd.Type == raftfsm.TypeCreateSession && r.Code == 0 {
		s.mu.Lock()
		s.tracker.Add(cmd.Session, time.Duration(cmd.Timeout)*time.Millisecond, s.clock.Elapsed())
		s.mu.Unlock()
	}
	var members []member.Peer
	if cmd.Type == raftfsm.TypeReconfig {
		members = s.reconfigApplied(r)
	}
	if cmd.Origin == s.origin && cmd.ReqID != 0 {
		if a, ok := s.pending.take(cmd.ReqID); ok {
			a.run(r)
		}
	}
	if members != nil { // after the reply is queued
		s.node.SetServers(members)
	}
	s.node.Applied(int64(r.Index))
	s.changed.notify()
	s.observe.applied(r)
	// After the callback: a client's own closeSession gets its reply queued
	// before its connection is told to finish.
	if cmd.Type == raftfsm.TypeCloseSession && r.Code == 0 {
		s.sessionClosed(cmd.Session)
	}
}

// sessionClosed forgets a closed session and closes its connection here,
// once what is already queued for it has been written.
func (s *Server) sessionClosed(id int64) {
	s.mu.Lock()
	s.tracker.Remove(id)
	c := s.bySession[id]
	s.mu.Unlock()
	if c != nil {
		c.finish()
	}
}

// Restored implements raftfsm.Observer: the whole state was replaced by a
// snapshot. Sessions are reconciled off the apply path.
func (s *Server) Restored(t *tree.Tree) {
	if t.ConfigZxid() > 0 { // a reconfig made the configuration
		data, _, _ := t.Get(tree.ConfigPath, nil)
		if servers, _, err := member.ParseEnsemble(data); err == nil {
			s.node.SetServers(servers)
		}
	}
	s.goOwned("reconcile", s.reconcileSessions)
	s.changed.notify()
	s.observe.restored(s.fsm.LastZxid())
}

// reconcileSessions makes the tracker and the connections agree with the
// replicated sessions after a restore: every session gets a fresh deadline,
// and every connection is closed. A member restores while serving only
// when it fell too far behind the leader for the log to catch it up; the
// changes the snapshot skipped fired no watches here, so its clients must
// reconnect, as ZooKeeper's do when a learner resyncs, and send their
// watches again with the zxid they last saw (setWatches fires what they
// missed).
func (s *Server) reconcileSessions() {
	// Waiters for a zxid the snapshot covers are woken, as an apply would.
	s.node.Applied(s.fsm.LastZxid())
	sessions := s.fsm.Sessions()
	now := s.clock.Elapsed()
	s.mu.Lock()
	stale := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		stale = append(stale, c)
	}
	for _, sess := range sessions {
		s.tracker.Add(sess.ID, time.Duration(sess.Timeout)*time.Millisecond, now)
	}
	s.mu.Unlock()
	if len(stale) > 0 {
		s.log.Warn("state replaced by the leader's snapshot: closing client connections so that clients resend their watches", "connections", len(stale))
	}
	for _, c := range stale {
		c.close("state replaced by a snapshot")
	}
}
