package server

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// WatchKind is the table a watch lives in, as ZooKeeper keeps them: data
// watches (set by getData, exists, or addWatch) fire on changes to the
// node; child watches (getChildren) on changes to its children.
type WatchKind uint8

const (
	// DataWatch is a getData or exists watch, or a persistent one.
	DataWatch WatchKind = iota
	// ChildWatch is a getChildren watch.
	ChildWatch
)

// String returns "data" or "child".
func (k WatchKind) String() string {
	if k == ChildWatch {
		return "child"
	}
	return "data"
}

// WatchMode is how a watch behaves when it fires.
type WatchMode uint8

const (
	// OneShot watches fire once and are gone.
	OneShot WatchMode = iota
	// Persistent watches (addWatch PERSISTENT) stay after firing.
	Persistent
	// PersistentRecursive watches stay, and fire for every descendant too.
	PersistentRecursive
)

// String returns "one-shot", "persistent" or "persistent-recursive".
func (m WatchMode) String() string {
	return [...]string{"one-shot", "persistent", "persistent-recursive"}[m]
}

// Watch is one watch a client holds on this server.
type Watch struct {
	Session int64
	Path    string
	Kind    WatchKind
	Mode    WatchMode
}

// Watches returns the watches this server's connections hold, ordered by
// path, kind and session. Watches belong to connections: a client that
// reconnects to another member takes them there.
func (s *Server) Watches() []Watch {
	w := s.watches
	w.mu.Lock()
	out := make([]Watch, 0, w.watches)
	for t, byPath := range w.tables {
		for p, watchers := range byPath {
			for c, m := range watchers {
				out = append(out, Watch{Session: c.session, Path: p, Kind: WatchKind(t), Mode: WatchMode(m)})
			}
		}
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b Watch) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Session, b.Session))
	})
	return out
}

// Changed returns a channel that is closed at the next change this server
// makes visible after the call: a command applied (a write, a session
// created or closed), a snapshot restored, or a watch set or removed. To
// wait for a condition without polling, take the channel, check the
// condition, and wait on the channel only if it does not hold yet.
func (s *Server) Changed() <-chan struct{} { return s.changed.wait() }

// changes hands out a channel that the next notify closes. It is made only
// when someone waits: while nobody does, notify costs one atomic load.
type changes struct{ ch atomic.Pointer[chan struct{}] }

func (c *changes) wait() <-chan struct{} {
	for {
		if p := c.ch.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if c.ch.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

func (c *changes) notify() {
	if c.ch.Load() == nil {
		return
	}
	if p := c.ch.Swap(nil); p != nil {
		close(*p)
	}
}
