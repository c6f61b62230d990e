package admin

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkraft/zkraft/server"
)

// newRegistry returns a registry of srv's own: its mntr figures under
// ZooKeeper's flat names, its Raft figures, and the Go and process
// collectors.
func newRegistry(srv Server) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		serverCollector{srv},
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Collector returns a collector of srv's figures (its mntr figures under
// ZooKeeper's names, and its Raft figures), for an embedder that serves
// its own Prometheus registry rather than the admin listener's. House
// rule 7's Config.Registerer would put Prometheus inside the server; the
// server stays free of it, and this is the seam instead.
func Collector(srv Server) prometheus.Collector { return serverCollector{srv} }

// serverCollector turns a server's figures into metrics at each scrape.
// It is unchecked (Describe sends nothing): which figures exist depends on
// the member's role (a leader's learners, proposal sizes).
type serverCollector struct{ srv Server }

func (serverCollector) Describe(chan<- *prometheus.Desc) {}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.srv.Monitor() {
		collectMetric(ch, m)
	}
	st := c.srv.RaftStatus()
	gauge := func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, v)
	}
	gauge("raft_term", "Raft's current term.", float64(st.Term))
	gauge("raft_commit_index", "The last log index Raft knows committed.", float64(st.CommitIndex))
	gauge("raft_applied_index", "The last log index applied to this member's tree.", float64(st.AppliedIndex))
	gauge("raft_last_log_index", "The last index in this member's Raft log.", float64(st.LastLogIndex))
	leader := 0.0
	if st.State == "Leader" {
		leader = 1
	}
	gauge("raft_leader", "1 while this member leads.", leader)
	if st.LastContact >= 0 {
		gauge("raft_last_contact_seconds", "Time since a follower last heard from its leader; 0 on the leader.", st.LastContact.Seconds())
	}
	summaryMetric(ch, "raft_commit_time", "Time from proposing a command as leader to its apply, in ms.", c.srv.CommitTime())
}

// collectMetric emits one mntr figure: a gauge, a counter or a summary.
func collectMetric(ch chan<- prometheus.Metric, m server.Metric) {
	help := "ZooKeeper's " + m.Name + " (mntr zk_" + m.Name + ")."
	switch m.Kind {
	case server.KindGauge, server.KindCounter:
		kind := prometheus.GaugeValue
		if m.Kind == server.KindCounter {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(m.Name, help, nil, nil), kind, number(m.Value))
	case server.KindSummary:
		summaryMetric(ch, m.Name, help, m.Summary)
	}
}

// summaryMetric emits a summary with its quantiles: 0.5 for those
// ZooKeeper keeps without percentiles, 0.5 to 0.999 for the others.
func summaryMetric(ch chan<- prometheus.Metric, name, help string, s server.Summary) {
	q := map[float64]float64{0.5: float64(s.P50)}
	if s.Percentiles {
		q[0.95], q[0.99], q[0.999] = float64(s.P95), float64(s.P99), float64(s.P999)
	}
	ch <- prometheus.MustNewConstSummary(prometheus.NewDesc(name, help, nil, nil), uint64(s.Count), float64(s.Sum), q)
}

func number(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
}
