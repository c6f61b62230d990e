package admin

import (
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/server"
)

// monitorValues returns the mntr figures by name, each as the JSON value
// monitor shows (a summary under each of its keys).
func (a *Admin) monitorValues() *object {
	o := &object{}
	for _, m := range a.srv.Monitor() {
		if m.Kind != server.KindSummary {
			o.add(m.Name, m.Value)
			continue
		}
		v := m.Summary
		o.add("avg_"+m.Name, v.Avg).add("min_"+m.Name, v.Min).
			add("max_"+m.Name, v.Max).add("cnt_"+m.Name, v.Count).add("sum_"+m.Name, v.Sum)
		if v.Percentiles {
			o.add("p50_"+m.Name, v.P50).add("p95_"+m.Name, v.P95).add("p99_"+m.Name, v.P99).add("p999_"+m.Name, v.P999)
		}
	}
	return o
}

func (a *Admin) monitor(*http.Request) (*object, error) { return a.monitorValues(), nil }

// get returns a monitor figure by name, nil if absent.
func (o *object) get(name string) any {
	for _, f := range *o {
		if f.key == name {
			return f.value
		}
	}
	return nil
}

// serverStats is srvr's JSON, from mntr's figures.
func (a *Admin) serverStats(m *object) *object {
	data, logs := a.srv.DirSizes()
	zxid, _ := a.srv.Digest()
	buffer := func(name string) object { // a BufferStats: last, min and max of mntr's <name>_size
		return object{{"last_buffer_size", m.get("last_" + name + "_size")},
			{"min_buffer_size", m.get("min_" + name + "_size")}, {"max_buffer_size", m.get("max_" + name + "_size")}}
	}
	stats := object{{"packets_sent", m.get("packets_sent")}, {"packets_received", m.get("packets_received")},
		{"fsync_threshold_exceed_count", a.srv.FsyncThresholdExceeded()},
		{"client_response_stats", buffer("client_response")},
		{"data_dir_size", data}, {"log_dir_size", logs}, {"provider_null", false},
		{"server_state", m.get("server_state")}, {"last_processed_zxid", zxid},
		{"outstanding_requests", m.get("outstanding_requests")}, {"avg_latency", m.get("avg_latency")},
		{"max_latency", m.get("max_latency")}, {"min_latency", m.get("min_latency")},
		{"num_alive_client_connections", m.get("num_alive_connections")},
		{"auth_failed_count", m.get("auth_failed_count")},
		{"non_mtlsremote_conn_count", m.get("non_mtls_remote_conn_count")},
		{"non_mtlslocal_conn_count", m.get("non_mtls_local_conn_count")}, {"uptime", m.get("uptime")}}
	o := (&object{}).add("version", m.get("version")).
		add("read_only", a.srv.Mode() == "read-only").add("server_stats", stats).
		add("client_response", buffer("client_response"))
	if m.get("last_proposal_size") != nil { // a leader's
		o.add("proposal_stats", buffer("proposal"))
	}
	return o.add("node_count", m.get("znode_count"))
}

func (a *Admin) stats(*http.Request) (*object, error) {
	return a.serverStats(a.monitorValues()).add("connections", a.connectionList(true)).
		add("secure_connections", []object{}), nil
}

func (a *Admin) observers(*http.Request) (*object, error) {
	m := a.monitorValues()
	synced := m.get("synced_observers")
	if synced == nil {
		synced = int64(0) // only a leader counts its synced observers
	}
	list := []object{}
	for _, p := range a.srv.Members() {
		if p.Observer {
			list = append(list, object{{"sid", p.ID}, {"quorum_address", p.RaftAddr}})
		}
	}
	return (&object{}).add("synced_observers", synced).add("observers", list), nil
}

func (a *Admin) votingView(*http.Request) (*object, error) {
	view := object{}
	self := a.srv.Config().ServerID
	for _, p := range a.srv.Members() {
		if p.Observer {
			continue // the voting view: participants only
		}
		client := p.Client
		if p.ID == self && client == "" {
			client = net.JoinHostPort(clientHost(a.srv.Config().ClientPortAddress), strconv.Itoa(a.srv.ClientPort()))
		}
		view = append(view, field{strconv.Itoa(p.ID), object{{"server_addresses", []string{p.RaftAddr}},
			{"election_addresses", []string{p.ForwardAddr}}, {"client_address", client}, {"learner_type", "participant"}}})
	}
	return (&object{}).add("current_config", view), nil
}

func clientHost(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	return host
}

// zabState answers zabstate. Epoch and counter split the last applied
// zxid as ZooKeeper splits its own; a zkraft zxid is a Raft index, so the
// epoch is 0 and the counter the index.
func (a *Admin) zabState(*http.Request) (*object, error) {
	cfg := a.srv.Config()
	if len(cfg.Servers) == 0 {
		return (&object{}).add("voting", false).add("zabstate", ""), nil
	}
	var self server.Peer
	for _, p := range a.srv.Members() {
		if p.ID == cfg.ServerID {
			self = p
		}
	}
	st := a.srv.RaftStatus()
	zxid, _ := a.srv.Digest()
	state := "broadcast"
	if !a.srv.Serving() {
		state = "election"
	}
	client := net.JoinHostPort(clientHost(cfg.ClientPortAddress), strconv.Itoa(a.srv.ClientPort()))
	return (&object{}).add("myid", cfg.ServerID).add("is_leader", st.State == "Leader").
		add("quorum_address", addresses(self.RaftAddr)).add("election_address", addresses(self.ForwardAddr)).
		add("client_address", client).add("voting", !self.Observer).add("last_zxid", "0x"+strconv.FormatInt(zxid, 16)).
		add("zab_epoch", zxid>>32).add("zab_counter", zxid&0xffffffff).add("zabstate", state), nil
}

