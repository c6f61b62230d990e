package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/zkraft/zkraft/wire"
)

// The shell's line editor is x/term's Terminal: raw mode, history on
// up/down, Ctrl-A/E/U/W/K, and an autocomplete hook for Tab, with output
// written through it redrawing the prompt, so a watch event arriving while
// a line is being typed does not garble it. That is all a readline library
// would bring here, without another dependency.

// maxHistory is how many lines the history file keeps.
const maxHistory = 1000

// fileHistory is a term.History kept in a file, one line an entry, oldest
// first; each line is appended as it is entered.
type fileHistory struct {
	path    string
	entries []string // oldest first
}

// loadHistory reads the history file; a missing file is an empty history.
// A file that has grown past maxHistory is cut back to it.
func loadHistory(path string) (*fileHistory, error) {
	h := &fileHistory{path: path}
	if path == "" {
		return h, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); strings.TrimSpace(line) != "" {
			h.entries = append(h.entries, line)
		}
	}
	if len(h.entries) > maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
		err = os.WriteFile(path, []byte(strings.Join(h.entries, "\n")+"\n"), 0o600)
	}
	return h, errors.Join(err, sc.Err())
}

// Add records a line, in memory and at the end of the file.
func (h *fileHistory) Add(line string) {
	if strings.TrimSpace(line) == "" || len(h.entries) > 0 && h.entries[len(h.entries)-1] == line {
		return
	}
	h.entries = append(h.entries, line)
	if h.path == "" {
		return
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return // history is a convenience: the shell goes on without it
	}
	fmt.Fprintln(f, line)
	f.Close()
}

// Len is the number of lines kept.
func (h *fileHistory) Len() int { return len(h.entries) }

// At returns the idx-th most recent line.
func (h *fileHistory) At(idx int) string { return h.entries[len(h.entries)-1-idx] }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// interactive runs the shell on a terminal in raw mode.
func (s *shell) interactive(in *os.File, out io.Writer) int {
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return s.readLines(in)
	}
	defer term.Restore(int(in.Fd()), state)
	// The editor wraps lines at the terminal's width, read now and again
	// whenever the window is resized (x/term's own default is 80 columns).
	resized := make(chan os.Signal, 1)
	signal.Notify(resized, syscall.SIGWINCH)
	defer signal.Stop(resized)
	s.termSize = func() (int, int, error) { return term.GetSize(int(in.Fd())) }
	s.resized = resized
	return s.editLines(struct {
		io.Reader
		io.Writer
	}{in, out})
}

// editLines reads lines from a terminal through x/term's line editor, with
// the prompt, the history file and Tab completion. Events and command
// output go through the editor too.
func (s *shell) editLines(rw io.ReadWriter) int {
	t := term.NewTerminal(rw, s.prompt())
	if s.termSize != nil {
		fitTo := func() {
			if w, h, err := s.termSize(); err == nil && w > 0 {
				t.SetSize(w, h)
			}
			if s.fitted != nil {
				s.fitted()
			}
		}
		fitTo()
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-s.resized:
					fitTo()
				case <-done:
					return
				}
			}
		}()
	}
	hist, err := loadHistory(s.historyFile)
	if err != nil {
		fmt.Fprintf(t, "history %s: %v\n", s.historyFile, err)
	}
	t.History = hist
	t.AutoCompleteCallback = func(line string, pos int, key rune) (string, int, bool) {
		if key != '\t' {
			return "", 0, false
		}
		c, ok := complete(line, pos, commandNames(), s.children)
		if ok && len(c.candidates) > 0 {
			fmt.Fprintf(t, "%s\n", strings.Join(c.candidates, "  "))
		}
		return c.line, c.pos, ok
	}
	s.stdout.(*lockedWriter).setWriter(t)
	s.stderr.(*lockedWriter).setWriter(t)
	s.mu.Lock()
	s.repaint = func(p string) {
		s.mu.Lock()
		s.shownPrompt = p
		s.mu.Unlock()
		t.SetPrompt(p)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.repaint = nil
		s.mu.Unlock()
	}()
	for !s.quitted {
		p := s.prompt()
		s.mu.Lock()
		s.shownPrompt = p
		s.mu.Unlock()
		t.SetPrompt(p)
		line, err := t.ReadLine()
		if err != nil {
			break // io.EOF on Ctrl-D
		}
		s.execLine(line)
	}
	s.closeQuietly()
	return s.status
}

// children lists a node's children for completion, nil if it cannot.
func (s *shell) children(path string) []string {
	if s.c == nil || validatePath(path) != nil {
		return nil
	}
	var resp wire.GetChildrenResponse
	if s.do(wire.OpGetChildren, path, &wire.PathWatchRequest{Path: s.abs(path)}, &resp) != nil {
		return nil
	}
	return resp.Children
}
