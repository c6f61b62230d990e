//go:build realzk

package integration

// Comparison of zkraft's operations surface with a real ZooKeeper 3.8's:
// the keys of mntr, the lines of conf and envi, the commands the
// AdminServer lists, and the keys of each command's JSON (nested objects
// too, and the first element of lists both answer non-empty), on a
// standalone server and on a cluster's leader and a follower.
//
// Run it with ZooKeeper's AdminServer on (the realzk script's
// REALZK_ADMIN_PORT), naming the client and admin addresses in the same
// member order:
//
//	REALZK_ADMIN_PORT=18080 /work/shared/tools/realzk start /tmp/rz-admin 12181
//	ZKRAFT_REALZK=127.0.0.1:12181 ZKRAFT_REALZK_ADMIN=127.0.0.1:18080 \
//	  go test -tags realzk -count=1 -run RealzkAdmin -v ./integration
//
//	REALZK_ADMIN_PORT=18090 /work/shared/tools/realzk cluster /tmp/rz3-admin 12281
//	ZKRAFT_REALZK=127.0.0.1:12281,127.0.0.1:12282,127.0.0.1:12283 \
//	  ZKRAFT_REALZK_ADMIN=127.0.0.1:18090,127.0.0.1:18091,127.0.0.1:18092 \
//	  go test -tags realzk -count=1 -run RealzkAdmin -v ./integration
//
// What zkraft leaves out on purpose is listed below with the reason; any
// other difference fails the test.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/servertest"
)

const realzkAdminEnv = "ZKRAFT_REALZK_ADMIN"

