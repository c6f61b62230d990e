package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestMain lets the test binary run as zkraft itself when asked to, so the
// process tests below exercise the real main: flags, signals, exit status.
func TestMain(m *testing.M) {
	if os.Getenv("ZKRAFT_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestProcess_ServesThenStopsOnSIGTERM(t *testing.T) {
	cmd, stderr := startZkraft(t, "-port", "0", "-4lw", "ruok")
	addr := waitForAddr(t, stderr)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	_, err = conn.Write([]byte("ruok"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	reply, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Equal(t, "imok", string(reply))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitExit(t, cmd, 10*time.Second, "zkraft")
}

// startZkraft runs this test binary as zkraft (TestMain) with args, stopped
// when the test ends, and returns it with its log.
func startZkraft(t *testing.T, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ZKRAFT_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, stderr
}

// waitExit waits at most d for a process told to stop, which must exit
// with status 0.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "%s exits with status 0", what)
	case <-time.After(d):
		t.Fatalf("%s did not stop within %v", what, d)
	}
}

func TestProcess_BadFlagExitsTwo(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-tick-time", "never")
	cmd.Env = append(os.Environ(), "ZKRAFT_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "invalid value")
}

// TestProcess_CLI runs `zkraft cli` as a user would: the subcommand goes
// to the shell, not to the server's flags, and its exit status is the
// command's.
func TestProcess_CLI(t *testing.T) {
	addr := servertest.NewServer(t).Addr().String()
	tests := []struct {
		name   string
		args   []string
		stdin  string
		want   string
		status int
	}{
		{"one-shot", []string{"cli", "-server", addr, "ls", "/"}, "", "[zookeeper]\n", 0},
		{"one-shot failing", []string{"cli", "-server", addr, "get", "/x"}, "", "Node does not exist: /x\n", 1},
		{"piped", []string{"cli", "-server", addr}, "create /p x\nget /p\n", "Created /p\nx\n", 0},
		{"unknown command", []string{"cli", "-server", addr, "nope"}, "", "Command not found: Command not found nope\n", 127},
		{"cli's own flags", []string{"cli", "-port", "1"}, "", "flag provided but not defined: -port", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = append(os.Environ(), "ZKRAFT_RUN_MAIN=1", "ZKRAFT_CLI_HISTORY="+filepath.Join(t.TempDir(), "h"))
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, err := cmd.CombinedOutput()
			status := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.status, status)
			assert.Contains(t, string(out), tc.want)
		})
	}
}

// waitForAddr reads the server's log until it says where it serves.
func waitForAddr(t *testing.T, r io.Reader) string {
	t.Helper()
	return waitForLog(t, r, regexp.MustCompile(`connect=(\S+)`))
}

// TestProcess_ThreeProcessCluster starts three zkraft processes, each from
// its own zoo.cfg and dataDir (with myid), as on three hosts: they form one
// cluster, a write through one member is read on another after sync, and
// each process stops on SIGTERM.
func TestProcess_ThreeProcessCluster(t *testing.T) {
	ports := freePorts(t, 9) // client, Raft and forwarding ports of three members
	var members strings.Builder
	for i := range 3 {
		fmt.Fprintf(&members, "server.%d=127.0.0.1:%d:%d\n", i+1, ports[3+i], ports[6+i])
	}
	var cmds []*exec.Cmd
	var stderrs []io.Reader
	for i := range 3 {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "myid"), fmt.Appendf(nil, "%d\n", i+1), 0o644))
		cfg := filepath.Join(dir, "zoo.cfg")
		require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil,
			"tickTime=500\nclientPort=%d\nclientPortAddress=127.0.0.1\ndataDir=%s\n%s",
			ports[i], dir, members.String()), 0o644))
		cmd, stderr := startZkraft(t, "-config", cfg)
		cmds, stderrs = append(cmds, cmd), append(stderrs, stderr)
	}
	var addrs []string
	for _, r := range stderrs {
		addrs = append(addrs, waitForAddr(t, r))
	}

	writer, _, err := zk.Connect([]string{addrs[0]}, 5*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer writer.Close()
	_, err = writer.Create("/across-processes", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	reader, _, err := zk.Connect([]string{addrs[2]}, 5*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer reader.Close()
	_, err = reader.Sync("/across-processes")
	require.NoError(t, err)
	data, _, err := reader.Get("/across-processes")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))

	for _, cmd := range cmds {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	}
	for i, cmd := range cmds {
		waitExit(t, cmd, 20*time.Second, fmt.Sprintf("member %d", i+1))
	}
}

// freePorts returns n distinct loopback ports the OS had free.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestProcess_ClockOffsetFile steps a server's wall clock back two hours
// on SIGUSR1, to the offset in -clock-offset-file, as zkchaos does to one
// member: the nodes created after carry the stepped time, and the session
// lives on (its deadline runs on elapsed time).
func TestProcess_ClockOffsetFile(t *testing.T) {
	stepFile := filepath.Join(t.TempDir(), "offset")
	cmd, stderr := startZkraft(t, "-port", "0", "-clock-offset-file", stepFile)
	conn, _, err := zk.Connect([]string{waitForAddr(t, stderr)}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)

	ctime := func(path string) time.Time {
		t.Helper()
		_, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		_, st, err := conn.Get(path)
		require.NoError(t, err)
		return time.UnixMilli(st.Ctime)
	}
	assert.WithinDuration(t, time.Now(), ctime("/before"), time.Minute)
	require.NoError(t, os.WriteFile(stepFile, []byte("-2h\n"), 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGUSR1))
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		c := ctime(fmt.Sprintf("/after-%d", i))
		if time.Since(c) > time.Hour {
			assert.WithinDuration(t, time.Now().Add(-2*time.Hour), c, time.Minute)
			break
		}
		require.True(t, time.Now().Before(deadline), "no node created with the stepped clock within 10s")
	}
}
