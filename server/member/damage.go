package member

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/server/raftstore"
)

// A damaged disk.
//
// raftstore opens a durable member's stores, keeps what reads whole and
// reports what it found (noteStores). What this member then does:
//   - every finding is logged once ("corruption detected", or "torn write")
//     and counted (Stats.Corruptions, Stats.TornWrites);
//   - a member that may have lost entries it acknowledged (Report.Damaged)
//     votes as a member that starts empty does (voteGuard): never for a
//     candidate whose log ends before a commit a leader has told it of, and
//     until it has heard of one, only for a candidate at least as complete
//     as every other voter. A committed entry it lost is held by some other
//     voter, so no leader without it is elected with this member's help.
//     The leader gives back what it lost (entries, or a snapshot), and the
//     member reports itself repaired once it has applied past both the
//     entries it lost and what the leader had committed when it joined
//     (Repairing, shown by /readyz);
//     Its acknowledgements from before the damage may still count at a
//     leader that ran throughout (hashicorp/raft never lowers a follower's
//     match index). In three members that commits nothing new: the leader
//     and one follower are a majority, so an entry was committed the moment
//     the follower acknowledged it. In larger clusters a commit counted with
//     the lost copy is held by one member fewer than a majority, and is safe
//     still because the damaged member does not help elect a leader that
//     lacks it: every majority that can elect without it meets a holder;
//   - a member whose term and vote record was lost takes no part in an
//     election (it neither votes nor stands) for any term it may have voted
//     in: until every voter has told it its current term, none; then none
//     up to the highest of them (surveyTerms, voteFloor);
//   - an entry read damaged (CheckedLog) reads as missing, so a leader
//     sends a snapshot instead; one that reaches the state machine damaged
//     is not applied, and the member stops serving until it restarts, when
//     raftstore finds and drops it (applyCheck).

// noteStores logs and counts what raftstore found, and keeps what the
// member must act on.
func (n *Node) noteStores(s *raftstore.Stores) {
	for _, f := range s.Report.Findings {
		n.noteFinding(f)
	}
	n.vote, n.sealedFrom = s.Vote, s.SealedFrom
	if s.Report.Damaged() {
		n.lostFrom, n.lostEnd = s.Report.LostFrom, logEnd{term: s.Report.LostEnd[0], index: s.Report.LostEnd[1]}
		n.repairing.Store(true)
		n.log.Warn("this member may have lost Raft log entries it acknowledged: it votes only for a candidate "+
			"that holds what the cluster committed, until the leader has sent them again", "lost_from", s.Report.LostFrom)
	}
}

// noteFinding logs and counts one finding.
func (n *Node) noteFinding(f raftstore.Finding) {
	f.Log(n.log)
	if f.Torn {
		n.stats.TornWrites.Add(1)
		return
	}
	n.stats.Corruptions.Add(1)
}

// Repairing reports whether this member is still getting back entries it
// lost to a damaged disk.
func (n *Node) Repairing() bool { return n.repairing.Load() }

// checkRepaired notes, as the state machine is handed the batch ending at
// index, whether a damaged member has got back what it lost.
func (n *Node) checkRepaired(index uint64) {
	if !n.repairing.Load() || !n.stats.joined.Load() {
		return
	}
	// What it lost that the cluster has committed: an idle cluster whose
	// log never reached the entries lost (uncommitted ones a new leader
	// replaced) does not keep it repairing.
	lost := n.lostFrom
	if n.trans != nil {
		lost = min(lost, n.trans.leaderCommit.Load())
	}
	if index < max(lost, n.stats.joinCommit.Load()) {
		return
	}
	if n.repairing.CompareAndSwap(true, false) {
		if g := n.guard(); g != nil {
			g.repairing.Store(false)
		}
		if err := n.vote.SetRepair(raftstore.Repair{}); err != nil {
			n.log.Error("record the repair done", "err", err)
		}
		n.log.Info("repaired: the entries this member lost are back from the leader", "lost_from", n.lostFrom, "applied", index)
	}
}

// errApplyDamaged is the error a member stops with when an entry reaches its
// state machine damaged.
var errApplyDamaged = errors.New("member: an entry reached the state machine damaged")

