package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/console"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestConsoleFlags(t *testing.T) {
	var con consoleFlags
	var stderr bytes.Buffer
	_, _, _, err := configure([]string{"-console-addr", "127.0.0.1:0", "-console-writes", "-console-auth", "digest:ops:pw"}, &stderr, con.register)
	require.NoError(t, err)
	assert.Equal(t, consoleFlags{addr: "127.0.0.1:0", writes: true, auth: []console.Auth{{Scheme: "digest", Credential: "ops:pw"}}}, con)

	var bad consoleFlags
	_, _, _, err = configure([]string{"-console-auth", "ip:127.0.0.1"}, &stderr, bad.register)
	assert.ErrorContains(t, err, "digest:user:password")
}

func TestStartConsole(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	addr, stop, err := startConsole(&consoleFlags{}, nil, logger)
	require.NoError(t, err)
	assert.Nil(t, addr, "no -console-addr: no console")
	require.NoError(t, stop(context.Background()))

	a, b := servertest.NewServer(t), servertest.NewServer(t)
	for _, tc := range []struct {
		servers []*server.Server
		paths   []string
	}{
		{[]*server.Server{a.Server}, []string{"/", "/api/cluster"}},
		{[]*server.Server{a.Server, b.Server}, []string{"/", "/1/", "/2/api/cluster", "/2"}},
	} {
		addr, stop, err := startConsole(&consoleFlags{addr: "127.0.0.1:0"}, tc.servers, logger)
		require.NoError(t, err)
		for _, p := range tc.paths {
			resp, err := http.Get("http://" + addr.String() + p)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, p)
		}
		require.NoError(t, stop(context.Background()))
	}
}
