// Package hclogslog is an hclog.Logger that writes into a slog.Handler, for
// libraries that log through hclog (hashicorp/raft and its stores) inside a
// program that logs through log/slog. Each line keeps its level, its
// message and its key/value pairs as attributes; the logger's name goes
// into a "component" attribute. It knows nothing of Raft: what a line's
// level should be in a given program is the caller's Relevel.
package hclogslog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options configure a Logger.
type Options struct {
	// Name is the logger's name, logged as the "component" attribute
	// (empty: none). Named appends to it with a dot, as hclog does.
	Name string
	// Level is the least hclog level passed on; NoLevel means Info.
	// SetLevel changes it for this logger and every one derived from it.
	Level hclog.Level
	// Relevel, if not nil, gives the slog level of a line that passed
	// Level, from its hclog level and message; nil maps Trace and Debug to
	// Debug, Info to Info, Warn to Warn and Error to Error (Level).
	Relevel func(level hclog.Level, msg string) slog.Level
}

// New returns an hclog.Logger that writes into h.
func New(h slog.Handler, opts Options) hclog.Logger {
	l := &logger{h: h, name: opts.Name, relevel: opts.Relevel, level: new(atomic.Int32)}
	if opts.Level == hclog.NoLevel {
		opts.Level = hclog.Info
	}
	l.level.Store(int32(opts.Level))
	if l.name != "" {
		l.h = h.WithAttrs([]slog.Attr{slog.String("component", l.name)})
	}
	l.base = h
	return l
}

// Level maps an hclog level to its slog level.
func Level(level hclog.Level) slog.Level {
	switch {
	case level <= hclog.Debug:
		return slog.LevelDebug
	case level == hclog.Info:
		return slog.LevelInfo
	case level == hclog.Warn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

type logger struct {
	base    slog.Handler // h before the component attribute (for Named)
	h       slog.Handler // base with the component and the With attributes
	name    string
	implied []any
	relevel func(hclog.Level, string) slog.Level
	level   *atomic.Int32 // shared by the loggers derived from one New
}

var _ hclog.Logger = (*logger)(nil)

// Log passes the line on, unless its level is below the logger's or the
// handler is not enabled for the level it maps to.
func (l *logger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < hclog.Level(l.level.Load()) {
		return
	}
	lvl := Level(level)
	if l.relevel != nil {
		lvl = l.relevel(level, msg)
	}
	ctx := context.Background()
	if !l.h.Enabled(ctx, lvl) {
		return
	}
	r := slog.NewRecord(time.Now(), lvl, msg, 0)
	r.AddAttrs(attrs(args)...)
	_ = l.h.Handle(ctx, r)
}

// attrs turns hclog's alternating keys and values into attributes. A
// value without a key is logged under hclog.MissingKey, as hclog does.
func attrs(args []any) []slog.Attr {
	out := make([]slog.Attr, 0, (len(args)+1)/2)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			out = append(out, slog.Any(hclog.MissingKey, value(args[i])))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		out = append(out, slog.Any(key, value(args[i+1])))
	}
	return out
}

// value renders what hclog renders specially (Fmt, Hex, Quote, Stringers
// and structs) as hclog's own formatter would; other values pass as they are.
func value(v any) any {
	switch v := v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64, time.Duration, time.Time, error, slog.LogValuer:
		return v
	case hclog.Format:
		if len(v) == 0 {
			return ""
		}
		format, _ := v[0].(string)
		return fmt.Sprintf(format, v[1:]...)
	case hclog.Hex:
		return "0x" + strconv.FormatInt(int64(v), 16)
	case hclog.Octal:
		return "0" + strconv.FormatInt(int64(v), 8)
	case hclog.Binary:
		return "0b" + strconv.FormatInt(int64(v), 2)
	case hclog.Quote:
		return strconv.Quote(string(v))
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%+v", v)
}

func (l *logger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *logger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *logger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *logger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *logger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// enabled reports whether a line at level could be passed on. A Relevel
// may lower a line's level for some messages, so this asks the handler
// about the level Relevel gives an empty message, or the plain mapping.
func (l *logger) enabled(level hclog.Level) bool {
	if level < hclog.Level(l.level.Load()) {
		return false
	}
	lvl := Level(level)
	if l.relevel != nil {
		lvl = l.relevel(level, "")
	}
	return l.h.Enabled(context.Background(), lvl)
}

func (l *logger) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *logger) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *logger) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *logger) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *logger) IsError() bool { return l.enabled(hclog.Error) }

func (l *logger) ImpliedArgs() []any { return l.implied }

// With returns a logger whose lines carry args as well.
func (l *logger) With(args ...any) hclog.Logger {
	c := *l
	c.implied = append(l.implied[:len(l.implied):len(l.implied)], args...)
	c.h = l.h.WithAttrs(attrs(args))
	return &c
}

func (l *logger) Name() string { return l.name }

// Named returns a logger whose component is this one's name, a dot and name.
func (l *logger) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.ResetNamed(name)
}

// ResetNamed returns a logger whose component is name.
func (l *logger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	c.h = l.base
	if name != "" {
		c.h = c.h.WithAttrs([]slog.Attr{slog.String("component", name)})
	}
	if len(l.implied) > 0 {
		c.h = c.h.WithAttrs(attrs(l.implied))
	}
	return &c
}

// SetLevel sets the least level passed on, for every logger derived from
// the same New.
func (l *logger) SetLevel(level hclog.Level) { l.level.Store(int32(level)) }

func (l *logger) GetLevel() hclog.Level { return hclog.Level(l.level.Load()) }

// StandardLogger returns a log.Logger whose lines go through this logger.
func (l *logger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer that logs each line written to it: at
// opts.ForceLevel if set, else at the level its "[WARN]"-style prefix
// names when opts.InferLevels, else at Info.
func (l *logger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &stdWriter{l: l, opts: *opts}
}

type stdWriter struct {
	l    *logger
	opts hclog.StandardLoggerOptions
}

// prefixes are the level prefixes hclog's standard writer recognises.
var prefixes = []struct {
	prefix string
	level  hclog.Level
}{
	{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
	{"[WARN]", hclog.Warn}, {"[ERR]", hclog.Error}, {"[ERROR]", hclog.Error},
}

func (w *stdWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, " \t\n"))
	level := hclog.Info
	for _, pr := range prefixes {
		if rest, ok := strings.CutPrefix(msg, pr.prefix); ok {
			msg = strings.TrimSpace(rest)
			if w.opts.InferLevels {
				level = pr.level
			}
			break
		}
	}
	if w.opts.ForceLevel != hclog.NoLevel {
		level = w.opts.ForceLevel
	}
	w.l.Log(level, msg)
	return len(p), nil
}
