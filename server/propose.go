package server

import (
	"sync"

	"github.com/zkraft/zkraft/raftfsm"
)

// pendingTable holds the callbacks of this member's proposals, keyed by the
// request id carried in the command, until the local FSM applies them.
type pendingTable struct {
	mu   sync.Mutex // guards m, next
	m    map[uint64]func(*raftfsm.Result)
	next uint64
}

func (p *pendingTable) init() { p.m = make(map[uint64]func(*raftfsm.Result)) }

func (p *pendingTable) add(cb func(*raftfsm.Result)) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.m[p.next] = cb
	return p.next
}

func (p *pendingTable) take(id uint64) func(*raftfsm.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cb := p.m[id]
	delete(p.m, id)
	return cb
}

// propose hands cmd to Raft. cb runs when this member's FSM applies it
// (inside the apply, in log order), or with nil if Raft refuses or loses it.
// cb must not block.
func (s *Server) propose(cmd *raftfsm.Command, cb func(*raftfsm.Result)) {
	s.node.Propose(s.stamp(cmd, cb), cmd.ReqID)
}

// proposePrepared is propose for a command the leader decides (a
// reconfig: see reconfig.go).
func (s *Server) proposePrepared(cmd *raftfsm.Command, cb func(*raftfsm.Result)) {
	s.node.ProposePrepared(s.stamp(cmd, cb), cmd.ReqID)
}

// stamp gives cmd this member's origin and a request id for cb, and
// encodes it.
func (s *Server) stamp(cmd *raftfsm.Command, cb func(*raftfsm.Result)) []byte {
	cmd.Origin = s.origin
	cmd.ReqID = 0
	if cb != nil {
		cmd.ReqID = s.pending.add(cb)
	}
	return cmd.Encode()
}

// ProposalFailed implements member.Host: a proposal's callback runs with
// nil, since it was not committed (or may not have been).
func (s *Server) ProposalFailed(reqID uint64, err error) {
	if cb := s.pending.take(reqID); cb != nil {
		s.log.Warn("proposal failed", "err", err)
		cb(nil)
	}
}

// proposeWait proposes cmd and waits for its result; nil if it failed, or if
// done or the server closed first.
func (s *Server) proposeWait(cmd *raftfsm.Command, done <-chan struct{}) *raftfsm.Result {
	ch := make(chan *raftfsm.Result, 1)
	s.propose(cmd, func(r *raftfsm.Result) { ch <- r })
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
