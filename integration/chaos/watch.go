package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The watch workload: watchers set one-shot data watches on the registers
// (getData with a watch) while the register workload changes them, and
// read the register again and again without a watch. ZooKeeper's promise
// is that a session sees the event of a watch before any reply that shows
// the change: so when a read shows a newer version than the watched read,
// the event must already be there. And a one-shot watch fires once: every
// data event the session receives for a path answers a watch it set and
// that has not fired yet (go-zookeeper sets one server watch per path
// however many times it is asked, and hands its one event to every
// caller). After a reconnection go-zookeeper sets its watches again from a
// goroutine of its own, racing the requests already queued (the Java
// client sets them first), so a read that overtakes the watch's event
// across a reconnection is not held against the server; nor is a second
// event soon after a reconnection: a watch set anew on the new connection
// while the re-set is in flight is set twice, and a change fires both.

// reSetWindow is how long after a reconnection go-zookeeper's re-set of
// its watches may still be on its way.
const reSetWindow = 5 * time.Second

// watchWork is the shared record of the watch workload.
type watchWork struct {
	keys  []string
	addrs []string

	mu       sync.Mutex
	watches  int // watches set
	events   int // data events received
	ordered  int // reads that showed a change, with its event already received
	problems []string
}

func (w *watchWork) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, fmt.Sprintf("watch: "+format, args...))
}

func (w *watchWork) count(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

// watcher is one session's watches: armed[path] is set while a watch on
// path waits for its event.
type watcher struct {
	connections atomic.Int64  // sessions established (new or resumed) so far
	connected   chan struct{} // signalled with each one
	connectedAt atomic.Int64  // UnixNano of the last one

	mu      sync.Mutex
	armed   map[string]bool
	cleared chan struct{} // signalled when an event disarms a path
}

// run is watcher id's loop on one session (which go-zookeeper replaces if
// it expires) until ctx ends.
func (w *watchWork) run(ctx context.Context, id int, rng *rand.Rand) {
	conn, events, err := zk.Connect(w.addrs, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		w.problem("watcher %d: connect: %v", id, err)
		return
	}
	defer conn.Close()
	wt := &watcher{armed: map[string]bool{}, cleared: make(chan struct{}, 1), connected: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			switch {
			case ev.State == zk.StateHasSession:
				wt.connections.Add(1)
				wt.connectedAt.Store(time.Now().UnixNano())
				select {
				case wt.connected <- struct{}{}:
				default:
				}
			case ev.State == zk.StateExpired:
				wt.mu.Lock()
				clear(wt.armed) // the session's watches went with it
				wt.mu.Unlock()
			case ev.Type == zk.EventNodeDataChanged:
				w.count(func() { w.events++ })
				wt.mu.Lock()
				armed := wt.armed[ev.Path]
				delete(wt.armed, ev.Path)
				wt.mu.Unlock()
				select {
				case wt.cleared <- struct{}{}:
				default:
				}
				if !armed && time.Since(time.Unix(0, wt.connectedAt.Load())) > reSetWindow {
					w.problem("watcher %d got a second event for %s from one watch (or one it never set)", id, ev.Path)
				}
			}
		}
	}()
	defer func() { conn.Close(); <-done }()
	for ctx.Err() == nil {
		// A path is watched again only once its event has been counted,
		// so that every event answers exactly one watch.
		key, ok := wt.pick(ctx, w.keys, rng)
		if !ok {
			continue
		}
		_, st, ch, err := conn.GetW(key)
		if err != nil {
			// A watch set on a connection that was lost went with it.
			wt.mu.Lock()
			delete(wt.armed, key)
			wt.mu.Unlock()
			sleepCtx(ctx, 10*time.Millisecond)
			continue
		}
		w.count(func() { w.watches++ })
		w.follow(ctx, id, conn, wt, key, st, ch, rng)
	}
}

// pick arms and returns a path among keys that has no watch waiting for
// its event, waiting for an event if every one has; false if none came
// within a while or ctx ended.
func (wt *watcher) pick(ctx context.Context, keys []string, rng *rand.Rand) (string, bool) {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		wt.mu.Lock()
		var free []string
		for _, k := range keys {
			if !wt.armed[k] {
				free = append(free, k)
			}
		}
		if len(free) > 0 {
			key := free[rng.IntN(len(free))]
			wt.armed[key] = true
			wt.mu.Unlock()
			return key, true
		}
		wt.mu.Unlock()
		select {
		case <-wt.cleared:
		case <-deadline.C:
			return "", false
		case <-ctx.Done():
			return "", false
		}
	}
}

// reconnectedSince reports whether the session connected again since the
// count was n. The event telling of it travels apart from the replies, so
// it is given a moment to arrive.
func (wt *watcher) reconnectedSince(n int64) bool {
	grace := time.NewTimer(200 * time.Millisecond)
	defer grace.Stop()
	for wt.connections.Load() == n {
		select {
		case <-wt.connected:
		case <-grace.C:
			return false
		}
	}
	return true
}

// follow reads key until a read shows a change from st, and checks that
// the watch's event came first.
func (w *watchWork) follow(ctx context.Context, id int, conn *zk.Conn, wt *watcher, key string, st *zk.Stat, ch <-chan zk.Event, rng *rand.Rand) {
	connection := wt.connections.Load()
	for range 50 {
		if !sleepCtx(ctx, time.Duration(rng.IntN(3))*time.Millisecond) {
			return
		}
		_, now, err := conn.Get(key)
		if err != nil {
			return
		}
		if now.Mzxid == st.Mzxid {
			continue
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDataChanged && ev.Type != zk.EventNotWatching {
				w.problem("watcher %d: the watch on %s fired %v", id, key, ev.Type)
			}
			w.count(func() { w.ordered++ })
		default:
			if wt.reconnectedSince(connection) {
				return // see the top of this file
			}
			w.problem("watcher %d read %s at mzxid %#x (watched at %#x) before the watch's event", id, key, now.Mzxid, st.Mzxid)
		}
		return
	}
}
