package admin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/servertest"
)

// scrape fetches /metrics and parses it with Prometheus's text parser.
func scrape(t testing.TB, a *admin.Admin) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := get(t, a.URL()+"/metrics")
	require.Equal(t, http.StatusOK, status)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err, body)
	return families
}

func value(t testing.TB, families map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := families[name]
	require.True(t, ok, "no metric %s", name)
	m := f.GetMetric()[0]
	switch f.GetType() {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	}
	t.Fatalf("metric %s has type %v", name, f.GetType())
	return 0
}

func TestMetrics_ZooKeeperNamesAndTypes(t *testing.T) {
	srv := servertest.NewServer(t)
	a := startAdmin(t, srv.Server)
	c := connect(t, srv.ConnectString())
	for _, p := range []string{"/x", "/y", "/z"} {
		_, err := c.Create(p, []byte("v"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		_, _, err = c.Get(p)
		require.NoError(t, err)
	}
	families := scrape(t, a)
	types := map[string]dto.MetricType{
		"znode_count": dto.MetricType_GAUGE, "watch_count": dto.MetricType_GAUGE, "ephemerals_count": dto.MetricType_GAUGE,
		"approximate_data_size": dto.MetricType_GAUGE, "num_alive_connections": dto.MetricType_GAUGE,
		"outstanding_requests": dto.MetricType_GAUGE, "packets_received": dto.MetricType_GAUGE,
		"packets_sent": dto.MetricType_GAUGE, "avg_latency": dto.MetricType_GAUGE, "global_sessions": dto.MetricType_GAUGE,
		"open_file_descriptor_count": dto.MetricType_GAUGE, "max_file_descriptor_count": dto.MetricType_GAUGE,
		"uptime": dto.MetricType_GAUGE, "commit_count": dto.MetricType_COUNTER,
		"bytes_received_count": dto.MetricType_COUNTER, "response_bytes": dto.MetricType_COUNTER,
		"readlatency": dto.MetricType_SUMMARY, "updatelatency": dto.MetricType_SUMMARY,
		"fsynctime": dto.MetricType_SUMMARY, "snapshottime": dto.MetricType_SUMMARY,
		"election_time": dto.MetricType_SUMMARY, "raft_commit_time": dto.MetricType_SUMMARY,
		"raft_applied_index": dto.MetricType_GAUGE, "raft_commit_index": dto.MetricType_GAUGE,
		"raft_last_contact_seconds": dto.MetricType_GAUGE, "raft_term": dto.MetricType_GAUGE,
		"go_goroutines": dto.MetricType_GAUGE, "process_open_fds": dto.MetricType_GAUGE,
	}
	for name, typ := range types {
		f, ok := families[name]
		if assert.True(t, ok, "missing %s", name) {
			assert.Equal(t, typ, f.GetType(), name)
		}
	}
	assert.InDelta(t, 8, value(t, families, "znode_count"), 0, "3 nodes and the 5 ZooKeeper counts from the start")
	assert.InDelta(t, 3, value(t, families, "updatelatency"), 0)
	assert.GreaterOrEqual(t, value(t, families, "readlatency"), 3.0)
	assert.GreaterOrEqual(t, value(t, families, "raft_applied_index"), 4.0, "the session and 3 creates")
	quantiles := families["readlatency"].GetMetric()[0].GetSummary().GetQuantile()
	assert.Len(t, quantiles, 4, "0.5, 0.95, 0.99 and 0.999")
	for name := range families {
		assert.False(t, strings.HasPrefix(name, "zk_"), "%s: ZooKeeper's Prometheus names have no prefix", name)
	}
}

// TestMetrics_RegistryPerServer runs two servers in one process, each
// with its admin listener: each registry reports its own server.
func TestMetrics_RegistryPerServer(t *testing.T) {
	one, two := servertest.NewServer(t), servertest.NewServer(t)
	a1, a2 := startAdmin(t, one.Server), startAdmin(t, two.Server)
	require.NotSame(t, a1.Registry(), a2.Registry())
	c := connect(t, one.ConnectString())
	for _, p := range []string{"/only", "/on", "/one"} {
		_, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	m1, m2 := scrape(t, a1), scrape(t, a2)
	assert.InDelta(t, 8, value(t, m1, "znode_count"), 0)
	assert.InDelta(t, 5, value(t, m2, "znode_count"), 0)
	assert.InDelta(t, 1, value(t, m1, "num_alive_connections"), 0)
	assert.InDelta(t, 0, value(t, m2, "num_alive_connections"), 0)
	assert.InDelta(t, 3, value(t, m1, "updatelatency"), 0)
	assert.InDelta(t, 0, value(t, m2, "updatelatency"), 0)
}

// TestMetrics_CollectorInAnEmbeddersRegistry registers a server's
// collector in a registry of the embedder's own.
func TestMetrics_CollectorInAnEmbeddersRegistry(t *testing.T) {
	srv := servertest.NewServer(t)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(admin.Collector(srv.Server)))
	families, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	assert.InDelta(t, 5, value(t, byName, "znode_count"), 0)
	assert.Contains(t, byName, "raft_applied_index")
	assert.NotContains(t, byName, "go_goroutines", "the Go and process collectors are the embedder's to add")
}
