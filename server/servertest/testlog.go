package servertest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/zkraft/zkraft/server"
)

// testLogger logs to the test's output (shown for failing tests, and with
// go test -v) until the test ends, and drops what goroutines still log
// after that: a line written to a finished test's output panics. Raft's
// own lines (component "raft") are kept aside, the last raftKept of them,
// and written only if the test fails, or as they come with WithRaftLog: a
// dozen per server at every start would bury the test's own lines.
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{out: t.Output()}
	kept := &keptLines{}
	t.Cleanup(func() {
		if t.Failed() {
			kept.writeTo(w)
		}
		w.finish()
	})
	opts := &slog.HandlerOptions{Level: slog.LevelDebug}
	return slog.New(&testHandler{out: slog.NewTextHandler(w, opts), kept: slog.NewTextHandler(kept, opts)})
}

// WithRaftLog writes Raft's log lines to the test's output as they come,
// with the server's own, rather than only if the test fails.
func WithRaftLog() Option {
	return func(c *server.Config) {
		if h, ok := c.Logger.Handler().(*testHandler); ok {
			shown := *h
			shown.showRaft = true
			c.Logger = slog.New(&shown)
		}
	}
}

// raftKept is how many of Raft's latest lines a test server keeps for a
// failed test.
const raftKept = 2000

// testHandler sends a record to out, or to kept if it is Raft's.
type testHandler struct {
	out, kept slog.Handler
	raft      bool // the records are Raft's (its "component" attribute)
	showRaft  bool // WithRaftLog
}

func (h *testHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.out.Enabled(ctx, l) }

func (h *testHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.raft && !h.showRaft {
		return h.kept.Handle(ctx, r)
	}
	return h.out.Handle(ctx, r)
}

func (h *testHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.out, c.kept = h.out.WithAttrs(attrs), h.kept.WithAttrs(attrs)
	for _, a := range attrs {
		if a.Key == "component" && (a.Value.String() == "raft" || strings.HasPrefix(a.Value.String(), "raft.")) {
			c.raft = true
		}
	}
	return &c
}

func (h *testHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.out, c.kept = h.out.WithGroup(name), h.kept.WithGroup(name)
	return &c
}

// keptLines holds the last raftKept lines written to it.
type keptLines struct {
	mu      sync.Mutex // guards lines, dropped
	lines   []string
	dropped int
}

func (k *keptLines) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.lines) == raftKept {
		k.lines = k.lines[1:]
		k.dropped++
	}
	k.lines = append(k.lines, string(p))
	return len(p), nil
}

// writeTo writes the kept lines to w, after a line that says what they are.
func (k *keptLines) writeTo(w io.Writer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.lines) == 0 {
		return
	}
	head := "servertest: Raft's log lines, kept for a failed test:\n"
	if k.dropped > 0 {
		head = "servertest: Raft's last log lines, kept for a failed test (earlier ones dropped):\n"
	}
	io.WriteString(w, head)
	for _, l := range k.lines {
		io.WriteString(w, l)
	}
}

type testWriter struct {
	mu   sync.Mutex // guards done, and serializes writes
	out  io.Writer
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	return w.out.Write(p)
}

func (w *testWriter) finish() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
