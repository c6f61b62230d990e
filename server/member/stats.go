package member

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/internal/summary"
)

// Stats are the member's own figures, as mntr and /metrics report them:
// times in milliseconds, sizes in bytes. Recording one costs a few atomic
// adds.
type Stats struct {
	// Fsync is the time each append to a durable Raft log took, its fsync
	// included (zk_fsynctime); nothing is recorded in memory.
	Fsync summary.Summary
	// Snapshot is the time each snapshot took to write (zk_snapshottime).
	Snapshot summary.Summary
	// Election is the time from losing a leader (or starting) to knowing
	// one again (zk_election_time).
	Election summary.Summary
	// DBInit is the time Raft took to start, restoring the newest snapshot
	// (zk_dbinittime): one sample per start.
	DBInit summary.Summary
	// Unavailable is the time from not serving clients (or starting) to
	// serving them again (zk_unavailable_time).
	Unavailable summary.Summary
	// Commit is the time from handing a command to this member's Raft, as
	// leader, until it was committed and applied.
	Commit summary.Summary
	// ProposalSizes are the sizes of the commands this member proposed as
	// leader (zk_last/min/max_proposal_size).
	ProposalSizes summary.Sizes
	// Proposals counts the commands this member proposed as leader
	// (zk_proposal_count); Snapshots the snapshots it wrote
	// (zk_snap_count); Looking the times it lost its leader
	// (zk_looking_count).
	Proposals, Snapshots, Looking atomic.Int64
	// SlowFsyncs counts the appends to a durable log that took over a
	// second (ZooKeeper's fsync_threshold_exceed_count).
	SlowFsyncs atomic.Int64
	// Corruptions counts the damage found in this member's files, or in an
	// entry on its way ("corruption detected" in the log); TornWrites the
	// ends of appends a crash cut short, dropped as they were never
	// acknowledged ("torn write").
	Corruptions, TornWrites atomic.Int64
	// DigestMismatches counts, on the leader, the members whose tree's
	// digest differed from its own at the same zxid
	// (zk_digest_mismatches_count; see digest.go).
	DigestMismatches atomic.Int64

	lastSnapIndex atomic.Uint64 // the newest snapshot's index, 0 for none
	lastSnapAt    atomic.Int64  // when it was written, unix ns

	notServingSince time.Time     // when the member last stopped serving (or started); guarded by Node.servingMu
	leaderSince     atomic.Int64  // unix ns when this member last became leader; 0 while it is not
	joinCommit      atomic.Uint64 // Raft's commit index when a leader was first known
	joined          atomic.Bool   // joinCommit is set
}

// Stats returns the member's figures.
func (n *Node) Stats() *Stats { return &n.stats }

