// Package cli is `zkraft cli`: zkCli.sh's shell and one-shot commands, in
// Go, against any ZooKeeper server.
//
//	zkraft cli -server 127.0.0.1:2181 ls /      one command, then exit with its status
//	zkraft cli -server 127.0.0.1:2181/app       a shell (history, Tab completes paths)
//	echo 'ls -R /' | zkraft cli                 commands read from a pipe
package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors inside the package; the shell prints each as zkCli would.
var (
	// errConnectionLoss is a request that got no reply because the
	// connection went away: ZooKeeper's ConnectionLoss.
	errConnectionLoss = errors.New("cli: connection lost")
	// errSessionExpired is a session the server no longer knows.
	errSessionExpired = errors.New("cli: session expired")
	// errNotConnected is a command on a session closed, expired or
	// refused by a failed auth.
	errNotConnected = errors.New("cli: not connected")
	// errUsage makes the shell print the command's usage line.
	errUsage = errors.New("cli: usage")
	// errQuiet fails a command that has already said why.
	errQuiet = errors.New("cli: failed")
)

// Exit statuses, as zkCli's.
const (
	statusOK       = 0
	statusError    = 1
	statusUsage    = 2
	statusNotFound = 127
)

// shell runs commands on one session at a time.
type shell struct {
	stdout, stderr io.Writer // safe for the reader goroutine's events too
	connectString  string
	timeout        time.Duration
	readOnly       bool
	historyFile    string
	// The terminal's size and its changes, for the line editor (nil, and
	// 80 columns, when not on a terminal).
	termSize func() (width, height int, err error)
	resized  <-chan os.Signal
	fitted   func() // tests: called once the editor has taken a size

	c       *client // nil after close
	history []string
	status  int // of the last command
	quitted bool

	mu           sync.Mutex // guards printWatches, watches, shownPrompt and repaint
	printWatches bool
	watches      map[string]watchKind
	shownPrompt  string       // the line editor's prompt now
	repaint      func(string) // sets the line editor's prompt (nil without one)
}

// Run runs `zkraft cli` with the arguments after "cli" and returns the
// exit status: that of the one command given, or of the last command read.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := newShell(stdout, stderr)
	fs := flag.NewFlagSet("zkraft cli", flag.ContinueOnError)
	// -h prints the usage to stdout; a bad flag is one line on stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&s.connectString, "server", "localhost:2181", "servers to connect to, host:port[,host:port...][/chroot]")
	timeoutMs := fs.Int("timeout", 30000, "session timeout in milliseconds")
	fs.BoolVar(&s.readOnly, "r", false, "allow a read-only connection to a server without quorum")
	fs.Bool("waitforconnection", false, "accepted for zkCli.sh's sake: the shell always waits for its connection")
	fs.StringVar(&s.historyFile, "history", defaultHistoryFile(), "file that keeps the shell's history (env ZKRAFT_CLI_HISTORY)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, "Usage: zkraft cli [flags] [cmd args]   (no command: an interactive shell)\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return statusOK
		}
		fmt.Fprintf(stderr, "zkraft cli: %v (zkraft cli -h lists the flags)\n", err)
		return statusUsage
	}
	if *timeoutMs <= 0 {
		fmt.Fprintln(stderr, "zkraft cli: -timeout must be positive")
		return statusUsage
	}
	s.timeout = time.Duration(*timeoutMs) * time.Millisecond
	if _, _, err := parseConnectString(s.connectString); err != nil {
		fmt.Fprintf(stderr, "zkraft cli: %v\n", err)
		return statusUsage
	}
	fmt.Fprintf(s.stdout, "Connecting to %s\n", s.connectString)
	s.open(s.connectString)
	if fs.NArg() > 0 {
		s.execWords(fs.Args())
		s.closeQuietly()
		return s.status
	}
	in, inOK := stdin.(*os.File)
	out, outOK := stdout.(*os.File)
	if inOK && outOK && isTerminal(in) && isTerminal(out) {
		return s.interactive(in, out)
	}
	return s.readLines(stdin)
}

func newShell(stdout, stderr io.Writer) *shell {
	var mu sync.Mutex
	return &shell{stdout: &lockedWriter{mu: &mu, w: stdout}, stderr: &lockedWriter{mu: &mu, w: stderr},
		printWatches: true, watches: make(map[string]watchKind), timeout: 30 * time.Second}
}