// addresses describes one address as ZooKeeper's MultipleAddresses bean.
func addresses(addr string) object {
	host, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	list := []string{addr}
	return object{{"empty", addr == ""}, {"all_addresses", list}, {"all_reachable_addresses", list},
		{"one", addr}, {"reachable_address", addr}, {"wildcard_addresses", []string{net.JoinHostPort("0.0.0.0", port)}},
		{"all_ports", []int{n}}, {"all_host_strings", []string{host}}, {"all_reachable_addresses_or_all", list},
		{"reachable_or_one", addr}}
}

// systemProperties answers sysp with the Go process's equivalents of
// Java's platform properties, and a zookeeper.<key> entry for each
// zoo.cfg key ZooKeeper would turn into a system property.
func (a *Admin) systemProperties(*http.Request) (*object, error) {
	o := &object{}
	env := map[string]string{}
	for _, p := range a.srv.Environment() {
		env[p.Key] = p.Value
	}
	o.add("file.encoding", "UTF-8").add("file.separator", string(os.PathSeparator)).
		add("line.separator", "\n").add("os.arch", runtime.GOARCH).add("os.name", env["os.name"]).
		add("os.version", env["os.version"]).add("path.separator", string(os.PathListSeparator)).
		add("user.dir", env["user.dir"]).add("user.home", env["user.home"]).add("user.name", env["user.name"]).
		add("user.timezone", zoneName())
	for _, p := range a.configProperties() {
		if !coreKeys[p.Key] {
			key := p.Key
			if !strings.HasPrefix(key, "zookeeper.") && !strings.HasPrefix(key, "znode.") {
				key = "zookeeper." + key
			}
			o.add(key, p.Value)
		}
	}
	return o, nil
}

// coreKeys are zoo.cfg keys ZooKeeper's QuorumPeerConfig reads itself;
// it sets the others as system properties.
var coreKeys = map[string]bool{"dataDir": true, "dataLogDir": true, "clientPort": true, "clientPortAddress": true,
	"secureClientPort": true, "secureClientPortAddress": true, "tickTime": true, "maxClientCnxns": true,
	"minSessionTimeout": true, "maxSessionTimeout": true, "initLimit": true, "syncLimit": true,
	"connectToLearnerMasterLimit": true, "electionAlg": true, "quorumListenOnAllIPs": true, "peerType": true,
	"syncEnabled": true, "dynamicConfigFile": true, "autopurge.snapRetainCount": true,
	"autopurge.purgeInterval": true, "standaloneEnabled": true, "reconfigEnabled": true,
	"sslQuorum": true, "portUnification": true, "localSessionsEnabled": true,
	"localSessionsUpgradingEnabled": true, "metricsProvider.className": true}

// configProperties returns the zoo.cfg keys the server started from.
func (a *Admin) configProperties() []server.Property {
	props, err := server.ReadProperties(strings.NewReader(a.initialConfiguration()))
	if err != nil {
		a.log.Warn("admin: reading the initial configuration", "err", err)
	}
	return props
}

// initialConfiguration is the zoo.cfg text the server started from, or
// the lines its configuration implies.
func (a *Admin) initialConfiguration() string {
	if a.cfg.InitialConfiguration != "" {
		return a.cfg.InitialConfiguration
	}
	cfg := a.srv.Config()
	var b strings.Builder
	b.WriteString("tickTime=" + strconv.FormatInt(cfg.TickTime.Milliseconds(), 10) + "\n")
	b.WriteString("initLimit=" + strconv.Itoa(cfg.InitLimit) + "\n")
	b.WriteString("syncLimit=" + strconv.Itoa(cfg.SyncLimit) + "\n")
	if cfg.DataDir != "" {
		b.WriteString("dataDir=" + cfg.DataDir + "\n")
	}
	b.WriteString("clientPort=" + strconv.Itoa(a.srv.ClientPort()) + "\n")
	b.WriteString("clientPortAddress=" + clientHost(cfg.ClientPortAddress) + "\n")
	for _, p := range a.srv.Members() {
		b.WriteString(memberLine(p) + "\n")
	}
	return b.String()
}

func memberLine(p server.Peer) string {
	host, raftPort, _ := net.SplitHostPort(p.RaftAddr)
	_, fwdPort, _ := net.SplitHostPort(p.ForwardAddr)
	line := "server." + strconv.Itoa(p.ID) + "=" + host + ":" + raftPort + ":" + fwdPort
	if p.Observer {
		line += ":observer"
	}
	return line
}

// zoneName is the local time zone's name, as Java's user.timezone gives it.
func zoneName() string {
	name, _ := time.Now().Zone()
	return name
}
