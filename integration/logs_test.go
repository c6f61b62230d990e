package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// jsonLog collects the JSON log lines of one or more servers, as the
// binary writes them with -log-format json.
type jsonLog struct {
	mu    sync.Mutex // guards buf and grown
	buf   bytes.Buffer
	grown chan struct{} // closed at the next Write; nil until someone waits
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.grown != nil {
		close(l.grown)
		l.grown = nil
	}
	return l.buf.Write(p)
}

// next returns a channel closed at the next Write.
func (l *jsonLog) next() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.grown == nil {
		l.grown = make(chan struct{})
	}
	return l.grown
}

// logger returns a logger at level into l, its lines marked with the
// member's id (test_member) when id is not 0.
func (l *jsonLog) logger(level slog.Level, id int) *slog.Logger {
	log := slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: level}))
	if id != 0 {
		log = log.With("test_member", id)
	}
	return log
}

// withLog makes every server log into l at level.
func withLog(l *jsonLog, level slog.Level) servertest.Option {
	return servertest.WithConfig(func(c *server.Config) { c.Logger = l.logger(level, c.ServerID) })
}

// lines parses every line, failing the test on one that is not JSON.
func (l *jsonLog) lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	data := bytes.Clone(l.buf.Bytes())
	l.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(string(data)) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
		out = append(out, m)
	}
	return out
}

