package server

import (
	"sync"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/wire"
)

// answer completes one of this member's proposals once its FSM applies
// it: a client's write, held as its connection and request (a closure over
// them would be an allocation for every write), or any other callback.
type answer struct {
	c     *conn
	req   request
	cb    func(*raftfsm.Result)
	data  []byte // the command as proposed, to propose again (see ProposalFailed)
	tries int    // how many times it was proposed again
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

func (p *pendingTable) get(id uint64) (answer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.m[id]
	return a, ok
}

// retried counts one more proposal of id's command, if it is still pending.
func (p *pendingTable) retried(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.m[id]
	if ok {
		a.tries++
		p.m[id] = a
	}
	return ok
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
	if a.none() {
		return cmd.Encode()
	}
	// The id is taken before the command is encoded with it; the answer
	// keeps the encoding, which the table holds by then.
	s.pending.mu.Lock()
	s.pending.next++
	cmd.ReqID = s.pending.next
	a.data = cmd.Encode()
	s.pending.m[cmd.ReqID] = a
	s.pending.mu.Unlock()
	return a.data
}

// Awaited implements member.Host: whether a proposal's client still waits
// for it.
func (s *Server) Awaited(reqID uint64) bool { return s.pending.awaited(reqID) }

// ProposalFailed implements member.Host: a proposal Raft refused or lost.
// A short leader change fails no write the log keeps, nor one that no log
// took and can simply go to the next leader:
//   - a client's write that no log took is proposed again, through the
//     next leader, while it is its connection's only write in flight (so
//     that no later write of the session can pass it), up to
//     maxReproposals times;
//   - one that a leader appended and then lost office over, or that went
//     to a leader whose connection broke before it answered, may still
//     commit: it is settled (settleLater) and answered by its apply if it
//     committed.
//
// Otherwise its callback runs with nil: a client's connection is closed,
// as ZooKeeper closes it, and the client learns the outcome by reading.
func (s *Server) ProposalFailed(reqID uint64, err error) {
	switch {
	case member.NeverAppended(err) && s.reproposeAlone(reqID):
		return
	case member.MayHaveCommitted(err) && s.settleLater(reqID):
		return
	}
	if a, ok := s.pending.take(reqID); ok {
		s.log.Warn("proposal failed", "err", err)
		a.run(nil)
	}
}

// maxReproposals bounds how many times a write that no log took is
// proposed again (ProposalFailed): each waits for a leader first.
const maxReproposals = 3

// reproposeAlone proposes a client's write again if it is the only write
// its connection has in flight, and reports whether it did.
func (s *Server) reproposeAlone(reqID uint64) bool {
	a, ok := s.pending.get(reqID)
	// A reconfig is prepared by the leader it goes to (proposePrepared),
	// which retries it itself.
	if !ok || a.c == nil || a.req.op == wire.OpReconfig || a.tries >= maxReproposals || !a.c.onlyWrite() ||
		!s.pending.retried(reqID) {
		return false
	}
	// Not on the goroutine that reports the failure (Raft's, or the
	// forwarder's reader): Propose may wait for a leader.
	return s.goOwned("repropose", func() { s.node.Propose(a.data, reqID) })
}

// settleLater holds a proposal whose outcome is not known (ProposalFailed)
// until a barrier through the leader, a later one than the proposal's, is
// applied here: by then every entry the proposal's leader appended either
// committed, and the apply answered it, or never will (Raft's next leader
// commits only what its log holds before its barrier, and entries of a
// term always precede those of later terms). Meanwhile its connection
// proposes no further write (conn.submit), so the session's writes keep
// their order. It reports false if the proposal is answered already.
func (s *Server) settleLater(reqID uint64) bool {
	a, ok := s.pending.get(reqID)
	if !ok {
		return false
	}
	if a.c != nil {
		a.c.unsettled.Store(true)
	}
	s.settleMu.Lock()
	defer s.settleMu.Unlock()
	s.unsettled = append(s.unsettled, reqID)
	if !s.settling {
		s.settling = s.goOwned("settle", s.settle)
		return s.settling
	}
	return true
}

// settle syncs with the leader for the proposals settleLater holds, and
// fails those the sync did not see applied, until none is left.
func (s *Server) settle() {
	for {
		s.settleMu.Lock()
		ids := s.unsettled
		s.unsettled = nil
		if len(ids) == 0 {
			s.settling = false
			s.settleMu.Unlock()
			return
		}
		s.settleMu.Unlock()
		err := s.node.Sync(s.quit)
		for _, id := range ids {
			if a, ok := s.pending.take(id); ok {
				s.log.Warn("proposal not committed after a leader change", "err", err)
				a.run(nil)
			}
		}
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
