//go:build clients

package integration

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/visibility"
)

// TestClients_CliKeepsItsSessionLikeZkCli: `zkraft cli` and zkCli.sh in
// turn, each connected to three zkraft processes with a 4 s session
// timeout, create an ephemeral node; the member each is connected to is
// killed with SIGKILL. Each shell must reconnect to another member within
// the session timeout and keep its session, so its ephemeral stays, and
// then read and write through it; quit closes the session. Each shell's
// transcript is logged, and written to $ZKRAFT_TRANSCRIPTS if set.
func TestClients_CliKeepsItsSessionLikeZkCli(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	need(t, "zookeeper", zkCli)
	addrs, dir := startZkraftClusterWith(t, 2000, "", false)
	bin, err := os.ReadFile(filepath.Join(dir, "bin"))
	require.NoError(t, err)
	connect := strings.Join(addrs, ",")
	observer, err := visibility.Connect(addrs, 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(observer.Close)

	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"zkraft-cli", []string{strings.TrimSpace(string(bin)), "cli", "-timeout", "4000", "-server", connect}},
		{"zkCli.sh", []string{zkCli, "-timeout", "4000", "-server", connect}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := "/keep-" + strings.TrimSuffix(tc.name, ".sh")
			sh := startShell(t, tc.argv)
			sh.run(t, "create -e "+node+" before", "Created "+node)
			_, st, err := observer.Exists(node)
			require.NoError(t, err)
			session := st.EphemeralOwner
			require.NotZero(t, session)
			member := memberHolding(t, addrs, session)
			sh.note(fmt.Sprintf("killing member %d (kill -9), which holds session 0x%x", member+1, session))
			killed := time.Now()
			killMember(t, dir, member+1)
			var moved int
			require.Eventually(t, func() bool {
				moved = memberHoldingNow(addrs, session, member)
				return moved >= 0
			}, 4*time.Second, 20*time.Millisecond, "the shell reconnects its session to another member within its timeout")
			sh.note(fmt.Sprintf("session 0x%x connected to member %d %v after the kill", session, moved+1, time.Since(killed).Round(time.Millisecond)))
			// Past the session timeout: the session would have expired by now.
			time.Sleep(5 * time.Second) // the wait is the point: a session timeout passes
			sh.run(t, "get "+node, "before")
			sh.run(t, "set "+node+" after", "")
			sh.run(t, "stat "+node, fmt.Sprintf("ephemeralOwner = 0x%x", session))
			data, st, err := observer.Get(node)
			require.NoError(t, err)
			assert.Equal(t, "after", string(data))
			assert.Equal(t, session, st.EphemeralOwner, "the ephemeral is still the session's")
			sh.quit(t)
			require.Eventually(t, func() bool {
				ok, _, err := observer.Exists(node)
				return err == nil && !ok
			}, 10*time.Second, 20*time.Millisecond, "quit closes the session, and its ephemeral goes")

			out, err := exec.Command(filepath.Join("scripts", "zkraft-cluster"), "start-member", dir, strconv.Itoa(member+1)).CombinedOutput()
			require.NoError(t, err, "start-member: %s", out)
			require.Eventually(t, func() bool {
				mode, err := visibility.Mode(addrs[member])
				return err == nil && (mode == "leader" || mode == "follower")
			}, 30*time.Second, 50*time.Millisecond, "member %d serves again", member+1)
			t.Logf("%s transcript:\n%s", tc.name, sh.out.String())
			if d := os.Getenv("ZKRAFT_TRANSCRIPTS"); d != "" {
				require.NoError(t, os.WriteFile(filepath.Join(d, tc.name+".txt"), []byte(sh.out.String()), 0o644))
			}
		})
	}
}

// shell is an interactive client shell driven on a pipe.
type shell struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncBuffer
}

func startShell(t *testing.T, argv []string) *shell {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &shell{cmd: cmd, stdin: stdin, out: out}
}

// run sends a command line and waits until the output shows want after
// it ("" waits for nothing).
func (s *shell) run(t *testing.T, line, want string) {
	t.Helper()
	from := s.out.Len()
	s.note("$ " + line)
	_, err := io.WriteString(s.stdin, line+"\n")
	require.NoError(t, err)
	if want == "" {
		return
	}
	require.Eventually(t, func() bool { return strings.Contains(s.out.From(from), want) }, 30*time.Second, 20*time.Millisecond,
		"%q answers %q; output:\n%s", line, want, s.out.String())
}

// note adds a line of the driver's to the transcript.
func (s *shell) note(line string) { s.out.Write([]byte("\n# " + line + "\n")) }

// quit ends the shell and waits for it to exit.
func (s *shell) quit(t *testing.T) {
	t.Helper()
	s.run(t, "quit", "")
	s.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the shell did not exit after quit; output:\n%s", s.out.String())
	}
}

// memberHolding returns the member whose cons lists session.
func memberHolding(t *testing.T, addrs []string, session int64) int {
	t.Helper()
	var i int
	require.Eventually(t, func() bool { i = memberHoldingNow(addrs, session, -1); return i >= 0 },
		10*time.Second, 20*time.Millisecond, "a member lists session 0x%x", session)
	return i
}

// memberHoldingNow returns the member other than except whose cons lists
// session, -1 if none.
func memberHoldingNow(addrs []string, session int64, except int) int {
	sid := fmt.Sprintf("sid=0x%x", session)
	for i, a := range addrs {
		if i == except {
			continue
		}
		if out, err := visibility.FourLetterWord(a, "cons", time.Second); err == nil && strings.Contains(out, sid) {
			return i
		}
	}
	return -1
}

// syncBuffer is a bytes.Buffer a process and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *syncBuffer) From(i int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()[i:]
}

func (b *syncBuffer) String() string { return b.From(0) }