// mntrLeftOut are ZooKeeper 3.8's mntr keys zkraft does not print, and
// why: each names a part of ZooKeeper's Java implementation (its request
// processor pipeline, Netty, the JVM, Zab's learner protocol, features
// zkraft does not have) for which zkraft has no counterpart whose value
// would mean the same. A summary's key stands for all its avg_, min_,
// max_, cnt_, sum_ (and p50_ to p999_) keys.
var mntrLeftOut = map[string]string{
	"outstanding_tls_handshake": "no TLS", "tls_handshake_exceeded": "no TLS", "unsuccessful_handshake": "no TLS",
	"insecure_admin_count":        "the admin listener is HTTP only; counts no TLS downgrade",
	"connection_drop_probability": "no connection throttling", "connection_drop_count": "no connection throttling",
	"connection_token_deficit": "no connection throttling", "throttled_ops": "no request throttling",
	"request_throttle_wait_count": "no request throttling", "request_throttle_queue_time_ms": "no request throttling",
	"large_requests_rejected": "no largeRequestMaxBytes throttle (frames over jute.maxbuffer close the connection)",
	"stale_requests":          "no request throttling", "stale_requests_dropped": "no request throttling",
	"stale_replies":              "no request throttling",
	"outstanding_changes_queued": "Java pipeline (PrepRequestProcessor)", "outstanding_changes_removed": "Java pipeline",
	"prep_processor_request_queued": "Java pipeline", "prep_processor_queue_size": "Java pipeline",
	"prep_processor_queue_time_ms": "Java pipeline", "prep_process_time": "Java pipeline",
	"close_session_prep_time":       "Java pipeline",
	"sync_processor_request_queued": "Java pipeline (SyncRequestProcessor)", "sync_processor_queue_size": "Java pipeline",
	"sync_processor_batch_size": "Java pipeline", "sync_processor_queue_time_ms": "Java pipeline",
	"sync_processor_queue_flush_time_ms": "Java pipeline", "sync_processor_queue_and_flush_time_ms": "Java pipeline",
	"sync_process_time":     "Java pipeline",
	"request_commit_queued": "Java pipeline (CommitProcessor)", "requests_not_forwarded_to_commit_processor": "Java pipeline",
	"write_commit_proc_req_queued": "Java pipeline", "read_commit_proc_req_queued": "Java pipeline",
	"commit_commit_proc_req_queued": "Java pipeline", "write_commit_proc_issued": "Java pipeline",
	"read_commit_proc_issued": "Java pipeline", "write_batch_time_in_commit_processor": "Java pipeline",
	"concurrent_request_processing_in_commit_processor": "Java pipeline", "commit_process_time": "Java pipeline",
	"time_waiting_empty_pool_in_commit_processor_read_ms": "Java pipeline", "read_commitproc_time_ms": "Java pipeline",
	"write_commitproc_time_ms": "Java pipeline", "session_queues_drained": "Java pipeline",
	"reads_issued_from_session_queue": "Java pipeline", "reads_after_write_in_session_queue": "Java pipeline",
	"requests_in_session_queue": "Java pipeline", "pending_session_queue_size": "Java pipeline",
	"read_final_proc_time_ms": "Java pipeline (FinalRequestProcessor)", "write_final_proc_time_ms": "Java pipeline",
	"local_write_committed_time_ms": "Java pipeline", "server_write_committed_time_ms": "Java pipeline",
	"proposal_process_time": "Java pipeline (ProposalRequestProcessor)", "om_proposal_process_time_ms": "Java pipeline (observer master)",
	"om_commit_process_time_ms":                    "Java pipeline (observer master)",
	"skip_learner_request_to_next_processor_count": "Java pipeline", "learner_request_processor_queue_size": "Java pipeline",
	"response_packet_cache_hits": "no response cache", "response_packet_cache_misses": "no response cache",
	"response_packet_get_children_cache_hits": "no response cache", "response_packet_get_children_cache_misses": "no response cache",
	"netty_queued_buffer_capacity": "no Netty", "socket_closing_time": "NIO socket internals",
	"jvm_pause_time_ms": "no JVM", "startup_txns_loaded": "Zab start-up (txn log replay)",
	"startup_txns_load_time": "Zab start-up", "startup_snap_load_time": "Zab start-up",
	"dead_watchers_queued": "Java's lazy watcher cleaner", "dead_watchers_cleared": "Java's lazy watcher cleaner",
	"dead_watchers_cleaner_latency": "Java's lazy watcher cleaner", "add_dead_watcher_stall_time": "Java's lazy watcher cleaner",
	"ensemble_auth_success": "no quorum SASL", "ensemble_auth_fail": "no quorum SASL", "ensemble_auth_skip": "no quorum SASL",
	"learner_proposal_received_count": "Zab learner protocol (Raft's AppendEntries)", "learner_commit_received_count": "Zab learner protocol",
	"diff_count": "Zab sync (Raft catches up with AppendEntries and snapshots)", "inflight_diff_count": "Zab sync",
	"inflight_snap_count": "Zab sync", "follower_sync_time": "Zab sync", "observer_sync_time": "Zab sync",
	"connection_revalidate_count": "Zab learner protocol", "revalidate_count": "Zab learner protocol",
	"quit_leading_due_to_disloyal_voter": "Zab", "proposal_ack_creation_latency": "Zab", "proposal_latency": "Zab (raft_commit_time on /metrics)",
	"quorum_ack_latency": "Zab", "commit_propagation_latency": "Zab", "propagation_latency": "Zab",
	"unrecoverable_error_count": "no such state: a broken member stops",
	"leader_unavailable_time":   "Zab: a new leader's view of the gap (unavailable_time and election_time give it per member)",
	"1_learner_handler_qp_size": "Zab LearnerHandler queues", "2_learner_handler_qp_size": "Zab LearnerHandler queues",
	"3_learner_handler_qp_size": "Zab LearnerHandler queues", "1_learner_handler_qp_time_ms": "Zab LearnerHandler queues",
	"2_learner_handler_qp_time_ms": "Zab LearnerHandler queues", "3_learner_handler_qp_time_ms": "Zab LearnerHandler queues",
	// <namespace>_read_per_namespace and <namespace>_write_per_namespace
	// (one summary of bytes per top-level znode, zookeeper's own among them)
	"per_namespace": "a summary per top-level znode grows with the tree and costs every request a map lookup",
}

