package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-zookeeper's Conn.Close does not wait for its goroutines.
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("time.Sleep"),
	)
}

// startAdmin starts an admin listener for srv on a free loopback port,
// closed when the test ends.
func startAdmin(t testing.TB, srv admin.Server) *admin.Admin {
	t.Helper()
	a, err := admin.New(srv, admin.Config{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	t.Cleanup(func() { a.Close() })
	return a
}

// get fetches url and returns the status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// command fetches /commands/<name> and decodes its JSON, in key order.
func command(t testing.TB, a *admin.Admin, name string) (map[string]any, []string) {
	t.Helper()
	status, body := get(t, a.URL()+"/commands/"+name)
	require.Equal(t, http.StatusOK, status, body)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	return m, jsonKeys(t, body)
}

// jsonKeys returns the top-level keys of a JSON object in order.
func jsonKeys(t testing.TB, body string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
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

// connect opens a go-zookeeper client to addr, closed when the test ends.
func connect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(nopLogger{}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatal("no session within 10s")
		}
	}
	return c
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAdmin_CommandsListsEveryCommand(t *testing.T) {
	a := startAdmin(t, servertest.NewServer(t).Server)
	status, body := get(t, a.URL()+"/commands")
	require.Equal(t, http.StatusOK, status)
	for _, name := range admin.CommandNames() {
		assert.Contains(t, body, `<a href="/commands/`+name+`">`+name+`</a>`)
	}
	status, slash := get(t, a.URL()+"/commands/")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, body, slash, "with a trailing slash too")
	assert.Len(t, admin.CommandNames(), 26, "ZooKeeper 3.8.0 lists 26 commands")
}

func TestAdmin_EveryCommandAnswersWithCommandAndError(t *testing.T) {
	a := startAdmin(t, servertest.NewServer(t).Server)
	// Errors a standalone server answers, as ZooKeeper's does.
	wantErr := map[string]string{
		"leader":         "server is not initialized",
		"set_trace_mask": "setTraceMask requires long traceMask argument",
	}
	for _, name := range admin.CommandNames() {
		t.Run(name, func(t *testing.T) {
			m, keys := command(t, a, name)
			assert.Equal(t, name, m["command"])
			if e, ok := wantErr[name]; ok {
				assert.Equal(t, e, m["error"])
				assert.Equal(t, []string{"error", "command"}, keys)
				return
			}
			assert.Nil(t, m["error"])
			assert.Equal(t, []string{"command", "error"}, keys[len(keys)-2:], "command and error come last")
		})
	}
}

func TestAdmin_ShortNames(t *testing.T) {
	a := startAdmin(t, servertest.NewServer(t).Server)
	tests := map[string]string{
		"mntr": "monitor", "srvr": "server_stats", "stat": "stats", "cons": "connections", "crst": "connection_stat_reset",
		"wchs": "watch_summary", "wchc": "watches", "wchp": "watches_by_path", "isro": "is_read_only", "envi": "environment",
		"conf": "configuration", "gtmk": "get_trace_mask", "stmk": "set_trace_mask", "lsnp": "last_snapshot",
		"orst": "observer_connection_stat_reset", "obsr": "observers", "srst": "stat_reset", "sysp": "system_properties",
		"icfg": "initial_configuration", "lead": "leader",
	}
	for short, long := range tests {
		m, _ := command(t, a, short)
		assert.Equal(t, long, m["command"], short)
	}
}

func TestAdmin_UnknownCommand(t *testing.T) {
	a := startAdmin(t, servertest.NewServer(t).Server)
	for _, name := range []string{"nosuch", "snapshot"} { // ZooKeeper 3.8.0 has no snapshot command
		m, keys := command(t, a, name)
		assert.Equal(t, []string{"command", "error"}, keys)
		assert.Equal(t, name, m["command"])
		assert.Equal(t, "Unknown command: "+name, m["error"])
	}
}

func TestAdmin_SetTraceMask(t *testing.T) {
	a := startAdmin(t, servertest.NewServer(t).Server)
	m, _ := command(t, a, "get_trace_mask")
	assert.InDelta(t, 306, m["tracemask"], 0)
	m, _ = command(t, a, "set_trace_mask")
	assert.Equal(t, "setTraceMask requires long traceMask argument", m["error"])
	m, _ = command(t, a, "set_trace_mask?traceMask=notanumber")
	assert.Equal(t, "setTraceMask requires long traceMask argument, got notanumber", m["error"])
	m, _ = command(t, a, "set_trace_mask?traceMask=0")
	assert.InDelta(t, 0, m["tracemask"], 0)
	m, _ = command(t, a, "gtmk")
	assert.InDelta(t, 0, m["tracemask"], 0)
}

// TestAdmin_MonitorMatchesMntr checks that /commands/monitor carries
// mntr's keys in mntr's order, with values that follow the requests.
func TestAdmin_MonitorMatchesMntr(t *testing.T) {
	srv := servertest.NewServer(t)
	a := startAdmin(t, srv.Server)
	c := connect(t, srv.ConnectString())
	for i := range 20 {
		_, err := c.Create("/n"+string(rune('a'+i)), []byte("data"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		_, _, err = c.Get("/n" + string(rune('a'+i)))
		require.NoError(t, err)
	}
	m, keys := command(t, a, "monitor")
	var mntrKeys []string
	for _, line := range strings.Split(strings.TrimSpace(fourLetter(t, srv.ConnectString(), "mntr")), "\n") {
		k, _, _ := strings.Cut(line, "\t")
		mntrKeys = append(mntrKeys, strings.TrimPrefix(k, "zk_"))
	}
	assert.Equal(t, append(mntrKeys, "command", "error"), keys)
	assert.InDelta(t, 20, m["cnt_updatelatency"], 0, "creates")
	assert.GreaterOrEqual(t, m["cnt_readlatency"], 20.0, "gets")
	assert.InDelta(t, 25, m["znode_count"], 0, "20 nodes, /, /zookeeper, its config and quota, and ZooKeeper's double-counted root")
	assert.InDelta(t, 20, m["commit_count"].(float64)-1, 0, "the session's creation and 20 creates")
	assert.Greater(t, m["open_file_descriptor_count"], 0.0)
	assert.Greater(t, m["max_file_descriptor_count"], 0.0)
	assert.Greater(t, m["response_bytes"], 0.0)
	assert.Greater(t, m["bytes_received_count"], 0.0)
	assert.GreaterOrEqual(t, m["max_client_response_size"], m["min_client_response_size"])
	assert.InDelta(t, 1, m["connection_request_count"], 0)
}

func TestAdmin_ConnectionsWatchesDump(t *testing.T) {
	srv := servertest.NewServer(t)
	a := startAdmin(t, srv.Server)
	c := connect(t, srv.ConnectString())
	_, err := c.Create("/a", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = c.Create("/a/e", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, _, _, err = c.GetW("/a")
	require.NoError(t, err)
	_, _, _, err = c.ExistsW("/b")
	require.NoError(t, err)
	id := strconv.FormatInt(c.SessionID(), 10)

	m, _ := command(t, a, "connections")
	conns := m["connections"].([]any)
	require.Len(t, conns, 1)
	conn := conns[0].(map[string]any)
	assert.Equal(t, "EXIS", conn["last_operation"], "the last request was an exists")
	assert.InDelta(t, float64(c.SessionID()), conn["session_id"], 1e3)

	m, _ = command(t, a, "watches")
	assert.ElementsMatch(t, []any{"/a", "/b"}, m["session_id_to_watched_paths"].(map[string]any)[id])
	m, _ = command(t, a, "watches_by_path")
	assert.Len(t, m["path_to_session_ids"].(map[string]any)["/a"], 1)
	m, _ = command(t, a, "watch_summary")
	assert.InDelta(t, 2, m["num_paths"], 0)
	m, _ = command(t, a, "dump")
	assert.Equal(t, []any{"/a/e"}, m["session_id_to_ephemeral_paths"].(map[string]any)[id])
	assert.Len(t, m["expiry_time_to_session_ids"], 1)
	m, _ = command(t, a, "hash")
	assert.Len(t, m["digests"], 1)
}

func TestAdmin_HandleMountsMoreHandlers(t *testing.T) {
	a := startAdmin(t, servertest.NewServer(t).Server)
	a.Handle("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "console at "+r.URL.Path)
	}))
	status, body := get(t, a.URL()+"/console/tree")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "console at /console/tree", body)
}

func TestConfig_RejectsBadSettings(t *testing.T) {
	srv := servertest.NewServer(t).Server
	for _, cfg := range []admin.Config{
		{Addr: "no-port"},
		{Addr: "127.0.0.1:99999"},
		{Addr: "127.0.0.1:0", CommandURL: "commands"},
		{Addr: "127.0.0.1:0", CommandURL: "/commands/"},
	} {
		_, err := admin.New(srv, cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

func TestParseZooCfg(t *testing.T) {
	tests := []struct {
		name    string
		cfg     string
		addr    string
		enabled bool
		wantErr bool
	}{
		{"none", "tickTime=2000\n", "127.0.0.1:8080", false, false},
		{"admin on", "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=18080\n", "127.0.0.1:18080", true, false},
		{"admin off", "admin.enableServer=false\nadmin.serverPort=18080\n", "127.0.0.1:18080", false, false},
		{"metrics port turns it on", "metricsProvider.className=x\nmetricsProvider.httpPort=7000\n", "127.0.0.1:7000", true, false},
		{"bad port", "admin.enableServer=true\nadmin.serverPort=http\n", "", false, true},
		{"bad bool", "admin.enableServer=maybe\n", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props, err := server.ReadProperties(strings.NewReader(tt.cfg))
			require.NoError(t, err)
			cfg, enabled, _, err := admin.ParseZooCfg(props)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.addr, cfg.Addr)
			assert.Equal(t, tt.enabled, enabled)
		})
	}
}

func TestAdmin_ShutdownStopsServing(t *testing.T) {
	srv := servertest.NewServer(t).Server
	a, err := admin.New(srv, admin.Config{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	url := a.URL()
	status, _ := get(t, url+"/livez")
	require.Equal(t, http.StatusOK, status)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, a.Shutdown(ctx))
	_, err = http.Get(url + "/livez")
	assert.Error(t, err, "the listener is closed")
	assert.ErrorIs(t, a.Start(), admin.ErrClosed)
}
