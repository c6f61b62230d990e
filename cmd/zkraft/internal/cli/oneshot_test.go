package cli

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runOnce runs one command as `zkraft cli -server addr cmd...` does and
// returns its stdout after connecting, its stderr and its status.
func runOnce(t testing.TB, server string, words ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errs bytes.Buffer
	status = Run(append([]string{"-server", server, "-history", ""}, words...), strings.NewReader(""), &out, &errs)
	return strings.TrimPrefix(out.String(), "Connecting to "+server+"\n"+connected), errs.String(), status
}

func TestRun_OneShot(t *testing.T) {
	addr := newServer(t)
	tests := []struct {
		name           string
		words          []string
		stdout, stderr string
		status         int
	}{
		{"ls", []string{"ls", "/"}, "[zookeeper]\n", "", 0},
		{"create says so on stderr", []string{"create", "/a", "some data"}, "", "Created /a\n", 0},
		{"data as one argument", []string{"get", "/a"}, "some data\n", "", 0},
		{"missing node", []string{"stat", "/x"}, "", "Node does not exist: /x\n", 1},
		{"usage", []string{"get"}, "", "get [-s] [-w] path\n", 1},
		{"unknown command", []string{"bogus"}, "", usageText + "Command not found: Command not found bogus\n", 127},
		{"ephemeral made", []string{"create", "-e", "/e"}, "", "Created /e\n", 0},
		{"ephemeral gone with its session", []string{"stat", "/e"}, "", "Node does not exist: /e\n", 1},
		{"redo has nothing to redo", []string{"redo", "0"}, "", "Command index out of range\n", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, status := runOnce(t, addr, tc.words...)
			assert.Equal(t, tc.stdout, stdout)
			assert.Equal(t, tc.stderr, stderr)
			assert.Equal(t, tc.status, status)
		})
	}
}

func TestRun_PipedScriptWithCRLF(t *testing.T) {
	var out, errs bytes.Buffer
	addr := newServer(t)
	status := Run([]string{"-server", addr, "-waitforconnection", "-history", ""}, strings.NewReader("create /a x\r\nget /a\r\n"), &out, &errs)
	assert.Equal(t, 0, status)
	assert.Equal(t, "Connecting to "+addr+"\n"+connected+"x\n", out.String())
	assert.Equal(t, "Created /a\n", errs.String())
}

func TestRun_BadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"timeout", []string{"-timeout", "0"}, "-timeout must be positive"},
		{"no server", []string{"-server", ","}, "no server in connect string"},
		{"bad chroot", []string{"-server", "127.0.0.1:1/a/"}, "Path must not end with / character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			assert.Equal(t, statusUsage, Run(tc.args, strings.NewReader(""), &out, &errs))
			assert.Contains(t, errs.String(), tc.want)
		})
	}
}

func TestRun_Chroot(t *testing.T) {
	addr := newServer(t)
	_, _, status := runOnce(t, addr, "create", "/app")
	require.Equal(t, 0, status)

	got, status := runScript(t, addr+"/app", "create /x 1\ncreate -s /x/s-\nget -w /x\nset /x 2\nls /\ngetEphemerals\nsync /x\ngetAllChildrenNumber /")
	assert.Equal(t, "Created /x\nCreated /x/s-0000000000\n1\n"+watched("NodeDataChanged", "/x")+"[x]\n[]\nSync is OK\n2\n", got)
	assert.Equal(t, 0, status)

	stdout, _, _ := runOnce(t, addr, "ls", "-R", "/app")
	assert.Equal(t, "/app\n/app/x\n/app/x/s-0000000000\n", stdout)
}

func TestRun_ServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	var out, errs bytes.Buffer
	status := Run([]string{"-server", addr, "-timeout", "2000", "ls", "/"}, strings.NewReader(""), &out, &errs)
	assert.Equal(t, 1, status)
	assert.Equal(t, "Connecting to "+addr+"\n", out.String())
	assert.Equal(t, "KeeperErrorCode = ConnectionLoss for /\n", errs.String())
}

func TestRun_SecondServerTakesOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close())

	stdout, stderr, status := runOnce(t, down+","+newServer(t), "ls", "/")
	assert.Equal(t, "[zookeeper]\n", stdout)
	assert.Empty(t, stderr)
	assert.Equal(t, 0, status)
}

// A bad flag is one line on stderr; -h is the usage on stdout.
func TestRun_BadFlagOneLineAndHelp(t *testing.T) {
	var out, errs strings.Builder
	assert.Equal(t, statusUsage, Run([]string{"-timeot", "4000"}, strings.NewReader(""), &out, &errs))
	assert.Equal(t, "zkraft cli: flag provided but not defined: -timeot (zkraft cli -h lists the flags)\n", errs.String())
	assert.Empty(t, out.String())

	out.Reset()
	errs.Reset()
	assert.Equal(t, statusOK, Run([]string{"-h"}, strings.NewReader(""), &out, &errs))
	assert.Contains(t, out.String(), "Usage: zkraft cli")
	assert.Contains(t, out.String(), "-server string")
	assert.Empty(t, errs.String())
}
