package main

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcess_AdminListener starts the binary with the admin listener on a
// port the OS picks and asks it what an operator's tools would.
func TestProcess_AdminListener(t *testing.T) {
	cmd, stderr := startZkraft(t, "-port", "0", "-admin-address", "127.0.0.1", "-admin-port", "0")
	url := "http://" + waitForLog(t, stderr, regexp.MustCompile(`admin listener serving" addr=(\S+)`))

	client := &http.Client{Timeout: 5 * time.Second}
	for path, want := range map[string]string{
		"/livez": "ok", "/readyz": "ok", "/commands/ruok": `"command":"ruok"`,
		"/commands/monitor": `"zk_version"`, "/metrics": "znode_count 5",
	} {
		resp, err := client.Get(url + path)
		require.NoError(t, err, path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		if path == "/commands/monitor" { // keys without zk_, as ZooKeeper's JSON
			assert.NotContains(t, string(body), want, path)
			assert.Contains(t, string(body), `"server_state": "standalone"`, path)
			continue
		}
		assert.Contains(t, strings.ReplaceAll(string(body), " ", ""), strings.ReplaceAll(want, " ", ""), path)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitExit(t, cmd, 10*time.Second, "zkraft")
}

// startWithin bounds how long a process may take to log what waitForLog
// waits for: seconds under the race detector beside a CPU hog, with other
// test binaries running.
const startWithin = 30 * time.Second

// waitForLog returns the first submatch of re in the log r, and keeps
// draining r.

func waitForLog(t *testing.T, r io.Reader, re *regexp.Regexp) string {
	t.Helper()
	found := make(chan string, 1)
	var mu sync.Mutex
	var seen []string // the lines read, for a failure's message
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			mu.Lock()
			seen = append(seen, sc.Text())
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		io.Copy(io.Discard, r)
	}()
	select {
	case s := <-found:
		return s
	case <-time.After(startWithin):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("zkraft did not log %s within %v; it logged:\n%s", re, startWithin, strings.Join(seen, "\n"))
		return ""
	}
}
