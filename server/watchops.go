package server

import (
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// watchLists are the paths of a setWatches or setWatches2 request.
type watchLists struct {
	data, exist, child, persistent, recursive []string
}

// setWatches restores a reconnecting client's watches, as ZooKeeper's
// DataTree.setWatches: for each path, the event the client missed since
// relativeZxid is sent now, or else the watch is registered again. Events
// are queued before the reply, atomically with respect to writes.
func (c *conn) setWatches(req request, rel int64, w watchLists) {
	s := c.srv
	s.fsm.Read(func(t *tree.Tree) {
		for _, p := range w.data {
			st, ok := t.Stat(p)
			switch {
			case !ok:
				c.event(wire.EventNodeDeleted, p)
			case st.Mzxid > rel:
				c.event(wire.EventNodeDataChanged, p)
			default:
				s.watches.add(c, p, tableData)
			}
		}
		for _, p := range w.exist {
			if _, ok := t.Stat(p); ok {
				c.event(wire.EventNodeCreated, p)
			} else {
				s.watches.add(c, p, tableData)
			}
		}
		for _, p := range w.child {
			st, ok := t.Stat(p)
			switch {
			case !ok:
				c.event(wire.EventNodeDeleted, p)
			case st.Pzxid > rel:
				c.event(wire.EventNodeChildrenChanged, p)
			default:
				s.watches.add(c, p, tableChild)
			}
		}
		for _, p := range w.persistent {
			s.watches.addMode(c, p, tableChild, modePersistent)
			s.watches.addMode(c, p, tableData, modePersistent)
		}
		for _, p := range w.recursive {
			s.watches.addMode(c, p, tableChild, modeRecursive)
			s.watches.addMode(c, p, tableData, modeRecursive)
		}
		c.reply(req, s.fsm.LastZxid(), wire.CodeOK, nil)
	})
}

// addWatch registers a persistent (mode 0) or persistent recursive (mode 1)
// watch in both tables, as ZooKeeper 3.8.0 does (a recursive watch never
// fires NodeChildrenChanged, and the data table's notice suppresses the
// child table's NodeDeleted, so the second entry only shows in checkWatches
// and removeWatches). The node need not exist. The reply carries a 4-byte
// ErrorResponse body of 0, as ZooKeeper sends.
func (c *conn) addWatch(req request, r *wire.AddWatchRequest) {
	s := c.srv
	s.fsm.Read(func(*tree.Tree) {
		var m mode
		switch r.Mode {
		case wire.AddWatchModePersistent:
			m = modePersistent
		case wire.AddWatchModePersistentRecursive:
			m = modeRecursive
		default:
			c.reply(req, s.fsm.LastZxid(), wire.CodeMarshallingError, nil)
			return
		}
		s.watches.addMode(c, r.Path, tableData, m)
		s.watches.addMode(c, r.Path, tableChild, m)
		c.reply(req, s.fsm.LastZxid(), wire.CodeOK, &wire.ErrorResponse{Err: wire.CodeOK})
	})
}

// removeWatches answers checkWatches (17) and removeWatches (18) for watcher
// types Children (1), Data (2) and Any (3), as ZooKeeper 3.8.0 does: other
// types are a MARSHALLINGERROR; removeWatches drops this connection's watch
// of that table whatever its mode; checkWatches succeeds when the path has
// any watcher in that table (ZooKeeper 3.8.0's WatchManager.containsWatcher
// does not look for this connection). No match is NOWATCHER.
func (c *conn) removeWatches(req request, r *wire.RemoveWatchesRequest) {
	var tables []table
	switch r.Type {
	case wire.WatcherTypeChildren:
		tables = []table{tableChild}
	case wire.WatcherTypeData:
		tables = []table{tableData}
	case wire.WatcherTypeAny:
		tables = []table{tableChild, tableData}
	default:
		c.reply(req, c.srv.fsm.LastZxid(), wire.CodeMarshallingError, nil)
		return
	}
	found := false
	for _, t := range tables {
		if req.op == wire.OpRemoveWatches {
			found = c.srv.watches.remove(c, r.Path, t, func(mode) bool { return true }) || found
		} else {
			found = c.srv.watches.watched(r.Path, t) || found
		}
	}
	code := wire.CodeOK
	if !found {
		code = wire.CodeNoWatcher
	}
	c.reply(req, c.srv.fsm.LastZxid(), code, nil)
}
