package server

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"

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

// proposal is a command handed to Raft, watched for failure by waitFutures.
type proposal struct {
	future raft.ApplyFuture
	reqID  uint64
}

// propose hands cmd to Raft. cb runs when this member's FSM applies it
// (inside the apply, in log order), or with nil if Raft refuses or loses it.
// cb must not block.
func (s *Server) propose(cmd *raftfsm.Command, cb func(*raftfsm.Result)) {
	cmd.Origin = s.origin
	cmd.ReqID = 0
	if cb != nil {
		cmd.ReqID = s.pending.add(cb)
	}
	data := cmd.Encode()
	if s.cfg.clustered() && !s.isLeader() {
		s.forward(data, cmd.ReqID)
		return
	}
	s.applyLocal(data, cmd.ReqID)
}

// applyLocal hands a command to this member's Raft and its future to
// waitFutures, unless shutdown has begun.
func (s *Server) applyLocal(data []byte, reqID uint64) {
	s.applyMu.RLock()
	defer s.applyMu.RUnlock()
	f, ok := s.raftApplyLocked(data)
	if !ok {
		s.failProposal(reqID, ErrServerClosed)
		return
	}
	s.futures <- proposal{future: f, reqID: reqID}
}

// raftApplyLocked proposes data to Raft and counts its future until it is
// answered (see stopProposing). The caller holds applyMu for reading.
func (s *Server) raftApplyLocked(data []byte) (raft.ApplyFuture, bool) {
	if s.applyClosed {
		return nil, false
	}
	s.unanswered.Add(1)
	return s.raft.Apply(data, 0), true
}

// stopProposing ends proposing at shutdown and waits, while Raft still
// runs, until Raft has answered every future it was given. Raft answers
// each one while it runs, but futures still queued when it shuts down (with
// BatchApplyCh, which batching needs) are never answered, and whoever waits
// on them would wait for ever (hashicorp/raft#498).
func (s *Server) stopProposing() {
	s.applyMu.Lock()
	if s.applyClosed {
		s.applyMu.Unlock()
		return
	}
	s.applyClosed = true
	close(s.futures)
	s.applyMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for s.unanswered.Load() > 0 {
		if time.Now().After(deadline) {
			s.log.Error("raft left proposals unanswered at shutdown", "count", s.unanswered.Load())
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// forward sends a command to the leader to propose. Its reply only matters
// when it failed: success shows as the command's apply here. A write whose
// leader went before answering may or may not have been committed, and
// fails like any other: the client's connection is closed, as ZooKeeper's
// is, and the client learns the outcome by reading. (Settling such writes
// through the next leader, a barrier and then forwarding again what cannot
// have been committed, would keep clients connected through a failover,
// but must keep each session's writes in order across the writes being
// settled and those arriving meanwhile; it is not done.)
func (s *Server) forward(data []byte, reqID uint64) {
	c, err := s.fwd.client(s.holdDeadline())
	if errors.Is(err, errIsLeader) { // leadership moved here meanwhile
		s.applyLocal(data, reqID)
		return
	}
	if err == nil {
		err = c.send(fwdApply, data, func(status byte, reply []byte) {
			if err := fwdError(status, reply); err != nil {
				s.failProposal(reqID, err)
			}
		})
	}
	if err != nil {
		s.failProposal(reqID, err)
	}
}

// failProposal runs a proposal's callback with nil: it was not committed.
func (s *Server) failProposal(reqID uint64, err error) {
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

// waitFutures watches proposals in order. A proposal Raft failed to commit
// (no longer leader, shut down) gets its callback with nil, which closes the
// client's connection: the client sees a connection loss, as with ZooKeeper.
// It runs until stopProposing closes the channel.
func (s *Server) waitFutures() {
	for p := range s.futures {
		err := p.future.Error()
		s.unanswered.Add(-1)
		if err != nil && p.reqID != 0 {
			s.failProposal(p.reqID, err)
		}
	}
}

// nowMillis is the proposer's clock for commands.
func nowMillis() int64 { return time.Now().UnixMilli() }
