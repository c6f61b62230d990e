package admin

import (
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/server"
)

// defaultTraceMask is ZooKeeper's default trace mask (ZooTrace), which
// get_trace_mask reports until set_trace_mask changes it.
const defaultTraceMask = 306

// command is one AdminServer command: its long name (the one /commands
// lists and responses carry), its short names, and what it answers.
type command struct {
	name  string
	short []string
	run   func(a *Admin, r *http.Request) (*object, error)
}

// anytime are the commands that answer while the member does not serve;
// the others then answer notServing, as ZooKeeper's that need a running
// server do.
var anytime = map[string]bool{"environment": true, "get_trace_mask": true, "monitor": true,
	"set_trace_mask": true, "system_properties": true, "zabstate": true}

// notServing is the error of a command that needs a serving member.
const notServing = "This ZooKeeper instance is not currently serving requests"

// commands are ZooKeeper 3.8.0's AdminServer commands, by long name.
var commands = []command{
	{"configuration", []string{"conf", "config"}, (*Admin).configuration},
	{"connection_stat_reset", []string{"crst"}, func(a *Admin, _ *http.Request) (*object, error) {
		a.srv.ResetConnectionStats()
		return &object{}, nil
	}},
	{"connections", []string{"cons"}, (*Admin).connections},
	{"dirs", nil, func(a *Admin, _ *http.Request) (*object, error) {
		data, logs := a.srv.DirSizes()
		return (&object{}).add("datadir_size", data).add("logdir_size", logs), nil
	}},
	{"dump", nil, (*Admin).dump},
	{"environment", []string{"env", "envi"}, func(a *Admin, _ *http.Request) (*object, error) {
		return properties(a.srv.Environment()), nil
	}},
	{"get_trace_mask", []string{"gtmk"}, func(a *Admin, _ *http.Request) (*object, error) {
		return (&object{}).add("tracemask", a.traceMask.Load()), nil
	}},
	{"hash", nil, func(a *Admin, _ *http.Request) (*object, error) {
		zxid, digest := a.srv.Digest()
		// ZooKeeper's digests are Java longs: the same 64 bits, signed.
		return (&object{}).add("digests", []object{{{"zxid", zxid}, {"digest", int64(digest)}}}), nil
	}},
	{"initial_configuration", []string{"icfg"}, func(a *Admin, _ *http.Request) (*object, error) {
		return (&object{}).add("initial_configuration", a.initialConfiguration()), nil
	}},
	{"is_read_only", []string{"isro"}, func(a *Admin, _ *http.Request) (*object, error) {
		return (&object{}).add("read_only", a.srv.Mode() == "read-only"), nil
	}},
	{"last_snapshot", []string{"lsnp"}, (*Admin).lastSnapshot},
	{"leader", []string{"lead"}, (*Admin).leader},
	{"monitor", []string{"mntr"}, (*Admin).monitor},
	{"observer_connection_stat_reset", []string{"orst"}, func(*Admin, *http.Request) (*object, error) {
		return &object{}, nil // observers keep no per-connection statistics here
	}},
	{"observers", []string{"obsr"}, (*Admin).observers},
	{"ruok", nil, func(*Admin, *http.Request) (*object, error) { return &object{}, nil }},
	{"server_stats", []string{"srvr"}, func(a *Admin, _ *http.Request) (*object, error) {
		return a.serverStats(a.monitorValues()), nil
	}},
	{"set_trace_mask", []string{"stmk"}, (*Admin).setTraceMask},
	{"stat_reset", []string{"srst"}, func(a *Admin, _ *http.Request) (*object, error) {
		a.srv.ResetStats()
		return &object{}, nil
	}},
	{"stats", []string{"stat"}, (*Admin).stats},
	{"system_properties", []string{"sysp"}, (*Admin).systemProperties},
	{"voting_view", nil, (*Admin).votingView},
	{"watch_summary", []string{"wchs"}, func(a *Admin, _ *http.Request) (*object, error) {
		conns, paths, total := a.srv.WatchSummary()
		return (&object{}).add("num_connections", conns).add("num_paths", paths).add("num_total_watches", total), nil
	}},
	{"watches", []string{"wchc"}, (*Admin).watches},
	{"watches_by_path", []string{"wchp"}, (*Admin).watchesByPath},
	{"zabstate", nil, (*Admin).zabState},
}

