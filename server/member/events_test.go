package member

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
)

// TestRaftLogger_Levels checks what Raft's lines become in the member's
// log at Info: warnings and errors keep their level, but for those
// expected at start (an election) or at stop (the listener closing).
func TestRaftLogger_Levels(t *testing.T) {
	tests := []struct {
		name      string
		msg       string
		warn      bool // else Info
		starting  bool
		stopping  bool
		wantLevel string // "" when not logged
	}{
		{name: "election at start", msg: "heartbeat timeout reached, starting election", warn: true, starting: true},
		{name: "election later", msg: "heartbeat timeout reached, starting election", warn: true, wantLevel: "WARN"},
		{name: "split vote at start", msg: "Election timeout reached, restarting election", warn: true, starting: true},
		{name: "split vote later", msg: "Election timeout reached, restarting election", warn: true, wantLevel: "WARN"},
		{name: "other warnings", msg: "failed to contact quorum of nodes, stepping down", warn: true, starting: true, wantLevel: "WARN"},
		{name: "listener closed at stop", msg: "failed to accept connection", warn: true, stopping: true},
		{name: "listener failing", msg: "failed to accept connection", warn: true, wantLevel: "WARN"},
		{name: "info is for debugging", msg: "entering leader state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n := New(Config{TickTime: time.Second, SyncLimit: 5,
				Logger: slog.New(slog.NewJSONHandler(&buf, nil))}, raftfsm.New(nil), nopHost{})
			n.started = time.Now()
			if !tc.starting {
				n.started = n.started.Add(-time.Minute)
			}
			if tc.stopping {
				close(n.quit)
			}
			l := n.raftLogger()
			if tc.warn {
				l.Warn(tc.msg, "k", "v")
			} else {
				l.Info(tc.msg, "k", "v")
			}
			if tc.wantLevel == "" {
				assert.Empty(t, buf.String())
				return
			}
			var got map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
			assert.Equal(t, tc.wantLevel, got["level"])
			assert.Equal(t, tc.msg, got["msg"])
			assert.Equal(t, "raft", got["component"])
			assert.Equal(t, "v", got["k"])
		})
	}
}

// TestRaftLogger_Debug checks that at Debug every Raft line but Trace
// (every RPC) shows, an expected warning at Debug and the others at Warn.
func TestRaftLogger_Debug(t *testing.T) {
	var buf bytes.Buffer
	n := New(Config{TickTime: time.Second, SyncLimit: 5,
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}, raftfsm.New(nil), nopHost{})
	n.started = time.Now()
	l := n.raftLogger()
	l.Trace("t")
	l.Debug("d")
	l.Info("i")
	l.Warn("heartbeat timeout reached, starting election")
	l.Warn("w")
	l.Error("e")
	var levels []string
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		levels = append(levels, m["msg"].(string)+"="+m["level"].(string))
	}
	assert.Equal(t, []string{"d=DEBUG", "i=INFO", "heartbeat timeout reached, starting election=DEBUG",
		"w=WARN", "e=ERROR"}, levels)
}

// TestSnapshots_Logged takes a snapshot into an in-memory store, which
// keeps the captured state (a Keeper, through the counting sink), and
// restores it elsewhere: one line each, with their keys.
func TestSnapshots_Logged(t *testing.T) {
	var buf bytes.Buffer
	n := New(Config{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}, raftfsm.New(nil), nopHost{})
	fsm := loggedFSM{notifyingFSM{FSM: n.fsm, committed: func(uint64, uint64) {}}, n}
	store := loggedSnapshots{&memSnapshotStore{}}

	snap, err := fsm.Snapshot()
	require.NoError(t, err)
	sink, err := store.Create(raft.SnapshotVersionMax, 10, 2, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	require.NoError(t, snap.Persist(sink))
	require.NoError(t, sink.Close())
	snap.Release()
	metas, err := store.List()
	require.NoError(t, err)
	require.Len(t, metas, 1)
	_, rc, err := store.Open(metas[0].ID)
	require.NoError(t, err, "the store kept the captured state")

	other := New(Config{Logger: n.log}, raftfsm.New(nil), nopHost{})
	require.NoError(t, loggedFSM{notifyingFSM{FSM: other.fsm}, other}.Restore(rc))

	var lines []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		delete(m, "time")
		delete(m, "duration_ms")
		lines = append(lines, m)
	}
	require.Len(t, lines, 2)
	assert.Equal(t, map[string]any{"level": "INFO", "msg": "snapshot taken", "index": 10.0, "term": 2.0,
		"zxid": "0x0", "znodes": 4.0, "bytes": 0.0}, lines[0], "kept, not written")
	assert.Equal(t, "snapshot restored", lines[1]["msg"])
	assert.Equal(t, 4.0, lines[1]["znodes"])
	assert.Greater(t, lines[1]["bytes"], 0.0)
}
