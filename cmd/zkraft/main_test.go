package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
)

func TestRun_BadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.cfg")
	require.NoError(t, os.WriteFile(badCfg, []byte("tickTime=soon\n"), 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"bad duration", []string{"-tick-time", "fast"}, "invalid value"},
		{"bad log level", []string{"-log-level", "loud"}, "-log-level"},
		{"bad config value", []string{"-config", badCfg}, "tickTime=soon"},
		{"missing config", []string{filepath.Join(dir, "none.cfg")}, "no such file"},
		{"two configs", []string{"-config", badCfg, badCfg}, "not both"},
		{"invalid setting", []string{"-id", "999"}, "server id"},
		{"clock offset not a duration", []string{"-port", "0", "-clock-offset-file", badCfg}, "-clock-offset-file"},
		{"peer-via without =", []string{"-peer-via", "127.0.0.1:1"}, "want addr=via"},
		{"peer-via without a port", []string{"-peer-via", "127.0.0.1:1=127.0.0.1"}, "missing port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, 2, run(tc.args, io.Discard, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestConfigure_FlagsOverrideZooCfg(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zoo.cfg")
	cfg := "tickTime=3000\nclientPort=2190\nclientPortAddress=0.0.0.0\nmaxClientCnxns=10\nfancyKey=1\n"
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	var stderr bytes.Buffer
	st, err := configure([]string{"-port", "2200", "-tick-time", "500ms", path}, &stderr)
	require.NoError(t, err)
	got := st.cfg
	assert.Equal(t, "0.0.0.0:2200", got.ClientPortAddress)
	assert.Equal(t, 500*time.Millisecond, got.TickTime)
	assert.Equal(t, 10, got.MaxClientCnxns, "from the file")
	assert.Contains(t, stderr.String(), "fancyKey", "unknown keys are warned about")
}

func TestConfigure_PeerVia(t *testing.T) {
	var stderr bytes.Buffer
	st, err := configure([]string{"-peer-via", "127.0.0.1:3001=127.0.0.1:4001, 127.0.0.1:3002=127.0.0.1:4002",
		"-peer-via", "127.0.0.1:3003=127.0.0.1:4003"}, &stderr)
	require.NoError(t, err)
	got := st.cfg
	assert.Equal(t, map[string]string{"127.0.0.1:3001": "127.0.0.1:4001", "127.0.0.1:3002": "127.0.0.1:4002",
		"127.0.0.1:3003": "127.0.0.1:4003"}, got.PeerVia)
}

func TestConfigure_Defaults(t *testing.T) {
	var stderr bytes.Buffer
	st, err := configure(nil, &stderr)
	require.NoError(t, err)
	got := st.cfg
	st2, err := configure([]string{"-address", "127.0.0.2"}, &stderr)
	require.NoError(t, err)
	got2 := st2.cfg
	assert.Nil(t, st.admin, "the admin listener is off unless asked for")
	assert.Equal(t, "", got.ClientPortAddress, "empty means the server's default 127.0.0.1:2181")
	assert.Equal(t, "127.0.0.2:2181", got2.ClientPortAddress)
	assert.True(t, strings.HasPrefix(got2.ClientPortAddress, "127.0.0.2"))
}

func TestConfigure_Admin(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	on := write("on.cfg", "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=18081\n")
	metrics := write("metrics.cfg", "metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\nmetricsProvider.httpPort=7001\n")
	off := write("off.cfg", "admin.enableServer=false\nadmin.serverPort=18082\n")
	all := write("all.cfg", "admin.enableServer=true\nadmin.serverAddress=0.0.0.0\nadmin.serverPort=18083\n")
	tests := []struct {
		name string
		args []string
		addr string // "" for off
	}{
		{"off by default", nil, ""},
		{"zoo.cfg turns it on", []string{on}, "127.0.0.1:18081"},
		{"flags override zoo.cfg", []string{"-admin-port", "18090", on}, "127.0.0.1:18090"},
		{"metricsProvider.httpPort is an alias", []string{metrics}, "127.0.0.1:7001"},
		{"zoo.cfg turns it off", []string{off}, ""},
		{"-admin alone: loopback", []string{"-admin"}, "127.0.0.1:8080"},
		{"every interface when told", []string{all}, "0.0.0.0:18083"},
		{"-admin-port 0 picks a port", []string{"-admin-address", "127.0.0.1", "-admin-port", "0"}, "127.0.0.1:0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			st, err := configure(tc.args, &stderr)
			require.NoError(t, err)
			assert.NotContains(t, stderr.String(), "admin.", "admin keys are not warned about")
			assert.NotContains(t, stderr.String(), "metricsProvider", "metrics keys are not warned about")
			if tc.addr == "" {
				assert.Nil(t, st.admin)
				return
			}
			require.NotNil(t, st.admin)
			assert.Equal(t, tc.addr, st.admin.Addr)
			if len(tc.args) > 0 && strings.HasSuffix(tc.args[len(tc.args)-1], ".cfg") {
				assert.Contains(t, st.admin.InitialConfiguration, "=", "the file's text, for initial_configuration")
			}
		})
	}
	var stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"-admin-port", "70000"}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "-admin-port")
	assert.Equal(t, 2, run([]string{write("bad.cfg", "admin.enableServer=true\nadmin.serverPort=web\n")}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "admin.serverPort=web")
}

// -h, version and a bad flag answer as a command-line tool should: the
// usage and the version on stdout with status 0, a bad flag in one line on
// stderr with status 2.
func TestRun_UsageVersionAndBadFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stdout []string // each contained
		stderr string   // the whole of it
	}{
		{"-h lists the subcommands and the flags", []string{"-h"}, 0,
			[]string{"zkraft cli [flags]", "zkraft version", "-local-cluster int"}, ""},
		{"version", []string{"version"}, 0, []string{"zkraft " + server.Version + "\n"}, ""},
		{"-version", []string{"-version"}, 0, []string{"zkraft " + server.Version + "\n"}, ""},
		{"a value that does not parse", []string{"-port", "abc"}, 2, nil,
			"zkraft: invalid value \"abc\" for flag -port: parse error (zkraft -h lists the flags)\n"},
		{"an unknown flag", []string{"-prot", "2182"}, 2, nil,
			"zkraft: flag provided but not defined: -prot (zkraft -h lists the flags)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tc.status, run(tc.args, &stdout, &stderr))
			for _, want := range tc.stdout {
				assert.Contains(t, stdout.String(), want)
			}
			assert.Equal(t, tc.stderr, stderr.String())
		})
	}
}
