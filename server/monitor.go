package server

import (
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zkraft/zkraft/server/internal/summary"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/tree"
)

// MetricKind says how a Metric's value is to be read.
type MetricKind uint8

const (
	// KindText is a string (version, server_state, peer_state).
	KindText MetricKind = iota
	// KindGauge is a value that goes up and down.
	KindGauge
	// KindCounter is a count that only grows (until srst).
	KindCounter
	// KindSummary is a distribution: Summary holds it.
	KindSummary
)

// Metric is one figure of mntr: Name is its key without "zk_", as
// /commands/monitor and /metrics name it too.
type Metric struct {
	Name string
	Kind MetricKind
	// Value is a string for KindText; an int64, or for an average a
	// float64, for KindGauge and KindCounter; nil for KindSummary.
	Value   any
	Summary Summary
}

// Summary is a distribution of samples, as ZooKeeper's summaries: times
// in milliseconds, counts as they are. mntr prints it as avg_, min_, max_,
// cnt_ and sum_ keys, and p50_ to p999_ too when Percentiles is set.
type Summary struct {
	Count, Sum, Min, Max int64
	Avg                  float64
	P50, P95, P99, P999  int64
	Percentiles          bool
}

// summaryOf returns a summary's figures, the average rounded to 4
// decimals as ZooKeeper prints it.
func summaryOf(s *summary.Summary, percentiles bool) Summary {
	v := s.Snapshot()
	return Summary{Count: v.Count, Sum: v.Sum, Min: v.Min, Max: v.Max, Avg: round4(v.Avg()),
		P50: v.P50, P95: v.P95, P99: v.P99, P999: v.P999, Percentiles: percentiles}
}

// Monitor returns the server's mntr figures in the order ZooKeeper 3.8
// prints them: the keys of ZooKeeper's mntr that mean something outside
// the JVM (README, Operations, lists those left out), the leader-only
// ones on a cluster's leader. Reading them takes the tree's read lock
// briefly and, on Linux, lists /proc/self/fd.
func (s *Server) Monitor() []Metric {
	in := s.monitorInputs()
	out := make([]Metric, 0, len(mntrKeys))
	for _, k := range mntrKeys {
		switch {
		case k.when == inCluster && !in.clustered, k.when == onLeader && !in.leader, k.when == withFDs && !in.fds:
			continue
		case k.kind == KindSummary:
			out = append(out, Metric{Name: k.name, Kind: k.kind, Summary: k.value(in).(Summary)})
		default:
			out = append(out, Metric{Name: k.name, Kind: k.kind, Value: k.value(in)})
		}
	}
	return out
}

// monitorInputs are what Monitor reads, each once.
type monitorInputs struct {
	s                          *Server
	st                         *serverStats
	ms                         *member.Stats
	znodes, ephemerals         int64
	dataSize                   int64
	minLat, maxLat             int64
	avgLat                     float64
	lastResp, minResp, maxResp int64
	lastProp, minProp, maxProp int64
	remote, local              int64
	openFDs, maxFDs            int64
	fds, clustered, leader     bool
	followers, observers       int64
	leaderUptime               int64
}

func (s *Server) monitorInputs() *monitorInputs {
	in := &monitorInputs{s: s, st: &s.stats, ms: s.node.Stats(), clustered: s.cfg.clustered()}
	s.fsm.Read(func(t *tree.Tree) {
		in.znodes, in.ephemerals, in.dataSize = int64(t.Len()+1), int64(t.EphemeralCount()), t.ApproximateDataSize()
	})
	in.minLat, in.avgLat, in.maxLat = s.stats.lat.minAvgMaxValues()
	in.lastResp, in.minResp, in.maxResp = s.stats.responseSizes.Get()
	in.lastProp, in.minProp, in.maxProp = in.ms.ProposalSizes.Get()
	in.remote, in.local = s.connsByLocality()
	in.openFDs, in.maxFDs, in.fds = fileDescriptors()
	if in.leader = in.clustered && s.node.IsLeader(); in.leader {
		f, o := s.node.SyncedLearners()
		in.followers, in.observers = int64(f), int64(o)
	}
	if at := s.node.LeaderSince(); !at.IsZero() {
		in.leaderUptime = time.Since(at).Milliseconds()
	}
	return in
}

