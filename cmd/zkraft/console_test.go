package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/console"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestConsoleFlags(t *testing.T) {
	var stderr bytes.Buffer
	st, err := configure([]string{"-admin-port", "0", "-console-writes", "-console-auth", "digest:ops:pw"}, &stderr)
	require.NoError(t, err)
	assert.Equal(t, consoleFlags{writes: true, auth: []console.Auth{{Scheme: "digest", Credential: "ops:pw"}}}, st.console)

	st, err = configure([]string{"-no-console"}, &stderr)
	require.NoError(t, err)
	assert.True(t, st.console.off)

	_, err = configure([]string{"-console-auth", "ip:127.0.0.1"}, &stderr)
	assert.ErrorContains(t, err, "digest:user:password")
}

// The console is served at /console/ on the admin listener, unless
// -no-console.
func TestStartAdmin_Console(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	srv := servertest.NewServer(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		con   consoleFlags
		paths map[string]int
	}{
		{consoleFlags{}, map[string]int{"/console/": 200, "/console/api/cluster": 200, "/console": 301, "/": 302,
			"/commands/ruok": 200, "/nothing": 404}},
		{consoleFlags{off: true}, map[string]int{"/console/": 404, "/": 404, "/commands/ruok": 200}},
	} {
		a, err := startAdmin(srv.Server, admin.Config{Addr: "127.0.0.1:0"}, tc.con, logger)
		require.NoError(t, err)
		if !tc.con.off {
			// The start-up log says where the console is, and there it is.
			assert.Contains(t, logs.String(), "msg=\"web console\" url="+a.URL()+"/console/")
		}
		for p, want := range tc.paths {
			resp, err := noRedirect.Get(a.URL() + p)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, want, resp.StatusCode, "%s with %+v", p, tc.con)
		}
		// An open event stream does not hold Shutdown up.
		resp, err := http.Get(a.URL() + "/console/api/events")
		require.NoError(t, err)
		if !tc.con.off {
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		}
		require.NoError(t, a.Shutdown(context.Background()))
		resp.Body.Close()
	}
}

// lockedBuffer is a bytes.Buffer that loggers on several goroutines may
// write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The members' consoles link to each other: startAdmin tells the server
// its console's URL, and each member's cluster view, asked of any member,
// names every member's console.
func TestStartAdmin_ConsolesLinkEachOther(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	c := servertest.NewCluster(t, 3)
	var admins []*admin.Admin
	var want []string
	for i := range 3 {
		a, err := startAdmin(c.Server(i), admin.Config{Addr: "127.0.0.1:0"}, consoleFlags{}, logger)
		require.NoError(t, err)
		t.Cleanup(func() { a.Shutdown(context.Background()) })
		admins = append(admins, a)
		want = append(want, a.URL()+"/console/")
	}
	for _, a := range admins {
		require.Eventually(t, func() bool {
			var view console.Cluster
			resp, err := http.Get(a.URL() + "/console/api/cluster")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			if json.NewDecoder(resp.Body).Decode(&view) != nil || len(view.Members) != 3 {
				return false
			}
			var got []string
			for _, m := range view.Members {
				got = append(got, m.Console)
			}
			return slices.Equal(want, got)
		}, 20*time.Second, 50*time.Millisecond, "member at %s names every console", a.URL())
	}
}
