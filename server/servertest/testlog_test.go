package servertest

import (
	"bytes"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/server"
)

// fakeTB is a testing.TB whose output, cleanups and failure the test holds.
type fakeTB struct {
	testing.TB
	out      bytes.Buffer
	cleanups []func()
	failed   bool
}

func (f *fakeTB) Output() io.Writer { return &f.out }
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Failed() bool      { return f.failed }
func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}
func raftLogger(l *slog.Logger) *slog.Logger { return l.With("component", "raft") }

// A test server's own lines go to the test's output; Raft's only if the
// test fails, or with WithRaftLog.
func TestTestLogger_RaftOnlyForAFailedTest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failed   bool
		withRaft bool
		raftSeen bool
	}{
		{"a passing test", false, false, false},
		{"a failing test", true, false, true},
		{"asked for", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := &fakeTB{TB: t, failed: tc.failed}
			cfg := server.Config{Logger: testLogger(tb)}
			if tc.withRaft {
				WithRaftLog()(&cfg)
			}
			cfg.Logger.Info("session created")
			raftLogger(cfg.Logger).Info("entering follower state")
			raftLogger(cfg.Logger).With("peer", 2).Warn("failed to heartbeat")
			tb.runCleanups()
			out := tb.out.String()
			assert.Contains(t, out, "session created")
			if tc.raftSeen {
				assert.Contains(t, out, "entering follower state")
				assert.Contains(t, out, "failed to heartbeat")
				assert.Contains(t, out, "peer=2")
			} else {
				assert.NotContains(t, out, "component=raft")
			}
			// Nothing is written once the test is over.
			cfg.Logger.Info("too late")
			assert.NotContains(t, tb.out.String(), "too late")
		})
	}
}

// Only the latest raftKept lines are kept.
func TestKeptLines_KeepsTheLatest(t *testing.T) {
	var k keptLines
	for i := range raftKept + 5 {
		k.Write([]byte{byte('a' + i%26), '\n'})
	}
	var out bytes.Buffer
	k.writeTo(&out)
	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	assert.Len(t, lines, raftKept+1, "the head line and the kept ones")
	assert.Contains(t, string(lines[0]), "earlier ones dropped")
	assert.Equal(t, string([]byte{byte('a' + (raftKept+4)%26)}), string(lines[len(lines)-1]))
}
