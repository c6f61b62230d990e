package server

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// table is one of ZooKeeper's two watch tables.
type table uint8

const (
	// tableData holds getData and exists watches (exists on a missing node
	// too: that is how NodeCreated is delivered).
	tableData table = iota
	// tableChild holds getChildren watches.
	tableChild
)

// mode is how a watch behaves when it fires.
type mode uint8

const (
	modeStandard mode = iota // one-shot
	modePersistent
	modeRecursive // persistent, and for every descendant too
)

// watchRegistry is this server's watches, by table, path and connection.
// Watches belong to connections: they go when the connection goes, and a
// client restores them on a new connection with setWatches.
type watchRegistry struct {
	mu         sync.Mutex // guards the fields below and conns' dataPaths/childPaths
	tables     [2]map[string]map[*conn]mode
	recursives int          // recursive watches registered; 0 means no ancestor walk
	watches    int          // watches in both tables
	seq        uint64       // triggers fired; a connection's fired is the last that notified it
	changed    *changes     // told when a watch comes or goes
	stats      *serverStats // counts the watchers each event notifies
}

func newWatchRegistry(changed *changes, stats *serverStats) *watchRegistry {
	return &watchRegistry{tables: [2]map[string]map[*conn]mode{{}, {}}, changed: changed, stats: stats}
}

func (c *conn) watchPaths(t table) *map[string]struct{} {
	if t == tableData {
		return &c.dataPaths
	}
	return &c.childPaths
}

// add registers a standard watch of c on path in table t.
func (w *watchRegistry) add(c *conn, path string, t table) { w.addMode(c, path, t, modeStandard) }

// addMode registers a watch with the given mode. As in ZooKeeper, a
// connection has one mode per table and path: the last registration wins.
func (w *watchRegistry) addMode(c *conn, path string, t table, m mode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	watchers := w.tables[t][path]
	if watchers == nil {
		watchers = make(map[*conn]mode)
		w.tables[t][path] = watchers
	}
	old, had := watchers[c]
	if had && old == modeRecursive {
		w.recursives--
	}
	if !had {
		w.watches++
	}
	if m == modeRecursive {
		w.recursives++
	}
	watchers[c] = m
	w.changed.notify()
	paths := c.watchPaths(t)
	if *paths == nil {
		*paths = make(map[string]struct{})
	}
	(*paths)[path] = struct{}{}
}

// watched reports whether any connection watches path in table t.
func (w *watchRegistry) watched(path string, t table) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.tables[t][path]) > 0
}

// remove deletes c's watch on path in t if match accepts its mode; it
// reports whether a watch was removed.
func (w *watchRegistry) remove(c *conn, path string, t table, match func(mode) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.tables[t][path][c]
	if !ok || !match(m) {
		return false
	}
	w.removeLocked(c, path, t)
	return true
}

func (w *watchRegistry) removeLocked(c *conn, path string, t table) {
	watchers := w.tables[t][path]
	if m, ok := watchers[c]; ok {
		if m == modeRecursive {
			w.recursives--
		}
		w.watches--
		delete(watchers, c)
		if len(watchers) == 0 {
			delete(w.tables[t], path)
		}
		w.changed.notify()
	}
	delete(*c.watchPaths(t), path)
}

// removeBatch is how many watches removeConn drops per hold of the lock.
const removeBatch = 4096

// removeConn drops every watch of a closed connection, removeBatch at a
// time: writes fire watches under the same lock, inside the state
// machine's apply, and must not wait while a million watches go (ZooKeeper
// holds its WatchManager's lock for all of them). The connection's own
// lists are detached first, so it looks unwatched at once; nothing adds
// watches for a closed connection, and a watch of it that fires meanwhile
// only queues an event its closed queue drops.
func (w *watchRegistry) removeConn(c *conn) {
	for _, t := range []table{tableData, tableChild} {
		for paths := w.detach(c, t); len(paths) > 0; {
			paths = w.removeSome(c, t, paths)
		}
	}
}

// detach takes c's list of watched paths in t from it and returns them;
// they are listed once the list is the caller's alone.
func (w *watchRegistry) detach(c *conn, t table) []string {
	w.mu.Lock()
	paths := *c.watchPaths(t)
	*c.watchPaths(t) = nil
	w.mu.Unlock()
	return slices.Collect(maps.Keys(paths))
}

// removeSome removes c's watches in t on the first removeBatch paths and
// returns the rest.
func (w *watchRegistry) removeSome(c *conn, t table, paths []string) []string {
	n := min(len(paths), removeBatch)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range paths[:n] {
		w.removeLocked(c, p, t)
	}
	return paths[n:]
}