// LeaderSince returns when this member became leader, zero if it does not lead.
func (n *Node) LeaderSince() time.Time {
	if ns := n.stats.leaderSince.Load(); ns != 0 && n.IsLeader() {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// RaftStatus is this member's Raft at one moment.
type RaftStatus struct {
	State        string // Follower, Candidate, Leader or Shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastLogIndex uint64
	// LastContact is how long ago a follower last heard from its leader;
	// 0 on the leader, -1 if never.
	LastContact time.Duration
	LeaderID    int    // 0 when no leader is known
	LeaderAddr  string // the leader's Raft address, "" when none is known
	// JoinCommitIndex is Raft's commit index when this member first knew a
	// leader; Joined reports whether it has.
	JoinCommitIndex uint64
	Joined          bool
	// Repairing reports whether the member is getting back entries it lost
	// to a damaged disk.
	Repairing bool
}

// RaftStatus returns the member's Raft figures; State is "" before Start.
func (n *Node) RaftStatus() RaftStatus {
	r := n.raftNow()
	if r == nil {
		return RaftStatus{LastContact: -1}
	}
	st := RaftStatus{State: r.State().String(), Term: r.CurrentTerm(), CommitIndex: r.CommitIndex(),
		AppliedIndex: r.AppliedIndex(), LastLogIndex: r.LastIndex(), LastContact: -1,
		JoinCommitIndex: n.stats.joinCommit.Load(), Joined: n.stats.joined.Load(), Repairing: n.repairing.Load()}
	switch last := r.LastContact(); {
	case r.State() == raft.Leader:
		st.LastContact = 0
	case !last.IsZero():
		st.LastContact = time.Since(last)
	}
	if addr, id := r.LeaderWithID(); id != "" {
		st.LeaderID, _ = strconv.Atoi(string(id))
		st.LeaderAddr = string(addr)
	}
	return st
}

// markJoined records, the first time a leader is known and has been
// heard from, the cluster's commit index: the leader's own on the leader,
// the highest a leader's AppendEntries named on another member (Raft caps
// a follower's own commit index at its last entry, which on a member that
// is behind says nothing of the cluster's).
func (n *Node) markJoined() {
	r := n.raftNow()
	if n.stats.joined.Load() || r == nil {
		return
	}
	commit := r.CommitIndex()
	if n.trans != nil && r.State() != raft.Leader {
		commit = max(commit, n.trans.leaderCommit.Load())
	}
	if commit == 0 && n.cfg.Clustered() { // not heard from a leader yet: the bootstrap entry is committed first
		return
	}
	n.stats.joinCommit.Store(commit)
	n.stats.joined.Store(true)
}

// timedLogStore records how long each append to a durable log takes.
type timedLogStore struct {
	raft.LogStore
	stats *Stats
}

func (s timedLogStore) StoreLog(l *raft.Log) error {
	start := time.Now()
	err := s.LogStore.StoreLog(l)
	s.took(time.Since(start))
	return err
}

func (s timedLogStore) StoreLogs(ls []*raft.Log) error {
	start := time.Now()
	err := s.LogStore.StoreLogs(ls)
	s.took(time.Since(start))
	return err
}

// IsMonotonic passes the store's through (see logCache.IsMonotonic).
func (s timedLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

// slowFsync is ZooKeeper's default fsync.warningthresholdms.
const slowFsync = time.Second

func (s timedLogStore) took(d time.Duration) {
	s.stats.Fsync.Add(d.Milliseconds())
	if d > slowFsync {
		s.stats.SlowFsyncs.Add(1)
	}
}

// LastSnapshot returns the index and time of the newest snapshot this
// member wrote; ok is false before the first.
func (n *Node) LastSnapshot() (index int64, at time.Time, ok bool) {
	i := n.stats.lastSnapIndex.Load()
	if i == 0 {
		return 0, time.Time{}, false
	}
	return int64(i), time.Unix(0, n.stats.lastSnapAt.Load()), true
}

// timedSnapshots records how long each snapshot takes to write, from
// Create to a successful Close, and counts them.
type timedSnapshots struct {
	raft.SnapshotStore
	stats *Stats
}

func (s timedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	t := &timedSink{SnapshotSink: sink, stats: s.stats, start: time.Now(), index: index}
	if k, ok := sink.(raftfsm.Keeper); ok { // the in-memory store's sinks keep the FSM snapshot itself
		return timedKeeperSink{timedSink: t, keeper: k}, nil
	}
	return t, nil
}

type timedKeeperSink struct {
	*timedSink
	keeper raftfsm.Keeper
}

func (s timedKeeperSink) Keep(f raft.FSMSnapshot) { s.keeper.Keep(f) }

type timedSink struct {
	raft.SnapshotSink
	stats  *Stats
	start  time.Time
	index  uint64
	closed bool // Persist closes a sink, and Raft closes it again: once counts
}

func (s *timedSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil && !s.closed {
		s.closed = true
		s.stats.Snapshot.Add(time.Since(s.start).Milliseconds())
		s.stats.Snapshots.Add(1)
		s.stats.lastSnapAt.Store(time.Now().UnixNano())
		s.stats.lastSnapIndex.Store(s.index)
	}
	return err
}
