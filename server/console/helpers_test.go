package console_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/console"
)

// serve starts an HTTP server of a console of srv, stopped by t.Cleanup.
func serve(t *testing.T, srv *server.Server, opts console.Options) string {
	t.Helper()
	c, err := console.New(console.FromServer(srv), opts)
	require.NoError(t, err)
	hs := httptest.NewServer(c)
	t.Cleanup(hs.Close)
	return hs.URL
}

// connect opens a client session with addr, closed by t.Cleanup.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(strings.Split(addr, ","), 10*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

// get fetches url and decodes its JSON body into v, returning the status.
func get(t *testing.T, url string, v any) int {
	t.Helper()
	return do(t, http.MethodGet, url, "", "", v)
}

// do sends a request and decodes the JSON answer into v (if not nil).
func do(t *testing.T, method, url, contentType, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if v != nil {
		require.NoError(t, json.Unmarshal(b, v), "body %s", b)
	}
	return resp.StatusCode
}

// apiErr is the API's error body.
type apiErr struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// events opens the console's event stream and returns its events, name and
// data, as they arrive; the stream ends with the test.
func events(t *testing.T, base string) <-chan [2]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan [2]string, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				select {
				case out <- [2]string{name, line[len("data: "):]}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// waitEvent waits until an event satisfies ok, failing after 10 seconds.
func waitEvent(t *testing.T, ch <-chan [2]string, what string, ok func(name string, e console.Event) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, open := <-ch:
			require.True(t, open, "event stream ended before %s", what)
			var e console.Event
			require.NoError(t, json.Unmarshal([]byte(ev[1]), &e))
			if ok(ev[0], e) {
				return
			}
		case <-deadline:
			t.Fatalf("no event for %s within 10s", what)
		}
	}
}

// newHTTPServer serves h on 127.0.0.1, stopped by t.Cleanup.
func newHTTPServer(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// digest is the id digest ACLs name: base64(sha1(user:password)).
func digest(cred string) string {
	sum := sha1.Sum([]byte(cred))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// poll checks cond every 10ms until it holds, for what the server has no
// signal of (members' reports to the leader); it fails the test after 10
// seconds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		<-tick.C
	}
}