// fire queues the events of a change's triggers on the watchers that may
// read the node each is about (tree.Trigger.ACL), as ZooKeeper's DataTree
// does: NodeCreated and NodeDataChanged fire the data table;
// NodeChildrenChanged the child table; NodeDeleted the data table, then the
// child table for connections the data table did not already notify.
//
// Writers are not woken one by one: the connections queued on are handed
// in batches to handoff (Server.flushAsync), which writes them while the
// rest are queued; fire returns the last connections it queued on, fewer
// than a batch, for the caller to flush once the lock is released.
func (w *watchRegistry) fire(triggers []tree.Trigger, handoff func([]*conn)) (told []*conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := delivery{handoff: handoff, batch: firstBatch}
	for _, tr := range triggers {
		w.seq++
		d.start(tr)
		var n int
		switch tr.Event {
		case wire.EventNodeDeleted:
			n = w.fireTable(tableData, tr, &d) + w.fireTable(tableChild, tr, &d)
		case wire.EventNodeChildrenChanged:
			n = w.fireTable(tableChild, tr, &d)
		default:
			n = w.fireTable(tableData, tr, &d)
		}
		w.stats.watchersNotified(tr.Event, n)
		if d.queued > 0 {
			w.stats.queued(len(d.frame), d.queued)
			w.stats.watchBytes.Add(int64(len(d.frame) * d.queued))
		}
	}
	return d.told
}

// fire hands off the connections it notified firstBatch at a time at
// first, then twice as many each time up to flushBatch: the first
// notifications go out at once, the many that follow in few hand-offs.
const (
	firstBatch = 16
	flushBatch = 256
)

// delivery queues one trigger's notification, encoded once, on the
// connections it notifies, and hands them off in batches to be flushed.
type delivery struct {
	tr      tree.Trigger
	frame   []byte
	queued  int     // connections the frame was queued on
	told    []*conn // queued on, not yet handed off
	batch   int     // how many make the next hand-off
	handoff func([]*conn)
}

func (d *delivery) start(tr tree.Trigger) {
	d.tr, d.frame, d.queued = tr, nil, 0
}

// notify queues the notification on c if c may read the node: a watcher
// that may not is not told (the watch is used up all the same), as
// ZooKeeper checks at delivery.
func (d *delivery) notify(c *conn) {
	if !c.mayRead(d.tr.ACL) {
		return
	}
	if d.frame == nil {
		d.frame = eventFrame(d.tr.Event, d.tr.Path)
	}
	if !c.queueFramed(d.frame) {
		return
	}
	d.queued++
	d.told = append(d.told, c)
	if len(d.told) == d.batch {
		d.handoff(d.told)
		d.told, d.batch = nil, min(2*d.batch, flushBatch)
	}
}

// eventFrame returns the framed notification of ev on path.
func eventFrame(ev wire.EventType, path string) []byte {
	b, start := wire.StartFrame(nil)
	return wire.EndFrame(appendEvent(b, ev, path), start)
}

// fireTable fires the watches of table t on tr's path (and, for recursive
// watches, on its ancestors), removing the one-shot ones, and returns how
// many connections it notified. A connection is notified once per trigger
// (w.seq), whatever the table or path of its watches.
func (w *watchRegistry) fireTable(t table, tr tree.Trigger, d *delivery) (n int) {
	notify := func(c *conn) {
		if c.fired == w.seq {
			return
		}
		c.fired = w.seq
		n++
		d.notify(c)
	}
	for p, self := tr.Path, true; ; p, self = parentPath(p), false {
		for c, m := range w.tables[t][p] {
			switch {
			case m == modeRecursive:
				if tr.Event != wire.EventNodeChildrenChanged {
					notify(c)
				}
			case self:
				notify(c)
				if m == modeStandard {
					w.removeLocked(c, p, t)
				}
			}
		}
		if w.recursives == 0 || p == "/" {
			return n
		}
	}
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// counts returns the number of connections with watches, watched paths and
// watches in the data table (what ZooKeeper's wchs reports).
func (w *watchRegistry) counts() (conns, paths, watches int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := make(map[*conn]bool)
	for _, watchers := range w.tables[tableData] {
		for c := range watchers {
			seen[c] = true
			watches++
		}
	}
	return len(seen), len(w.tables[tableData]), watches
}

// total returns the number of watches in both tables.
func (w *watchRegistry) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watches
}