// applyCheck checks the entries of a batch before the state machine applies
// them, and reports false if one is damaged: it is not applied, nor is any
// entry after it (the state machine stops where it is, snapshots are
// refused), and the member stops serving until it restarts.
func (n *Node) applyCheck(logs []*raft.Log) bool {
	if n.applyBroken.Load() != nil {
		return false
	}
	for _, l := range logs {
		if raftstore.IntactFrom(l, n.sealedFrom) {
			continue
		}
		err := fmt.Errorf("%w: index %d", errApplyDamaged, l.Index)
		if n.applyBroken.CompareAndSwap(nil, &err) {
			n.noteFinding(raftstore.Finding{Index: l.Index, Offset: -1, What: "an entry reached the state machine damaged",
				Action: "not applied; the member stops serving until restarted, when the log is checked again"})
			n.goOwned("apply-broken", func() { n.logBroken() })
		}
		return false
	}
	return true
}

// storeFailed returns why this member's stores cannot go on: its log
// failed to write, or an entry reached its state machine damaged.
func (n *Node) storeFailed() error {
	if p := n.applyBroken.Load(); p != nil {
		return *p
	}
	if n.durableLog != nil {
		return n.durableLog.failed()
	}
	return nil
}

// surveyTerms asks every other voter its current term, once a Raft timeout,
// until all have answered, for a member whose term and vote record was
// lost: it may have voted in any term up to the highest of them (a
// candidate records its term before it asks for votes), and in none after,
// which then becomes its vote floor (kept in the record, so that a restart
// keeps it).
func (n *Node) surveyTerms(g *voteGuard) {
	for {
		if floor, ok := n.askTerms(); ok {
			if err := n.vote.SetVoteFloor(floor); err != nil {
				n.log.Error("record the term this member may have voted in", "err", err)
			} else {
				g.floor.Store(floor)
				n.log.Info("every voter told its term: this member votes again in terms past it", "term", floor)
				return
			}
		}
		select {
		case <-time.After(n.retryEvery()):
		case <-n.quit:
			return
		}
	}
}

// askTerms returns the highest current term among the other voters and
// this member's own log, and whether every voter answered.
func (n *Node) askTerms() (uint64, bool) {
	term, all, _ := n.askTermsAndLogs()
	return term, all
}

// askTermsAndLogs is askTerms, and whether any log, among the voters that
// answered and this member's own, holds more than the bootstrap
// configuration.
func (n *Node) askTermsAndLogs() (term uint64, all, entries bool) {
	own := n.logEnd()
	term, entries = own.term, own.index > bootstrapIndex
	if r := n.raftNow(); r != nil {
		term = max(term, r.CurrentTerm())
	}
	all = true
	n.askVoters(0, fwdLogEnd, nil, func(_ int, reply []byte, err error) {
		if err != nil || len(reply) < 24 { // an older zkraft does not say its term
			all = false
			return
		}
		entries = entries || readLogEnd(reply).index > bootstrapIndex
		term = max(term, binary.BigEndian.Uint64(reply[16:]))
	})
	return term, all, entries
}

// surveyFreshTerms settles the vote floor of a member that started with
// nothing stored. It cannot tell a new member from one whose data dir was
// wiped (or, in memory, that restarted), which may have voted in a term the
// others are still in: a second vote there can elect a second leader of
// that term, whose log overwrites what the first committed (found by
// zkchaos: a wiped former leader voted, in its own term, for a deposed
// leader that was paused meanwhile, and the entries of that term were
// lost). So it votes, and stands, only in terms past every voter's current
// term once all have told it; or at once if no voter that answered, nor
// itself, holds more than the bootstrap configuration: a new cluster, in
// which nothing can have been committed. The floor is kept in the term and
// vote record, so that a restart before the member has voted past it does
// not forget it.
//
// It makes one attempt; surveyLogs repeats it, the first before its first
// survey is in, so that a vote held until then finds the floor settled if
// it can be.
func (n *Node) surveyFreshTerms(g *voteGuard) {
	if !g.votesUnknown || g.floor.Load() != noFloor {
		return
	}
	term, all, entries := n.askTermsAndLogs()
	var floor uint64
	switch {
	case all:
		floor = term
	case entries:
		return // a running cluster, and a voter that may be in a later term did not answer
	}
	if n.vote != nil {
		if err := n.vote.SetVoteFloor(floor); err != nil {
			n.log.Error("record the term this member may have voted in", "err", err)
			return
		}
	}
	g.floor.Store(floor)
	if floor > 0 {
		n.log.Info("started with nothing stored: every voter told its term, and this member votes in terms past it", "term", floor)
	}
}

