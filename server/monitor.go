package server

import (
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zkraft/zkraft/server/internal/summary"
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
	var znodes, ephemerals int
	var dataSize int64
	s.fsm.Read(func(t *tree.Tree) {
		znodes, ephemerals, dataSize = t.Len()+1, t.EphemeralCount(), t.ApproximateDataSize()
	})
	st, ms := &s.stats, s.node.Stats()
	lo, avg, hi := s.stats.lat.minAvgMaxValues()
	last, minResp, maxResp := st.responseSizes.Get()
	lastProp, minProp, maxProp := ms.ProposalSizes.Get()
	remote, local := s.connsByLocality()
	openFDs, maxFDs, fdsKnown := fileDescriptors()
	leader := s.cfg.clustered() && s.node.IsLeader()
	followers, observers := 0, 0
	if leader {
		followers, observers = s.node.SyncedLearners()
	}
	var leaderUptime int64
	if at := s.node.LeaderSince(); !at.IsZero() {
		leaderUptime = time.Since(at).Milliseconds()
	}

	var out []Metric
	text := func(name, v string) { out = append(out, Metric{Name: name, Kind: KindText, Value: v}) }
	gauge := func(name string, v any) { out = append(out, Metric{Name: name, Kind: KindGauge, Value: v}) }
	counter := func(name string, v int64) { out = append(out, Metric{Name: name, Kind: KindCounter, Value: v}) }
	dist := func(name string, v Summary) { out = append(out, Metric{Name: name, Kind: KindSummary, Summary: v}) }
	onLeader := func(f func()) {
		if leader {
			f()
		}
	}

	text("version", Version+", built on "+buildDate)
	text("server_state", s.mode())
	if s.cfg.clustered() {
		text("peer_state", peerState(s.mode()))
	}
	gauge("ephemerals_count", int64(ephemerals))
	gauge("num_alive_connections", int64(s.connCount()))
	gauge("avg_latency", avg)
	onLeader(func() { gauge("min_proposal_size", minProp) })
	gauge("outstanding_requests", st.outstanding.Load())
	gauge("znode_count", int64(znodes))
	gauge("global_sessions", int64(s.fsm.SessionCount()))
	gauge("non_mtls_remote_conn_count", remote)
	gauge("last_client_response_size", last)
	gauge("packets_sent", st.sent.Load())
	gauge("packets_received", st.received.Load())
	onLeader(func() { gauge("max_proposal_size", maxProp) })
	gauge("max_client_response_size", maxResp)
	onLeader(func() { gauge("synced_followers", int64(followers)) })
	gauge("watch_count", int64(s.watches.total()))
	onLeader(func() {
		gauge("synced_non_voting_followers", int64(0)) // zkraft's non-voters are its observers
		gauge("synced_observers", int64(observers))
	})
	counter("auth_failed_count", st.authFailed.Load())
	gauge("min_latency", lo)
	if fdsKnown {
		gauge("max_file_descriptor_count", maxFDs)
	}
	gauge("approximate_data_size", dataSize)
	if fdsKnown {
		gauge("open_file_descriptor_count", openFDs)
	}
	onLeader(func() {
		gauge("last_proposal_size", lastProp)
		gauge("pending_syncs", int64(0)) // a Raft follower catches up through AppendEntries, never in a separate sync
		gauge("leader_uptime", leaderUptime)
	})
	gauge("local_sessions", int64(s.ro.len()))
	gauge("uptime", time.Since(s.startedAt()).Milliseconds())
	gauge("max_latency", hi)
	onLeader(func() { gauge("learners", int64(followers+observers)) })
	gauge("min_client_response_size", minResp)
	gauge("non_mtls_local_conn_count", local)
	if s.cfg.clustered() {
		gauge("quorum_size", int64(s.node.Voters()))
	}
	counter("proposal_count", ms.Proposals.Load())
	counter("watch_bytes", st.watchBytes.Load())
	counter("connection_rejected", st.rejected.Load())
	counter("cnxn_closed_without_zk_server_running", st.notServing.Load())
	counter("sessionless_connections_expired", st.sessionless.Load())
	counter("looking_count", ms.Looking.Load())
	counter("bytes_received_count", st.bytesReceived.Load())
	counter("connection_request_count", st.connRequests.Load())
	counter("response_bytes", st.responseBytes.Load())
	counter("snap_count", ms.Snapshots.Load())
	counter("commit_count", st.commits.Load())
	counter("stale_sessions_expired", st.expired.Load())

	dist("node_created_watch_count", summaryOf(&st.created, false))
	dist("node_deleted_watch_count", summaryOf(&st.deleted, false))
	dist("fsynctime", summaryOf(&ms.Fsync, false))
	dist("snapshottime", summaryOf(&ms.Snapshot, false))
	dist("unavailable_time", summaryOf(&ms.Unavailable, false))
	dist("dbinittime", summaryOf(&ms.DBInit, false))
	dist("election_time", summaryOf(&ms.Election, false))
	dist("node_children_watch_count", summaryOf(&st.children, false))
	dist("node_changed_watch_count", summaryOf(&st.changed, false))
	dist("updatelatency", summaryOf(&st.update, true))
	dist("readlatency", summaryOf(&st.read, true))
	return out
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
