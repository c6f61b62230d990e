package server

import (
	"sync"

	"github.com/zkraft/zkraft/raftfsm"
)

// answer completes one of this member's proposals once its FSM applies
// it: a client's write, held as its connection and request (a closure over
// them would be an allocation for every write), or any other callback.
type answer struct {
	c   *conn
	req request
	cb  func(*raftfsm.Result)
}

// callback is the answer that runs cb; nil cb: no answer.
func callback(cb func(*raftfsm.Result)) answer { return answer{cb: cb} }

func (a answer) none() bool { return a.c == nil && a.cb == nil }

// run completes the proposal with its result, nil if it failed.
func (a answer) run(r *raftfsm.Result) {
	if a.cb != nil {
		a.cb(r)
		return
	}
	a.c.writeApplied(a.req, r)
}

// pendingTable holds the answers of this member's proposals, keyed by the
// request id carried in the command, until the local FSM applies them.
type pendingTable struct {
	mu   sync.Mutex // guards m, next
	m    map[uint64]answer
	next uint64
}

func (p *pendingTable) init() { p.m = make(map[uint64]answer) }

func (p *pendingTable) add(a answer) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.m[p.next] = a
	return p.next
}

// awaited reports whether the answer for id is still pending and its
// connection, if it has one, still open.
func (p *pendingTable) awaited(id uint64) bool {
	p.mu.Lock()
	a, ok := p.m[id]
	p.mu.Unlock()
	if !ok || a.c == nil {
		return ok
	}
	select {
	case <-a.c.done:
		return false
	default:
		return true
	}
}

func (p *pendingTable) take(id uint64) (answer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.m[id]
	delete(p.m, id)
	return a, ok
}

// propose hands cmd to Raft. a runs when this member's FSM applies it
// (inside the apply, in log order), or with nil if Raft refuses or loses it.
// a must not block.
func (s *Server) propose(cmd *raftfsm.Command, a answer) {
	s.node.Propose(s.stamp(cmd, a), cmd.ReqID)
}

// proposePrepared is propose for a command the leader decides (a
// reconfig: see reconfig.go).
func (s *Server) proposePrepared(cmd *raftfsm.Command, a answer) {
	s.node.ProposePrepared(s.stamp(cmd, a), cmd.ReqID)
}

// stamp gives cmd this member's origin and a request id for a, and
// encodes it.
func (s *Server) stamp(cmd *raftfsm.Command, a answer) []byte {
	cmd.Origin = s.origin
	cmd.ReqID = 0
	if !a.none() {
		cmd.ReqID = s.pending.add(a)
	}
	return cmd.Encode()
}

// Awaited implements member.Host: whether a proposal's client still waits
// for it.
func (s *Server) Awaited(reqID uint64) bool { return s.pending.awaited(reqID) }

// ProposalFailed implements member.Host: a proposal's callback runs with
// nil, since it was not committed (or may not have been).
func (s *Server) ProposalFailed(reqID uint64, err error) {
	if a, ok := s.pending.take(reqID); ok {
		s.log.Warn("proposal failed", "err", err)
		a.run(nil)
	}
}

// proposeWait proposes cmd and waits for its result; nil if it failed, or if
// done or the server closed first.
func (s *Server) proposeWait(cmd *raftfsm.Command, done <-chan struct{}) *raftfsm.Result {
	ch := make(chan *raftfsm.Result, 1)
	s.propose(cmd, callback(func(r *raftfsm.Result) { ch <- r }))
	select {
	case r := <-ch:
		return r
	case <-done:
	case <-s.quit:
	}
	return nil
}

// nowMillis is the proposer's wall clock for commands.
func (s *Server) nowMillis() int64 { return s.clock.Now().UnixMilli() }
