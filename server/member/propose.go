package member

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// proposal is a command handed to Raft, watched for failure by waitFutures.
type proposal struct {
	future raft.ApplyFuture
	reqID  uint64
	start  time.Time
}

// Propose hands an encoded command to Raft: on the leader (or a standalone
// server) to its own Raft, on another member to the leader, in order. Its
// success shows when this member's state machine applies it; if Raft
// refuses or loses it, Host.ProposalFailed is told with reqID (unless 0).
func (n *Node) Propose(data []byte, reqID uint64) {
	if n.cfg.Clustered() && !n.IsLeader() {
		n.forward(fwdApply, data, reqID, func() { n.applyLocal(data, reqID) }, nil)
		return
	}
	n.applyLocal(data, reqID)
}

// ProposeAsLeader proposes what build returns (nothing if nil), on the
// leader only, once everything committed before is applied here: for a
// command the leader makes of its own accord, built from the state its
// predecessors left. It waits up to ten Raft timeouts; elsewhere, or if
// leadership moves meanwhile, it does nothing.
func (n *Node) ProposeAsLeader(build func() []byte) {
	if !n.IsLeader() || n.barrier(10*n.cfg.RaftTimeout).Error() != nil || !n.IsLeader() {
		return
	}
	if data := build(); data != nil {
		n.applyLocal(data, 0)
	}
}

// applyLocal hands a command to this member's Raft and its future to
// waitFutures, unless stopping has begun.
func (n *Node) applyLocal(data []byte, reqID uint64) {
	n.applyMu.RLock()
	defer n.applyMu.RUnlock()
	f, ok := n.raftApplyLocked(data)
	if !ok {
		n.failProposal(reqID, ErrClosed)
		return
	}
	n.futures <- proposal{future: f, reqID: reqID, start: time.Now()}
}

// raftApplyLocked proposes data to Raft and counts its future until it is
// answered (see stopProposing). The caller holds applyMu for reading.
func (n *Node) raftApplyLocked(data []byte) (raft.ApplyFuture, bool) {
	if n.applyClosed {
		return nil, false
	}
	n.unanswered.Add(1)
	n.stats.Proposals.Add(1)
	n.stats.ProposalSizes.Add(len(data))
	return n.raftNow().Apply(data, 0), true
}

// stopProposing ends proposing at shutdown and waits, while Raft still
// runs, until Raft has answered every future it was given. Raft answers
// each one while it runs, but futures still queued when it shuts down (with
// BatchApplyCh, which batching needs) are never answered, and whoever waits
// on them would wait for ever (hashicorp/raft#498).
func (n *Node) stopProposing() {
	n.applyMu.Lock()
	if n.applyClosed {
		n.applyMu.Unlock()
		return
	}
	n.applyClosed = true
	close(n.futures)
	n.applyMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for n.unanswered.Load() > 0 {
		if time.Now().After(deadline) {
			n.log.Error("raft left proposals unanswered at shutdown", "count", n.unanswered.Load())
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
// It sends typ (fwdApply or fwdPrepare), or runs local if leadership moved
// here meanwhile. A failure the leader answers goes to retry, if given,
// which reports whether it took the request over.
func (n *Node) forward(typ byte, data []byte, reqID uint64, local func(), retry func(error) bool) {
	c, err := n.fwd.client(n.holdDeadline())
	if errors.Is(err, errIsLeader) {
		local()
		return
	}
	if err == nil {
		err = c.send(typ, data, func(status byte, reply []byte) {
			if err := fwdError(status, reply); err != nil && (retry == nil || !retry(err)) {
				n.failProposal(reqID, err)
			}
		})
	}
	if err != nil {
		n.failProposal(reqID, err)
	}
}

func (n *Node) failProposal(reqID uint64, err error) {
	if reqID != 0 {
		n.host.ProposalFailed(reqID, err)
	}
}

// waitFutures watches proposals in order. A proposal Raft failed to commit
// (no longer leader, shut down) is reported to Host, which closes the
// client's connection: the client sees a connection loss, as with
// ZooKeeper. It runs until stopProposing closes the channel.
func (n *Node) waitFutures() {
	for p := range n.futures {
		err := p.future.Error()
		n.unanswered.Add(-1)
		if err != nil {
			n.failProposal(p.reqID, err)
		} else {
			n.stats.Commit.Add(time.Since(p.start).Milliseconds())
		}
	}
}