// matching returns the lines with message msg whose keys have the values
// in want (numbers as JSON gives them, float64).
func (l *jsonLog) matching(t testing.TB, msg string, want map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range l.lines(t) {
		if m["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if m[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// waitLine waits until a line with message msg and the values in want is
// logged, and returns it.
func (l *jsonLog) waitLine(t testing.TB, msg string, want map[string]any) map[string]any {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		grown := l.next() // before reading, so that no line is missed
		if got := l.matching(t, msg, want); len(got) > 0 {
			return got[0]
		}
		select {
		case <-grown:
		case <-deadline:
			t.Fatalf("no %q line with %v in:\n%s", msg, want, l.String())
		}
	}
}

func (l *jsonLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// hasKeys checks that line has every key in keys.
func hasKeys(t testing.TB, line map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		assert.Contains(t, line, k, "line %v", line)
	}
}

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// A session's creation and its close by its client are logged at Debug,
// as ZooKeeper 3.8 logs "Established session" (and nothing when a client
// closes its session); its expiry at Info, as ZooKeeper's "Expiring
// session".
func TestLogs_SessionEvents(t *testing.T) {
	var debug jsonLog
	srv := servertest.NewServer(t, withLog(&debug, slog.LevelDebug))
	c := mustConnect(t, srv.ConnectString())
	id := c.SessionID()
	created := debug.waitLine(t, "session created", map[string]any{"session": sessionHex(id), "read_only": false})
	assert.Equal(t, "DEBUG", created["level"])
	assert.InDelta(t, 5000, created["timeout_ms"], 0) // mustConnect asks for 5s
	hasKeys(t, created, "peer", "time")
	c.Close()
	closed := debug.waitLine(t, "session closed", map[string]any{"session": sessionHex(id)})
	assert.Equal(t, "DEBUG", closed["level"])
	hasKeys(t, closed, "peer")

	var log jsonLog
	srv = servertest.NewServer(t, withLog(&log, slog.LevelInfo))
	c = mustConnect(t, srv.ConnectString())
	c.Close()
	c2 := mustConnect(t, srv.ConnectString())
	require.True(t, srv.ExpireSession(c2.SessionID()))
	expired := log.waitLine(t, "session expired", map[string]any{"session": sessionHex(c2.SessionID())})
	assert.Equal(t, "INFO", expired["level"])
	assert.InDelta(t, 5000, expired["timeout_ms"], 0)

	// A standalone server's start logs no warning (Raft's election at
	// start is expected), Raft's Info lines stay out at Info, and so do
	// the sessions that came and went before the expiry.
	for _, m := range log.lines(t) {
		assert.Equal(t, "INFO", m["level"], "line %v", m)
		assert.NotEqual(t, "raft", m["component"], "line %v", m)
		assert.NotContains(t, []string{"session created", "session closed"}, m["msg"], "line %v", m)
	}
}

func TestLogs_RequestRejected(t *testing.T) {
	tests := []struct {
		name   string
		cfg    func(*server.Config)
		do     func(t *testing.T, addr string)
		reason string
		level  string
		keys   []string
	}{
		{name: "too many connections from one address",
			cfg: func(c *server.Config) { c.MaxClientCnxns = 1 },
			do: func(t *testing.T, addr string) {
				dialRaw(t, addr).mustSession()
				dialRaw(t, addr).expectClosed()
			},
			reason: "max_client_cnxns", level: "WARN", keys: []string{"peer", "max"}},
		{name: "frame over jute.maxbuffer",
			cfg: func(c *server.Config) { c.JuteMaxBuffer = 1024 },
			do: func(t *testing.T, addr string) {
				c := dialRaw(t, addr)
				c.mustSession()
				c.sendRefused(func(b []byte) []byte { return append(b, make([]byte, 2048)...) })
				c.expectClosed()
			},
			reason: "frame_too_large", level: "WARN", keys: []string{"peer", "len", "max"}},
		{name: "negative frame length",
			do: func(t *testing.T, addr string) {
				c := dialRaw(t, addr)
				c.write(lengthPrefix(-5))
				c.expectClosed()
			},
			reason: "bad_frame", level: "WARN", keys: []string{"peer", "len"}},
		{name: "unknown auth scheme",
			do: func(t *testing.T, addr string) {
				c := dialRaw(t, addr)
				c.mustSession()
				h, _ := c.call(1, wire.OpAuth, (&wire.AuthPacket{Scheme: "kerberos", Auth: []byte("x")}).Append(nil))
				assert.Equal(t, wire.CodeAuthFailed, h.Err)
			},
			reason: "auth_failed", level: "WARN", keys: []string{"peer", "scheme"}},
		{name: "expired session resumed",
			do: func(t *testing.T, addr string) {
				req := connectRequest()
				req.SessionID = 0x7fff_0000_0000_0001
				resp, _ := dialRaw(t, addr).connect(req)
				assert.Zero(t, resp.SessionID)
			},
			reason: "session_expired", level: "INFO", keys: []string{"peer", "session"}},
		{name: "unknown opcode",
			do: func(t *testing.T, addr string) {
				c := dialRaw(t, addr)
				c.mustSession()
				h, _ := c.call(1, wire.Op(999), nil)
				assert.Equal(t, wire.CodeUnimplemented, h.Err)
			},
			reason: "unsupported_op", level: "WARN", keys: []string{"peer", "op"}},
		{name: "four-letter word not allowed",
			cfg: func(c *server.Config) { c.FourLetterWords = []string{"srvr"} },
			do: func(t *testing.T, addr string) {
				assert.Equal(t, []bool{false}, zk.FLWRuok([]string{addr}, waitTimeout))
			},
			reason: "4lw_not_allowed", level: "INFO", keys: []string{"peer", "word"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log jsonLog
			opts := []servertest.Option{withLog(&log, slog.LevelInfo)}
			if tc.cfg != nil {
				opts = append(opts, servertest.WithConfig(tc.cfg))
			}
			srv := servertest.NewServer(t, opts...)
			tc.do(t, srv.ConnectString())
			line := log.waitLine(t, "request rejected", map[string]any{"reason": tc.reason})
			assert.Equal(t, tc.level, line["level"])
			hasKeys(t, line, tc.keys...)
		})
	}
}

func TestLogs_ClusterEvents(t *testing.T) {
	var log jsonLog
	c := servertest.NewCluster(t, 3, withLog(&log, slog.LevelInfo), servertest.WithDurable(),
		servertest.WithConfig(func(c *server.Config) { c.SnapCount = 50 }))
	leader := c.Leader()
	leaderID := float64(leader + 1)

	elected := log.waitLine(t, "leader elected", map[string]any{"leader": leaderID})
	hasKeys(t, elected, "term")
	// Its mode once known, never a guess made before the election.
	log.waitLine(t, "serving clients", map[string]any{"test_member": leaderID, "mode": "leader"})
	for i := range 3 {
		if i != leader {
			joined := log.waitLine(t, "member joined", map[string]any{"sid": float64(i + 1), "test_member": leaderID})
			hasKeys(t, joined, "addr")
		}
	}

	conn := mustConnect(t, c.Addr(leader))
	for i := range 120 {
		mustCreate(t, conn, fmt.Sprintf("/n%d", i), nil)
	}
	snap := log.waitLine(t, "snapshot taken", map[string]any{"test_member": leaderID})
	hasKeys(t, snap, "index", "term", "zxid", "znodes", "bytes", "duration_ms")
	assert.Greater(t, snap["bytes"], float64(0))
	conn.Close()

	follower := (leader + 1) % 3
	log.waitLine(t, "snapshot taken", map[string]any{"test_member": float64(follower + 1)}) // restored on restart
	c.Kill(follower)
	lost := log.waitLine(t, "member lost", map[string]any{"sid": float64(follower + 1), "test_member": leaderID})
	assert.Equal(t, "WARN", lost["level"])
	c.Restart(follower)
	log.waitLine(t, "snapshot restored", map[string]any{"test_member": float64(follower + 1)})

	c.Kill(leader)
	other := float64((leader+2)%3 + 1)
	lostLeader := log.waitLine(t, "leader lost", map[string]any{"leader": leaderID, "test_member": other})
	assert.Equal(t, "WARN", lostLeader["level"])
	log.waitLine(t, "leader elected", map[string]any{"test_member": other})

	// Raft's lines keep their level: at Info only its warnings and errors
	// pass, never re-labelled as Info. A member down is logged once, as
	// "member lost", not at each heartbeat or append that fails to reach it.
	for _, m := range log.lines(t) {
		if m["component"] == "raft" {
			assert.Contains(t, []any{"WARN", "ERROR"}, m["level"], "line %v", m)
			assert.NotContains(t, m["msg"], "[", "line %v", m)
			assert.NotContains(t, []any{"failed to heartbeat to", "failed to appendEntries to", "failed to contact",
				"failed to pipeline appendEntries"}, m["msg"], "line %v", m)
		}
	}
}

// A session that expires on the leader's tick, or when a fake clock is
// moved past its timeout, gets its "session expired" line with the
// timeout it had (taken before its expiry is proposed: the timeout is
// gone once the expiry is applied).
func TestLogs_SessionExpiredOnTheTick(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  servertest.Option
		fake bool // the test moves the clock past the timeout
	}{
		{"tick", servertest.WithConfig(func(c *server.Config) { c.TickTime = 50 * time.Millisecond }), false},
		{"fake clock", servertest.WithFakeClock(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log jsonLog
			srv := servertest.NewServer(t, withLog(&log, slog.LevelInfo), tc.opt)
			c := dialRaw(t, srv.ConnectString())
			c.sendFrame((&wire.ConnectRequest{TimeOut: 200, Passwd: make([]byte, 16)}).Append)
			c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
			frame, err := c.fr.Next()
			require.NoError(t, err)
			var resp wire.ConnectResponse
			_, err = resp.Decode(frame)
			require.NoError(t, err)
			require.NotZero(t, resp.SessionID)
			c.nc.Close() // no closeSession: the session is to expire
			if tc.fake {
				srv.Advance(time.Duration(resp.TimeOut)*time.Millisecond + 2*time.Second)
			}
			expired := log.waitLine(t, "session expired", map[string]any{"session": sessionHex(resp.SessionID)})
			assert.Equal(t, "INFO", expired["level"])
			assert.InDelta(t, float64(resp.TimeOut), expired["timeout_ms"], 0)
		})
	}
}
