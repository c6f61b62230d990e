package cli

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	h, err := loadHistory(path)
	require.NoError(t, err, "a missing file is an empty history")
	assert.Equal(t, 0, h.Len())

	for _, line := range []string{"ls /", "ls /", "  ", "get /a"} {
		h.Add(line)
	}
	require.Equal(t, 2, h.Len(), "blank lines and repeats are not kept")
	assert.Equal(t, "get /a", h.At(0), "At(0) is the newest")
	assert.Equal(t, "ls /", h.At(1))

	again, err := loadHistory(path)
	require.NoError(t, err)
	assert.Equal(t, h.entries, again.entries, "the file keeps what was added")

	long := strings.Repeat("stat /x\n", maxHistory+10)
	require.NoError(t, os.WriteFile(path, []byte(long), 0o600))
	cut, err := loadHistory(path)
	require.NoError(t, err)
	assert.Equal(t, maxHistory, cut.Len())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, maxHistory, strings.Count(string(b), "\n"), "the file is cut back too")
}

// editing runs a shell connected to addr in the line editor, on a pipe the
// test types into; setup, if given, adjusts the shell first. done gets the
// editor's status once typing is closed.
func editing(addr string, setup func(*shell)) (s *shell, out *syncBuffer, typing *io.PipeWriter, done <-chan int) {
	out = new(syncBuffer)
	s = newShell(out, out)
	s.connectString, s.historyFile = addr, ""
	if setup != nil {
		setup(s)
	}
	s.open(addr)
	in, typing := io.Pipe()
	status := make(chan int, 1)
	go func() { status <- s.editLines(keys{Reader: in, out: out}) }()
	return s, out, typing, status
}

// keys is a terminal whose user types the given keys, then closes it.
type keys struct {
	io.Reader
	out *syncBuffer
}

func (k keys) Write(p []byte) (int, error) { return k.out.Write(p) }

func TestEditLines(t *testing.T) {
	addr := newServer(t)
	history := filepath.Join(t.TempDir(), "history")
	require.NoError(t, os.WriteFile(history, []byte("create /typed-before\n"), 0o600))

	var out syncBuffer
	s := newShell(&out, &out)
	s.connectString, s.historyFile = addr, history
	s.open(addr)
	typed := "ls /zoo\t\r" + // Tab completes the path
		"\x1b[A\r" + // up: the same line again
		"\x1b[A\x1b[A\x1b[A\r" + // up past it: the line from the file
		"s /\x01l\x05zookeeper\r" + // Ctrl-A, Ctrl-E
		"junk words\x17\x17ls /\r" + // Ctrl-W twice
		"junk\x15ls /typed\t\r" // Ctrl-U, Tab
	status := s.editLines(keys{Reader: strings.NewReader(typed), out: &out})
	assert.Equal(t, 0, status)

	got := out.String()
	prompt := func(n int) string { return "[zk: " + addr + "(CONNECTED) " + strconv.Itoa(n) + "] " }
	for _, want := range []string{
		prompt(0) + "ls /zoo",
		"ls /zookeeper\r\n[config, quota]\r\n" + prompt(1),
		prompt(1) + "ls /zookeeper\r\n[config, quota]\r\n" + prompt(2),
		"create /typed-before\r\nCreated /typed-before\r\n" + prompt(3),
		"zookeeper\r\n[config, quota]\r\n" + prompt(4),
		"ls /\r\n[typed-before, zookeeper]\r\n" + prompt(5),
		"ls /typed-before\r\n[]\r\n" + prompt(6),
	} {
		assert.Contains(t, got, want)
	}

	b, err := os.ReadFile(history)
	require.NoError(t, err)
	assert.Equal(t, "create /typed-before\nls /zookeeper\ncreate /typed-before\nls /zookeeper\nls /\nls /typed-before\n", string(b))
}

// An event that arrives while the user is typing is printed above the
// prompt, and the prompt and the half-typed line are drawn again below it.
func TestEditLines_EventWhileTyping(t *testing.T) {
	addr := newServer(t)
	_, out, typing, done := editing(addr, nil)

	_, err := typing.Write([]byte("ls -w /\rget /zoo"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "get /zoo") }, 10*time.Second, time.Millisecond)
	_, _, status := runOnce(t, addr, "create", "/other")
	require.Equal(t, 0, status)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "path:/\r\n") }, 10*time.Second, time.Millisecond)
	require.NoError(t, typing.Close())
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the shell did not end at the end of its input")
	}
	assert.Contains(t, out.String(), "\r\nWATCHER::\r\n\r\nWatchedEvent state:SyncConnected type:NodeChildrenChanged path:/\r\n[zk: "+addr+"(CONNECTED) 1] get /zoo")
}

// The editor wraps a long line at the terminal's width, not at x/term's
// default 80 columns, and again at the new width when the window is
// resized.
func TestEditLines_WrapsAtTheTerminalsWidth(t *testing.T) {
	addr := newServer(t)
	long := "ls /" + strings.Repeat("x", 116) // 120 columns, after the prompt's
	echo := func(width int, resize bool) string {
		var out syncBuffer
		s := newShell(&out, &out)
		s.connectString, s.historyFile = addr, ""
		s.open(addr)
		var w atomic.Int64
		w.Store(int64(width))
		resized, fitted := make(chan os.Signal, 1), make(chan struct{}, 2)
		s.termSize = func() (int, int, error) { return int(w.Load()), 50, nil }
		s.resized, s.fitted = resized, func() { fitted <- struct{}{} }
		in, typing := io.Pipe()
		done := make(chan int, 1)
		go func() { done <- s.editLines(keys{Reader: in, out: &out}) }()
		<-fitted
		if resize {
			w.Store(300)
			resized <- syscall.SIGWINCH
			<-fitted
		}
		io.WriteString(typing, long+"\r")
		typing.Close()
		<-done
		got := out.String()
		i := strings.Index(got, "ls /x")
		require.GreaterOrEqual(t, i, 0, "the line is echoed: %q", got)
		end := strings.Index(got[i:], "Node does not exist")
		require.Greater(t, end, 0, "the command ran: %q", got)
		return got[i : i+end]
	}
	narrow := echo(80, false)
	assert.Contains(t, narrow, "\r\n", "wrapped at 80 columns")
	assert.Equal(t, long+"\r\n", echo(250, false), "one line at 250 columns")
	assert.Equal(t, long+"\r\n", echo(80, true), "one line once resized to 300")
}
