package hclogslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/internal/hclogslog"
)

// recorder is a slog.Handler that keeps what it is given, attributes
// added by WithAttrs included.
type recorder struct {
	level slog.Level
	attrs []slog.Attr
	mu    *sync.Mutex // guards *records
	recs  *[]line
}

// line is a record as the test checks it.
type line struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func newRecorder(level slog.Level) *recorder {
	return &recorder{level: level, mu: new(sync.Mutex), recs: new([]line)}
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	l := line{level: rec.Level, msg: rec.Message, attrs: map[string]any{}}
	for _, a := range r.attrs {
		l.attrs[a.Key] = a.Value.Any()
	}
	rec.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.Any()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.recs = append(*r.recs, l)
	return nil
}

func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(r.attrs[:len(r.attrs):len(r.attrs)], attrs...)
	return &c
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) lines() []line {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]line(nil), *r.recs...)
}

func TestLogger_KeepsLevelMessageAndFields(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		log   func(l hclog.Logger)
		level slog.Level
		msg   string
		attrs map[string]any
	}{
		{"trace is debug", func(l hclog.Logger) { l.Trace("t", "k", 1) }, slog.LevelDebug, "t", map[string]any{"k": int64(1)}},
		{"debug", func(l hclog.Logger) { l.Debug("d") }, slog.LevelDebug, "d", map[string]any{}},
		{"info", func(l hclog.Logger) { l.Info("entering follower state", "leader-id", "2") }, slog.LevelInfo,
			"entering follower state", map[string]any{"leader-id": "2"}},
		{"warn", func(l hclog.Logger) {
			l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
		}, slog.LevelWarn, "heartbeat timeout reached, starting election",
			map[string]any{"last-leader-addr": "", "last-leader-id": ""}},
		{"error with an error value", func(l hclog.Logger) { l.Error("failed", "error", boom) }, slog.LevelError,
			"failed", map[string]any{"error": boom}},
		{"Log at a level", func(l hclog.Logger) { l.Log(hclog.Warn, "w") }, slog.LevelWarn, "w", map[string]any{}},
		{"hclog formats", func(l hclog.Logger) {
			l.Info("f", "fmt", hclog.Fmt("%d-%s", 1, "a"), "hex", hclog.Hex(255), "q", hclog.Quote("x"))
		}, slog.LevelInfo, "f", map[string]any{"fmt": "1-a", "hex": "0xff", "q": `"x"`}},
		{"a value without a key", func(l hclog.Logger) { l.Info("odd", "k", "v", "extra") }, slog.LevelInfo, "odd",
			map[string]any{"k": "v", hclog.MissingKey: "extra"}},
		{"structs as hclog prints them", func(l hclog.Logger) { l.Info("s", "v", struct{ A int }{1}) }, slog.LevelInfo, "s",
			map[string]any{"v": "{A:1}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(slog.LevelDebug)
			tc.log(hclogslog.New(rec, hclogslog.Options{Name: "raft", Level: hclog.Trace}))
			got := rec.lines()
			require.Len(t, got, 1)
			assert.Equal(t, tc.level, got[0].level)
			assert.Equal(t, tc.msg, got[0].msg)
			want := map[string]any{"component": "raft"}
			for k, v := range tc.attrs {
				want[k] = v
			}
			assert.Equal(t, want, got[0].attrs)
		})
	}
}

func TestLogger_Levels(t *testing.T) {
	tests := []struct {
		name    string
		handler slog.Level
		min     hclog.Level
		logged  []string // of trace, debug, info, warn, error
		isInfo  bool
	}{
		{"handler at debug, raft from trace", slog.LevelDebug, hclog.Trace, []string{"t", "d", "i", "w", "e"}, true},
		{"handler at info, raft from info", slog.LevelInfo, hclog.NoLevel, []string{"i", "w", "e"}, true},
		{"handler at info, raft from warn", slog.LevelInfo, hclog.Warn, []string{"w", "e"}, false},
		{"handler at error", slog.LevelError, hclog.Trace, []string{"e"}, false},
		{"off", slog.LevelDebug, hclog.Off, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(tc.handler)
			l := hclogslog.New(rec, hclogslog.Options{Level: tc.min})
			l.Trace("t")
			l.Debug("d")
			l.Info("i")
			l.Warn("w")
			l.Error("e")
			var msgs []string
			for _, r := range rec.lines() {
				msgs = append(msgs, r.msg)
			}
			assert.Equal(t, tc.logged, msgs)
			assert.Equal(t, tc.isInfo, l.IsInfo())
		})
	}
}

func TestLogger_Relevel(t *testing.T) {
	rec := newRecorder(slog.LevelInfo)
	l := hclogslog.New(rec, hclogslog.Options{Relevel: func(level hclog.Level, msg string) slog.Level {
		if msg == "expected" {
			return slog.LevelDebug
		}
		return hclogslog.Level(level)
	}})
	l.Warn("expected")
	l.Warn("alarming")
	got := rec.lines()
	require.Len(t, got, 1)
	assert.Equal(t, "alarming", got[0].msg)
	assert.Equal(t, slog.LevelWarn, got[0].level)
}

func TestLogger_NamedWithAndSetLevel(t *testing.T) {
	rec := newRecorder(slog.LevelDebug)
	root := hclogslog.New(rec, hclogslog.Options{Name: "raft"})
	with := root.With("node", "1")
	named := with.Named("snapshot")
	reset := named.ResetNamed("wal")
	assert.Equal(t, "raft.snapshot", named.Name())
	assert.Equal(t, []any{"node", "1"}, named.ImpliedArgs())

	root.Info("r")
	with.Info("w", "k", "v")
	named.Info("n")
	reset.Info("x")
	root.SetLevel(hclog.Error) // for every logger of the same New
	named.Warn("dropped")
	assert.Equal(t, hclog.Error, reset.GetLevel())

	got := rec.lines()
	require.Len(t, got, 4)
	assert.Equal(t, map[string]any{"component": "raft"}, got[0].attrs)
	assert.Equal(t, map[string]any{"component": "raft", "node": "1", "k": "v"}, got[1].attrs)
	assert.Equal(t, map[string]any{"component": "raft.snapshot", "node": "1"}, got[2].attrs)
	assert.Equal(t, map[string]any{"component": "wal", "node": "1"}, got[3].attrs)
}

func TestLogger_StandardWriter(t *testing.T) {
	rec := newRecorder(slog.LevelDebug)
	l := hclogslog.New(rec, hclogslog.Options{})
	l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[WARN]  something odd")
	l.StandardLogger(nil).Print("[ERR] plain")
	l.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("forced")
	got := rec.lines()
	require.Len(t, got, 3)
	assert.Equal(t, line{level: slog.LevelWarn, msg: "something odd", attrs: map[string]any{}}, got[0])
	assert.Equal(t, line{level: slog.LevelInfo, msg: "plain", attrs: map[string]any{}}, got[1])
	assert.Equal(t, line{level: slog.LevelError, msg: "forced", attrs: map[string]any{}}, got[2])
}

// TestLogger_JSON checks a line as the binary prints it with -log-format json.
func TestLogger_JSON(t *testing.T) {
	var buf bytes.Buffer
	l := hclogslog.New(slog.NewJSONHandler(&buf, nil), hclogslog.Options{Name: "raft"})
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:2888", "error", errors.New("eof"))
	var got map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	delete(got, "time")
	assert.Equal(t, map[string]any{"level": "WARN", "msg": "heartbeat timeout reached, starting election",
		"component": "raft", "last-leader-addr": "127.0.0.1:2888", "error": "eof"}, got)
}
