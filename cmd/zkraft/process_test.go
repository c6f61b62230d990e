package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	cmd := exec.Command(os.Args[0], "-port", "0", "-4lw", "ruok")
	cmd.Env = append(os.Environ(), "ZKRAFT_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

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
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "exit status 0 after SIGTERM")
	case <-time.After(10 * time.Second):
		t.Fatal("zkraft did not stop within 10s of SIGTERM")
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

// waitForAddr reads the server's log until it says where it serves.
func waitForAddr(t *testing.T, r io.Reader) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`connect=(\S+)`)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		io.Copy(io.Discard, r)
	}()
	select {
	case addr := <-found:
		return addr
	case <-time.After(10 * time.Second):
		t.Fatal("zkraft did not log its address within 10s")
		return ""
	}
}