// jvmProperty reports whether a system property is the JVM's, or names a
// key of the reference's own zoo.cfg and launch flags.
func jvmProperty(k string) bool {
	for _, p := range []string{"java.", "jdk.", "sun.", "jetty.", "native.", "user.language", "zookeeper.", "znode."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// surface is what one server shows an operator.
type surface struct {
	commands []string            // /commands, in order
	mntr     []string            // mntr keys, in order
	conf     []string            // conf keys (member lines as server.N), in order
	envi     []string            // envi keys, in order
	monitor  []string            // /commands/monitor's keys, in order
	json     map[string][]string // each command's JSON keys, nested ones as a.b, sorted
}

func TestRealzkAdmin(t *testing.T) {
	clients := realzkAddrs(t)
	adminAddrs := strings.Split(os.Getenv(realzkAdminEnv), ",")
	if adminAddrs[0] == "" {
		t.Skip("set " + realzkAdminEnv + " to the reference's AdminServer address(es), in ZKRAFT_REALZK's order")
	}
	require.Len(t, adminAddrs, len(clients))
	if len(clients) == 1 {
		ref := readSurface(t, clients[0], "http://"+adminAddrs[0])
		srv := servertest.NewServer(t).Server
		ours := readSurface(t, srv.ConnectString(), startRealzkAdmin(t, srv))
		compareSurfaces(t, "standalone", ref, ours)
		return
	}
	refRoles := map[string]int{}
	for i := range clients {
		refRoles[adminState(t, "http://"+adminAddrs[i])] = i
	}
	c := servertest.NewCluster(t, len(clients))
	leader := c.Leader()
	for _, role := range []string{"leader", "follower"} {
		i, ok := refRoles[role]
		require.True(t, ok, "the reference has no %s", role)
		j := leader
		if role == "follower" {
			j = (leader + 1) % len(clients)
		}
		srv := c.Server(j)
		ref := readSurface(t, clients[i], "http://"+adminAddrs[i])
		ours := readSurface(t, srv.ConnectString(), startRealzkAdmin(t, srv))
		compareSurfaces(t, role, ref, ours)
	}
}

func startRealzkAdmin(t *testing.T, srv *server.Server) string {
	a, err := admin.New(srv, admin.Config{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	t.Cleanup(func() { a.Close() })
	return a.URL()
}

func adminState(t *testing.T, base string) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(httpGet(t, base+"/commands/monitor")), &m))
	return m["server_state"].(string)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// readSurface reads a server's surface while a client of it holds a
// session with an ephemeral node and a watch (so that connections, dump
// and the watch commands have an element to show).
func readSurface(t *testing.T, client, base string) surface {
	c, _, err := zk.Connect([]string{client}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer c.Close()
	root := newRZRoot(t)
	_, err = c.Create(root, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, _, _, err = c.GetW(root)
	require.NoError(t, err)

	var s surface
	s.commands = regexp.MustCompile(`>([a-z_]+)</a>`).FindAllString(httpGet(t, base+"/commands"), -1)
	for _, line := range strings.Split(strings.TrimSpace(fourLetterWord(t, client, "mntr")), "\n") {
		k, _, _ := strings.Cut(line, "\t")
		s.mntr = append(s.mntr, strings.TrimPrefix(k, "zk_"))
	}
	for _, line := range strings.Split(strings.TrimSpace(fourLetterWord(t, client, "conf")), "\n") {
		k, _, _ := strings.Cut(line, "=")
		s.conf = append(s.conf, k)
	}
	for _, line := range strings.Split(strings.TrimSpace(fourLetterWord(t, client, "envi")), "\n") {
		k, _, _ := strings.Cut(line, "=")
		s.envi = append(s.envi, k)
	}
	s.json = map[string][]string{}
	for _, name := range s.commands {
		name = strings.Trim(name, "></a")
		var v any
		body := httpGet(t, base+"/commands/"+name)
		require.NoError(t, json.Unmarshal([]byte(body), &v), "%s: %s", name, body)
		s.json[name] = jsonPaths(v, "", name)
		if name == "monitor" {
			s.monitor = orderedKeys(t, body)
		}
	}
	for i, n := range s.commands {
		s.commands[i] = strings.Trim(n, "></a")
	}
	return s
}

// dataKeyed are JSON objects keyed by data (session ids, paths, times),
// whose own keys are not compared.
var dataKeyed = map[string]bool{
	"session_id_to_watched_paths": true, "path_to_session_ids": true,
	"expiry_time_to_session_ids": true, "session_id_to_ephemeral_paths": true,
}

// jsonPaths lists v's object keys, nested ones as parent.key, and a
// list's first element's as parent[].key.
func jsonPaths(v any, prefix, cmd string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := prefix + k
			out = append(out, p)
			if !dataKeyed[k] && cmd != "system_properties" && cmd != "environment" && cmd != "monitor" {
				out = append(out, jsonPaths(child, p+".", cmd)...)
			}
		}
	case []any:
		if len(v) > 0 {
			out = append(out, jsonPaths(v[0], strings.TrimSuffix(prefix, ".")+"[].", cmd)...)
		}
	}
	sort.Strings(out)
	return out
}

func compareSurfaces(t *testing.T, role string, ref, ours surface) {
	t.Run(role, func(t *testing.T) {
		assert.Equal(t, ref.commands, ours.commands, "the commands /commands lists")
		compareMntr(t, "mntr", ref.mntr, ours.mntr)
		assert.Equal(t, ref.conf, ours.conf, "conf's keys")
		assert.Equal(t, ref.envi, ours.envi, "envi's keys")
		for _, name := range ref.commands {
			refKeys, ourKeys := ref.json[name], ours.json[name]
			switch name {
			case "monitor":
				compareMntr(t, "monitor", withoutCommand(ref.monitor), withoutCommand(ours.monitor))
				continue
			case "system_properties":
				missing, extra := diff(refKeys, ourKeys)
				assert.Empty(t, extra, "system_properties: keys ZooKeeper does not have")
				for _, k := range missing {
					assert.True(t, jvmProperty(k), "system_properties: %s missing", k)
				}
				continue
			case "hash":
				// ZooKeeper 3.8.0 lists no digests until its digest log has
				// some; zkraft lists the tree's digest at once.
				refKeys, ourKeys = topLevel(refKeys), topLevel(ourKeys)
			}
			missing, extra := diff(refKeys, ourKeys)
			assert.Empty(t, missing, "%s: keys zkraft lacks", name)
			assert.Empty(t, extra, "%s: keys ZooKeeper does not have", name)
		}
		keys := 0
		for _, k := range ref.json {
			keys += len(k)
		}
		t.Logf("%s: %d commands (%d JSON keys, nested ones included), %d of %d mntr keys (%d left out on purpose), %d conf and %d envi lines compared",
			role, len(ref.commands), keys, len(ours.mntr), len(ref.mntr), len(ref.mntr)-len(ours.mntr), len(ref.conf), len(ref.envi))
	})
}

// compareMntr checks that ours has ref's keys, in ref's order, but those
// left out on purpose, and no others.
func compareMntr(t *testing.T, what string, ref, ours []string) {
	var want []string
	for _, k := range ref {
		if _, out := mntrLeftOut[summaryBase(k)]; !out {
			want = append(want, k)
		}
	}
	own := len(ours) - len(server.OwnMntrKeys) // zkraft's own keys come last
	if own >= 0 && slices.Equal(ours[own:], server.OwnMntrKeys) {
		ours = ours[:own]
	}
	assert.Equal(t, want, ours, "%s: ZooKeeper's keys but those left out, in its order", what)
}

// summaryBase strips a summary key's avg_/min_/... prefix, when the rest
// is a summary mntrLeftOut names.
func summaryBase(k string) string {
	if strings.HasSuffix(k, "_read_per_namespace") || strings.HasSuffix(k, "_write_per_namespace") {
		return "per_namespace"
	}
	for _, p := range []string{"avg_", "min_", "max_", "cnt_", "sum_", "p50_", "p95_", "p99_", "p999_"} {
		if rest, ok := strings.CutPrefix(k, p); ok {
			if _, listed := mntrLeftOut[rest]; listed {
				return rest
			}
		}
	}
	return k
}

// orderedKeys returns a JSON object's top-level keys in order.
func orderedKeys(t *testing.T, body string) []string {
	dec := json.NewDecoder(strings.NewReader(body))
	_, err := dec.Token()
	require.NoError(t, err)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

func withoutCommand(keys []string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "command" || k == "error" })
}

func topLevel(keys []string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return strings.ContainsAny(k, ".[") })
}

// diff returns the keys only in ref and those only in ours.
func diff(ref, ours []string) (missing, extra []string) {
	for _, k := range ref {
		if !slices.Contains(ours, k) {
			missing = append(missing, k)
		}
	}
	for _, k := range ours {
		if !slices.Contains(ref, k) {
			extra = append(extra, k)
		}
	}
	return missing, extra
}