// lookup finds a command by long or short name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name || slices.Contains(c.short, name) {
			return c, true
		}
	}
	return command{}, false
}

// CommandNames returns the long names of the commands /commands lists.
func CommandNames() []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = c.name
	}
	return out
}

// listCommands answers /commands as ZooKeeper does: a link per command.
func (a *Admin) listCommands(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	for _, name := range CommandNames() {
		u := html.EscapeString(a.cfg.CommandURL + "/" + name)
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n<br/>\n", u, name)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

// command answers /commands/<name>: the command's fields, then "command"
// (its long name) and "error" (null); a command that fails answers only
// "error" and "command"; an unknown name answers "command" as asked and
// "error": "Unknown command: <name>". All with status 200, as ZooKeeper.
func (a *Admin) command(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	c, ok := lookup(name)
	var out *object
	switch {
	case !ok:
		out = (&object{}).add("command", name).add("error", "Unknown command: "+name)
	case !anytime[c.name] && !a.serving():
		out = (&object{}).add("command", name).add("error", notServing)
	default:
		res, err := c.run(a, r)
		if err != nil {
			out = (&object{}).add("error", err.Error()).add("command", c.name)
		} else {
			out = res.add("command", c.name).add("error", nil)
		}
	}
	body, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		http.Error(w, "admin: encode "+c.name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
}

// serving reports whether the member serves clients, read-only ones
// included.
func (a *Admin) serving() bool {
	return a.srv.Serving() || a.srv.Mode() == "read-only"
}

// properties turns key=value lines into an object.
func properties(ps []server.Property) *object {
	o := &object{}
	for _, p := range ps {
		o.add(p.Key, p.Value)
	}
	return o
}

func (a *Admin) configuration(*http.Request) (*object, error) {
	cfg := a.srv.Config()
	data, logs := a.srv.DataDirs()
	return (&object{}).add("client_port", a.srv.ClientPort()).add("data_dir", data).add("data_log_dir", logs).
		add("tick_time", cfg.TickTime.Milliseconds()).add("max_client_cnxns", max(cfg.MaxClientCnxns, 0)).
		add("min_session_timeout", cfg.MinSessionTimeout.Milliseconds()).
		add("max_session_timeout", cfg.MaxSessionTimeout.Milliseconds()).
		add("server_id", cfg.ServerID).add("client_port_listen_backlog", -1), nil
}

// connection is one connection as cons's JSON shows it; brief is stat's
// shorter form.
func connection(c server.ConnInfo, brief bool) object {
	o := object{{"remote_socket_address", c.Remote}, {"interest_ops", 1}, {"outstanding_requests", c.Queued},
		{"packets_received", c.Received}, {"packets_sent", c.Sent}}
	if brief {
		return o
	}
	var lastResp int64
	if !c.LastResponse.IsZero() {
		lastResp = c.LastResponse.UnixMilli()
	}
	return append(o, field{"session_id", c.Session}, field{"last_operation", c.LastOp},
		field{"established", c.Established.UnixMilli()}, field{"session_timeout", c.Timeout.Milliseconds()},
		field{"last_cxid", c.LastCxid}, field{"last_zxid", c.LastZxid}, field{"last_response_time", lastResp},
		field{"last_latency", c.LastLatency}, field{"min_latency", c.MinLatency},
		field{"avg_latency", c.AvgLatency}, field{"max_latency", c.MaxLatency})
}

func (a *Admin) connectionList(brief bool) []object {
	out := []object{}
	for _, c := range a.srv.Connections() {
		out = append(out, connection(c, brief))
	}
	return out
}

func (a *Admin) connections(*http.Request) (*object, error) {
	return (&object{}).add("connections", a.connectionList(false)).add("secure_connections", []object{}), nil
}

func (a *Admin) dump(*http.Request) (*object, error) {
	expiry := object{}
	byTime := a.srv.SessionExpiry()
	for _, at := range sortedKeys(byTime) {
		expiry = append(expiry, field{strconv.FormatInt(at, 10), byTime[at]})
	}
	ephemerals := object{}
	bySession := a.srv.Ephemerals()
	for _, id := range sortedKeys(bySession) {
		ephemerals = append(ephemerals, field{strconv.FormatInt(id, 10), bySession[id]})
	}
	return (&object{}).add("expiry_time_to_session_ids", expiry).add("session_id_to_ephemeral_paths", ephemerals), nil
}

// lastSnapshot answers zxid ffffffffffffffff and timestamp -1 before the
// first snapshot, as ZooKeeper does when it has none.
func (a *Admin) lastSnapshot(*http.Request) (*object, error) {
	zxid, at, ok := a.srv.LastSnapshot()
	ts := int64(-1)
	if ok {
		ts = at.Unix()
	} else {
		zxid = -1
	}
	return (&object{}).add("zxid", strconv.FormatUint(uint64(zxid), 16)).add("timestamp", ts), nil
}

func (a *Admin) leader(*http.Request) (*object, error) {
	if len(a.srv.Config().Servers) == 0 {
		return nil, errString("server is not initialized") // ZooKeeper's answer on a standalone server
	}
	st := a.srv.RaftStatus()
	id, host := int64(st.LeaderID), ""
	if id == 0 {
		id = -1 // none known (a short election the member serves through), as ZooKeeper's peer says
	} else {
		host, _, _ = net.SplitHostPort(st.LeaderAddr)
	}
	return (&object{}).add("is_leader", st.State == "Leader").add("leader_id", id).add("leader_ip", host), nil
}

func (a *Admin) setTraceMask(r *http.Request) (*object, error) {
	q := r.URL.Query()
	if !q.Has("traceMask") {
		return nil, errString("setTraceMask requires long traceMask argument")
	}
	mask, err := strconv.ParseInt(q.Get("traceMask"), 10, 64)
	if err != nil {
		return nil, errString("setTraceMask requires long traceMask argument, got " + q.Get("traceMask"))
	}
	a.traceMask.Store(mask)
	return (&object{}).add("tracemask", mask), nil
}

func (a *Admin) watches(*http.Request) (*object, error) {
	bySession := make(map[int64][]string)
	for _, w := range a.srv.Watches() {
		if w.Kind == server.DataWatch { // wchc lists the data watches, as ZooKeeper's
			bySession[w.Session] = append(bySession[w.Session], w.Path)
		}
	}
	o := object{}
	for _, id := range sortedKeys(bySession) {
		o = append(o, field{strconv.FormatInt(id, 10), bySession[id]})
	}
	return (&object{}).add("session_id_to_watched_paths", o), nil
}

func (a *Admin) watchesByPath(*http.Request) (*object, error) {
	byPath := make(map[string][]int64)
	var paths []string
	for _, w := range a.srv.Watches() { // ordered by path, then session
		if w.Kind != server.DataWatch {
			continue
		}
		if _, ok := byPath[w.Path]; !ok {
			paths = append(paths, w.Path)
		}
		byPath[w.Path] = append(byPath[w.Path], w.Session)
	}
	o := object{}
	for _, p := range paths {
		o = append(o, field{p, byPath[p]})
	}
	return (&object{}).add("path_to_session_ids", o), nil
}

// errString is a command's error, shown in its "error" field.
type errString string

func (e errString) Error() string { return string(e) }

func sortedKeys[K int64 | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