// when says on which members an mntr key is printed.
type when uint8

const (
	always    when = iota
	inCluster      // on every member of a cluster
	onLeader       // on a cluster's leader
	withFDs        // where the process's file descriptors can be counted
)

// mntrKeys are the keys of ZooKeeper 3.8's mntr that zkraft prints, in
// ZooKeeper's order; integration/realzk_admin_test.go checks the order
// and lists the keys left out.
var mntrKeys = []struct {
	name  string
	kind  MetricKind
	when  when
	value func(*monitorInputs) any
}{
	{"version", KindText, always, func(*monitorInputs) any { return Version + ", built on " + buildDate }},
	{"server_state", KindText, always, func(in *monitorInputs) any { return in.s.mode() }},
	{"peer_state", KindText, inCluster, func(in *monitorInputs) any { return peerState(in.s.mode()) }},
	{"ephemerals_count", KindGauge, always, func(in *monitorInputs) any { return in.ephemerals }},
	{"num_alive_connections", KindGauge, always, func(in *monitorInputs) any { return int64(in.s.connCount()) }},
	{"avg_latency", KindGauge, always, func(in *monitorInputs) any { return in.avgLat }},
	{"min_proposal_size", KindGauge, onLeader, func(in *monitorInputs) any { return in.minProp }},
	{"outstanding_requests", KindGauge, always, func(in *monitorInputs) any { return in.st.outstanding.Load() }},
	{"znode_count", KindGauge, always, func(in *monitorInputs) any { return in.znodes }},
	{"global_sessions", KindGauge, always, func(in *monitorInputs) any { return int64(in.s.fsm.SessionCount()) }},
	{"non_mtls_remote_conn_count", KindGauge, always, func(in *monitorInputs) any { return in.remote }},
	{"last_client_response_size", KindGauge, always, func(in *monitorInputs) any { return in.lastResp }},
	{"packets_sent", KindGauge, always, func(in *monitorInputs) any { return in.st.sent.Load() }},
	{"packets_received", KindGauge, always, func(in *monitorInputs) any { return in.st.received.Load() }},
	{"max_proposal_size", KindGauge, onLeader, func(in *monitorInputs) any { return in.maxProp }},
	{"max_client_response_size", KindGauge, always, func(in *monitorInputs) any { return in.maxResp }},
	{"synced_followers", KindGauge, onLeader, func(in *monitorInputs) any { return in.followers }},
	{"watch_count", KindGauge, always, func(in *monitorInputs) any { return int64(in.s.watches.total()) }},
	// zkraft's non-voting members are its observers.
	{"synced_non_voting_followers", KindGauge, onLeader, func(*monitorInputs) any { return int64(0) }},
	{"synced_observers", KindGauge, onLeader, func(in *monitorInputs) any { return in.observers }},
	{"auth_failed_count", KindCounter, always, func(in *monitorInputs) any { return in.st.authFailed.Load() }},
	{"min_latency", KindGauge, always, func(in *monitorInputs) any { return in.minLat }},
	{"max_file_descriptor_count", KindGauge, withFDs, func(in *monitorInputs) any { return in.maxFDs }},
	{"approximate_data_size", KindGauge, always, func(in *monitorInputs) any { return in.dataSize }},
	{"open_file_descriptor_count", KindGauge, withFDs, func(in *monitorInputs) any { return in.openFDs }},
	{"last_proposal_size", KindGauge, onLeader, func(in *monitorInputs) any { return in.lastProp }},
	// A Raft follower catches up through AppendEntries, never in a sync phase.
	{"pending_syncs", KindGauge, onLeader, func(*monitorInputs) any { return int64(0) }},
	{"leader_uptime", KindGauge, onLeader, func(in *monitorInputs) any { return in.leaderUptime }},
	{"local_sessions", KindGauge, always, func(in *monitorInputs) any { return int64(in.s.ro.len()) }},
	{"uptime", KindGauge, always, func(in *monitorInputs) any { return time.Since(in.s.startedAt()).Milliseconds() }},
	{"max_latency", KindGauge, always, func(in *monitorInputs) any { return in.maxLat }},
	{"learners", KindGauge, onLeader, func(in *monitorInputs) any { return in.followers + in.observers }},
	{"min_client_response_size", KindGauge, always, func(in *monitorInputs) any { return in.minResp }},
	{"non_mtls_local_conn_count", KindGauge, always, func(in *monitorInputs) any { return in.local }},
	{"quorum_size", KindGauge, inCluster, func(in *monitorInputs) any { return int64(in.s.node.Voters()) }},
	{"proposal_count", KindCounter, always, func(in *monitorInputs) any { return in.ms.Proposals.Load() }},
	{"watch_bytes", KindCounter, always, func(in *monitorInputs) any { return in.st.watchBytes.Load() }},
	{"connection_rejected", KindCounter, always, func(in *monitorInputs) any { return in.st.rejected.Load() }},
	{"cnxn_closed_without_zk_server_running", KindCounter, always, func(in *monitorInputs) any { return in.st.notServing.Load() }},
	{"sessionless_connections_expired", KindCounter, always, func(in *monitorInputs) any { return in.st.sessionless.Load() }},
	{"looking_count", KindCounter, always, func(in *monitorInputs) any { return in.ms.Looking.Load() }},
	{"digest_mismatches_count", KindCounter, always, func(in *monitorInputs) any { return in.ms.DigestMismatches.Load() }},
	{"bytes_received_count", KindCounter, always, func(in *monitorInputs) any { return in.st.bytesReceived.Load() }},
	{"connection_request_count", KindCounter, always, func(in *monitorInputs) any { return in.st.connRequests.Load() }},
	{"response_bytes", KindCounter, always, func(in *monitorInputs) any { return in.st.responseBytes.Load() }},
	{"snap_count", KindCounter, always, func(in *monitorInputs) any { return in.ms.Snapshots.Load() }},
	{"commit_count", KindCounter, always, func(in *monitorInputs) any { return in.st.commits.Load() }},
	{"stale_sessions_expired", KindCounter, always, func(in *monitorInputs) any { return in.st.expired.Load() }},
	{"node_created_watch_count", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.st.created, false) }},
	{"node_deleted_watch_count", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.st.deleted, false) }},
	{"fsynctime", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.ms.Fsync, false) }},
	{"snapshottime", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.ms.Snapshot, false) }},
	{"unavailable_time", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.ms.Unavailable, false) }},
	{"dbinittime", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.ms.DBInit, false) }},
	{"election_time", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.ms.Election, false) }},
	{"node_children_watch_count", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.st.children, false) }},
	{"node_changed_watch_count", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.st.changed, false) }},
	{"updatelatency", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.st.update, true) }},
	{"readlatency", KindSummary, always, func(in *monitorInputs) any { return summaryOf(&in.st.read, true) }},
	// zkraft's own, after ZooKeeper's (ownMntrKeys): damage found in this
	// member's files, torn writes dropped, and whether it is getting back
	// entries it lost (see server/member/damage.go).
	{"corruption_detected_count", KindCounter, always, func(in *monitorInputs) any { return in.ms.Corruptions.Load() }},
	{"torn_write_count", KindCounter, always, func(in *monitorInputs) any { return in.ms.TornWrites.Load() }},
	{"repairing", KindGauge, always, func(in *monitorInputs) any { return boolGauge(in.s.node.Repairing()) }},
}

// OwnMntrKeys are the mntr keys zkraft prints that ZooKeeper has not, after
// ZooKeeper's.
var OwnMntrKeys = []string{"corruption_detected_count", "torn_write_count", "repairing"}

func boolGauge(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// connsByLocality counts the client connections from other hosts and from
// this one (none uses TLS: ZooKeeper's non_mtls_remote/local_conn_count).
func (s *Server) connsByLocality() (remote, local int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if ip := net.ParseIP(c.ip); ip != nil && ip.IsLoopback() {
			local++
		} else {
			remote++
		}
	}
	return remote, local
}

// fileDescriptors returns the open file descriptors of the process and
// its limit, as ZooKeeper reads them from the JVM on Unix; ok is false
// where /proc/self/fd does not exist.
func fileDescriptors() (open, limit int64, ok bool) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	return int64(len(entries) - 1), int64(rl.Cur), true // less the directory being read
}

// round4 rounds v to 4 decimals, as ZooKeeper's averages are.
func round4(v float64) float64 { return float64(int64(v*10000+0.5)) / 10000 }

// startedAt returns when the server started, zero before Start.
func (s *Server) startedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}
