//go:build clients

package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClients_ReadOnlyMode runs kazoo's read-only mode against three zkraft
// processes with readonlymode.enabled (-read-only-mode) and tickTime 200ms:
// when two members are killed, the one left stops serving after syncLimit
// ticks without a leader and takes read-only clients; a kazoo client with
// read_only=True on the whole connect string connects to it read-only,
// reads, and gets NotReadOnlyCallError for a write; once the two run again
// it moves to a read-write session by itself. See clients/kazoo_readonly.py.
// The members are durable, so that the two restarted keep their data.
func TestClients_ReadOnlyMode(t *testing.T) {
	need(t, "python3-kazoo", "/usr/lib/python3/dist-packages/kazoo/client.py")
	script, err := filepath.Abs(filepath.Join("clients", "kazoo_readonly.py"))
	require.NoError(t, err)
	// Durable members: two of three members restarted in memory at once
	// elect one of themselves, with an empty log, and the data the third
	// kept is lost (a known gap of in-memory clusters; ZooKeeper's election
	// would pick the member with the highest zxid).
	addrs, dir := startZkraftClusterWith(t, 200, "-read-only-mode", true)

	cmd := exec.Command("/usr/bin/python3", script, strings.Join(addrs, ","))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(word string) {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for {
			select {
			case line, ok := <-lines:
				require.True(t, ok, "kazoo_readonly.py ended before %s", word)
				t.Logf("kazoo: %s", line)
				require.False(t, strings.HasPrefix(line, "FAIL"), "%s", line)
				if line == word {
					return
				}
			case <-timeout:
				t.Fatalf("no %s from kazoo_readonly.py", word)
			}
		}
	}
	say := func(word string) {
		t.Helper()
		_, err := io.WriteString(stdin, word+"\n")
		require.NoError(t, err)
	}

	expect("READY")
	survivor := 3
	for i := 1; i <= 3; i++ {
		if i != survivor {
			killMember(t, dir, i)
		}
	}
	say("CUT")
	expect("READONLY")
	for i := 1; i <= 3; i++ {
		if i != survivor {
			out, err := exec.Command(filepath.Join("scripts", "zkraft-cluster"), "start-member", dir, strconv.Itoa(i)).CombinedOutput()
			require.NoError(t, err, "start-member %d: %s", i, out)
		}
	}
	say("BACK")
	expect("PASS")
}

// killMember kills member i of a scripts/zkraft-cluster cluster with
// SIGKILL and waits for its process to be gone.
func killMember(t *testing.T, dir string, i int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("n%d", i), "pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.True(t, waitExited(pid, 10*time.Second), "member %d (pid %d) still runs after SIGKILL", i, pid)
}