// defaultHistoryFile is $ZKRAFT_CLI_HISTORY, or ~/.zkraft_history.
func defaultHistoryFile() string {
	if f := os.Getenv("ZKRAFT_CLI_HISTORY"); f != "" {
		return f
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".zkraft_history")
}

// readLines runs the commands read from a pipe or file, one a line,
// without a prompt, as zkCli does when it has no terminal.
func (s *shell) readLines(r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for !s.quitted && sc.Scan() {
		s.execLine(strings.TrimSuffix(sc.Text(), "\r"))
	}
	s.closeQuietly()
	return s.status
}

// prompt is zkCli's: [zk: servers(STATE) n].
func (s *shell) prompt() string {
	state := StateClosed
	if s.c != nil {
		state = s.c.State()
	}
	return fmt.Sprintf("[zk: %s(%s) %d] ", s.connectString, state, len(s.history))
}

// execLine runs one typed line and records it in the numbered history.
func (s *shell) execLine(line string) {
	words := splitLine(line)
	if len(words) == 0 {
		return
	}
	if words[0] == "redo" {
		s.redo(words)
		return
	}
	s.history = append(s.history, line)
	s.execWords(words)
}

// redo runs a numbered line of the history again, in redo's place.
func (s *shell) redo(words []string) {
	n := -1
	if len(words) == 2 {
		var err error
		if n, err = strconv.Atoi(words[1]); err != nil {
			n = -1
		}
	}
	if len(words) != 2 || n < 0 || n >= len(s.history) {
		if len(words) != 2 {
			fmt.Fprintln(s.stderr, lookup("redo").usageLine())
		} else {
			fmt.Fprintln(s.stderr, "Command index out of range")
		}
		s.status = statusError
		return
	}
	line := s.history[n]
	s.history = append(s.history, line)
	s.execWords(splitLine(line))
}

// execWords runs a command and sets the shell's status.
func (s *shell) execWords(words []string) {
	cmd := lookup(words[0])
	if cmd == nil || cmd.run == nil {
		if words[0] == "help" {
			s.usage()
			s.status = statusOK
			return
		}
		if cmd == nil {
			s.usage()
			fmt.Fprintf(s.stderr, "Command not found: Command not found %s\n", words[0])
			s.status = statusNotFound
			return
		}
		s.redo(words) // one-shot "redo n": nothing to redo
		return
	}
	o, args, err := cmd.parseArgs(words[1:])
	if err == nil && strings.Contains(cmd.usage, "path") && len(args) > 0 {
		err = validatePath(args[0]) // every command that takes a path takes it first
	}
	if err == nil {
		err = cmd.run(s, o, args)
	}
	s.status = s.report(cmd, err)
}

// report prints a command's error as zkCli does and returns the status.
func (s *shell) report(cmd *command, err error) int {
	var code codeError
	var quiet errQuietStatus
	switch {
	case err == nil:
		return statusOK
	case errors.As(err, &quiet):
		return int(quiet)
	case errors.Is(err, errQuiet):
	case errors.Is(err, errUsage):
		fmt.Fprintln(s.stderr, cmd.usageLine())
	case errors.Is(err, errNotConnected):
		fmt.Fprintln(s.stdout, "Not connected") // on stdout, and the status stays, as zkCli's
		return s.status
	case errors.As(err, &code):
		fmt.Fprintln(s.stderr, code.Error())
	default:
		fmt.Fprintln(s.stderr, err.Error())
	}
	return statusError
}

// open starts a session with the servers in connect; a server that cannot
// be reached now is tried again by the first command.
func (s *shell) open(connect string) {
	c, err := newClient(connect, s.timeout, s.readOnly, s.event)
	if err != nil {
		fmt.Fprintln(s.stderr, err.Error())
		return
	}
	c.watches = s.watchList
	s.mu.Lock()
	s.watches = make(map[string]watchKind)
	s.mu.Unlock()
	s.c = c
	if err := c.connect(); err != nil && !errors.Is(err, errSessionExpired) {
		// No server takes it now: keep trying in the background, as
		// ZooKeeper's client does; each command waits for it.
		c.mu.Lock()
		c.startReconnect()
		c.mu.Unlock()
	}
}

// closeQuietly ends the session without reporting it, as a one-shot
// command or the end of input does.
func (s *shell) closeQuietly() {
	if s.c == nil {
		return
	}
	s.mu.Lock()
	s.printWatches = false
	s.mu.Unlock()
	s.c.Close()
	s.c = nil
}

// lockedWriter lets the reader goroutine print events between commands'
// lines, never inside one.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) setWriter(w io.Writer) {
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
}