// voteLost reports whether this member's term and vote record was lost,
// and the highest term it may have voted in (math.MaxUint64 until every
// voter has told it its term).
func (n *Node) voteLost() (bool, uint64) {
	if n.vote == nil {
		return false, 0
	}
	return n.vote.VoteLost()
}

// damagedRead is told of an entry CheckedLog read damaged while the member
// runs: reported like any finding, and, if the member has applied it, the
// log is dropped up to it (after a snapshot), so that a leader does not send
// a follower that needs it a snapshot, then the damaged entry, for ever.
func (n *Node) damagedRead(f raftstore.Finding) {
	n.noteFinding(f)
	r := n.raftNow()
	if f.Index == 0 || r == nil || f.Index > r.AppliedIndex() || n.scrubber == nil {
		return
	}
	n.goOwned("repair-entry", func() {
		n.log.Info("a damaged entry the member applied", "index", f.Index, "action", n.dropUpTo(f.Index))
	})
}

// raiseMark raises the high-water mark (raftstore.VoteRecord.RaiseMark)
// to where the log store itself ends, on disk, once a second.
func (n *Node) raiseMark() {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-n.quit:
			return
		}
		if err := n.vote.RaiseMark(n.scrubber.log.LastIndex); err != nil && !n.stopping() {
			n.log.Warn("record how far the log is on disk", "err", err)
		}
	}
}

// noFloor is a vote floor that forbids every term.
const noFloor = math.MaxUint64

// guard returns a cluster member's vote guard, nil if it has none.
func (n *Node) guard() *voteGuard {
	if n.trans == nil {
		return nil
	}
	return n.trans.guard
}

// fetchEntry reads the entry at index from the leader, for a member that
// read its own copy damaged (raftstore.CheckedLog.Fetch): Raft stops the
// process when a read of an entry it must apply fails, so an entry damaged
// on disk since the start-up scan is got from the leader instead, as CTRL
// repairs a damaged record from its peers. The entry comes whole or not at
// all (its checksum is checked again by CheckedLog).
func (n *Node) fetchEntry(index uint64, l *raft.Log) error {
	r := n.raftNow()
	if r == nil {
		return ErrClosed
	}
	_, id := r.LeaderWithID()
	leader, err := strconv.Atoi(string(id))
	if err != nil || leader == n.cfg.ServerID {
		return errNoLeaderToAsk
	}
	reply, err := n.ask(leader, fwdGetLog, binary.BigEndian.AppendUint64(nil, index), 2*n.cfg.RaftTimeout)
	if err != nil {
		return fmt.Errorf("get entry %d from leader %d: %w", index, leader, err)
	}
	return decodeEntry(reply, l)
}

var errNoLeaderToAsk = errors.New("member: no other member leads, to get an entry from")

// answerGetLog answers a member's fetchEntry: the entry as this member's
// log holds it, checked.
func (n *Node) answerGetLog(typ byte, id uint64, payload []byte) fwdReply {
	if len(payload) < 8 || n.raftLog == nil {
		return fwdReply{typ: typ, id: id, err: errors.New("no such entry here")}
	}
	var l raft.Log
	if err := n.raftLog.GetLog(binary.BigEndian.Uint64(payload), &l); err != nil {
		return fwdReply{typ: typ, id: id, err: err}
	}
	return fwdReply{typ: typ, id: id, value: encodeEntry(nil, &l)}
}

// encodeEntry appends l: index, term, type, then data and extensions, each
// after its length.
func encodeEntry(dst []byte, l *raft.Log) []byte {
	dst = binary.BigEndian.AppendUint64(dst, l.Index)
	dst = binary.BigEndian.AppendUint64(dst, l.Term)
	dst = append(dst, byte(l.Type))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(l.Extensions)))
	return append(dst, l.Extensions...)
}

// decodeEntry reads what encodeEntry wrote.
func decodeEntry(b []byte, l *raft.Log) error {
	bad := errors.New("member: a malformed entry")
	if len(b) < 21 {
		return bad
	}
	l.Index, l.Term, l.Type = binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), raft.LogType(b[16])
	n := uint64(binary.BigEndian.Uint32(b[17:]))
	b = b[21:]
	if uint64(len(b)) < n+4 {
		return bad
	}
	l.Data, b = slices.Clone(b[:n]), b[n:]
	m := uint64(binary.BigEndian.Uint32(b))
	if uint64(len(b)-4) != m {
		return bad
	}
	l.Extensions = slices.Clone(b[4:])
	return nil
}
