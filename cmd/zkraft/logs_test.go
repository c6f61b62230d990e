package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonLines reads a process's log, one JSON object a line, and passes each
// on; a line that is not JSON comes as {"not_json": line}, which nextLine
// fails on.
func jsonLines(r io.Reader) <-chan map[string]any {
	lines := make(chan map[string]any, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not_json": sc.Text()}
			}
			lines <- m
		}
	}()
	return lines
}

// nextLine returns the next line with message msg (and the key values in
// want), keeping the lines it passes in seen.
func nextLine(t *testing.T, lines <-chan map[string]any, seen *[]map[string]any, msg string, want map[string]any) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("log ended before a %q line; saw %v", msg, *seen)
			}
			*seen = append(*seen, m)
			require.NotContains(t, m, "not_json", "every log line is JSON")
			if m["msg"] != msg {
				continue
			}
			match := true
			for k, v := range want {
				match = match && m[k] == v
			}
			if match {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q line within 10s; saw %v", msg, *seen)
		}
	}
}

// TestProcess_JSONLogs runs zkraft with -log-format json and -log-level
// debug: every line it logs is JSON, and a session's life and a refused
// request show with their keys.
func TestProcess_JSONLogs(t *testing.T) {
	cmd, stderr := startZkraft(t, "-port", "0", "-log-format", "json", "-log-level", "debug", "-4lw", "ruok")
	lines := jsonLines(stderr)
	var seen []map[string]any

	serving := nextLine(t, lines, &seen, "zkraft serving", nil)
	addr, _ := serving["connect"].(string)
	require.NotEmpty(t, addr)

	conn, events, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogger(quietZK{}))
	require.NoError(t, err)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	go func() {
		for range events { // go-zookeeper blocks on a full event channel
		}
	}()
	session := fmt.Sprintf("0x%x", conn.SessionID())
	created := nextLine(t, lines, &seen, "session created", map[string]any{"session": session})
	assert.Equal(t, "DEBUG", created["level"])
	assert.Equal(t, 5000.0, created["timeout_ms"])
	assert.Contains(t, created, "peer")
	conn.Close()
	nextLine(t, lines, &seen, "session closed", map[string]any{"session": session})

	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	_, err = nc.Write([]byte("stat")) // not in -4lw
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, nc)
	nc.Close()
	rejected := nextLine(t, lines, &seen, "request rejected", map[string]any{"reason": "4lw_not_allowed", "word": "stat"})
	assert.Equal(t, "INFO", rejected["level"])

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	nextLine(t, lines, &seen, "shutting down", nil)
	for m := range lines {
		seen = append(seen, m)
	}
	waitExit(t, cmd, 10*time.Second, "zkraft")
	for _, m := range seen {
		assert.NotContains(t, m, "not_json", "every log line is JSON")
		assert.Contains(t, []string{"INFO", "DEBUG"}, m["level"], "a standalone server's life, Raft's start included, without a warning: %v", m)
		assert.Contains(t, m, "time")
	}
}

// quietZK drops go-zookeeper's own logging.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
