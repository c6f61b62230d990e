package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// TestRawWatches covers the watch opcodes go-zookeeper cannot send:
// addWatch (106), checkWatches (17), removeWatches (18) and setWatches2
// (105). One session (x) watches; another (w) makes the changes, unless x
// makes them itself to see its notifications come before its own reply.
func TestRawWatches(t *testing.T) { runRawCases(t, rawWatchCases) }

var rawWatchCases = []rawCase{
	{"addWatch persistent", rawAddWatchPersistent},
	{"addWatch persistent recursive", rawAddWatchRecursive},
	{"addWatch with a bad mode", rawAddWatchBadMode},
	{"addWatch and standard watches on one path", rawAddWatchMixed},
	{"checkWatches and removeWatches", rawCheckRemoveWatches},
	{"checkWatches and removeWatches of persistent watches", rawRemovePersistent},
	{"checkWatches and removeWatches with other types", rawWatcherTypeInvalid},
	{"setWatches2 on a resumed session", rawSetWatches2},
}

// addWatchOK is addWatch's reply body: an ErrorResponse of 0.
var addWatchOK = []byte{0, 0, 0, 0}

// helpers for the writes of these cases

func (s *rawSession) set(path, data string, events ...watchEvent) {
	s.t.Helper()
	s.mustDo(wire.OpSetData, &wire.SetDataRequest{Path: path, Data: []byte(data), Version: -1}, events...)
}

func (s *rawSession) del(path string, events ...watchEvent) {
	s.t.Helper()
	s.mustDo(wire.OpDelete, &wire.DeleteRequest{Path: path, Version: -1}, events...)
}

func (s *rawSession) addWatch(path string, mode int32) {
	s.t.Helper()
	assert.Equal(s.t, addWatchOK, s.mustDo(wire.OpAddWatch, &wire.AddWatchRequest{Path: path, Mode: mode}))
}

// watches sends checkWatches or removeWatches and checks the reply's code.
func (s *rawSession) watches(op wire.Op, path string, typ int32, want wire.Code) {
	s.t.Helper()
	h, body := s.do(op, &wire.RemoveWatchesRequest{Path: path, Type: typ})
	assert.Equal(s.t, want, h.Err, "%v %s type %d", op, path, typ)
	assert.Empty(s.t, body)
}

func created(p string) watchEvent         { return watchEvent{wire.EventNodeCreated, p} }
func deleted(p string) watchEvent         { return watchEvent{wire.EventNodeDeleted, p} }
func dataChanged(p string) watchEvent     { return watchEvent{wire.EventNodeDataChanged, p} }
func childrenChanged(p string) watchEvent { return watchEvent{wire.EventNodeChildrenChanged, p} }

func rawAddWatchPersistent(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/aw")
	w.create(dir, nil)
	pw := dir + "/pw"

	// The node need not exist.
	x.addWatch(pw, wire.AddWatchModePersistent)
	w.create(pw, []byte("1"))
	x.expectEvents(created(pw))
	w.create(pw+"/c", nil)
	x.expectEvents(childrenChanged(pw))
	w.set(pw, "2")
	x.expectEvents(dataChanged(pw))
	w.set(pw+"/c", "not watched: a child's data")
	w.del(pw + "/c")
	x.expectEvents(childrenChanged(pw))
	// One NodeDeleted, and the watch stays.
	w.del(pw)
	x.expectEvents(deleted(pw))
	w.create(pw, nil)
	x.expectEvents(created(pw))
	w.set(pw, "3")
	x.expectEvents(dataChanged(pw))
	// On the watcher's own write, the notification precedes the reply.
	x.set(pw, "4", dataChanged(pw))
	x.create(pw+"/d", nil, childrenChanged(pw))
	x.proveQuiet(w, dir)
}

func rawAddWatchRecursive(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/ar")
	w.create(dir, nil)
	rw := dir + "/rw"

	x.addWatch(rw, wire.AddWatchModePersistentRecursive)
	w.create(rw, nil)
	x.expectEvents(created(rw))
	w.create(rw+"/a", nil)
	x.expectEvents(created(rw + "/a"))
	w.create(rw+"/a/b", nil)
	x.expectEvents(created(rw + "/a/b"))
	w.set(rw+"/a/b", "x")
	x.expectEvents(dataChanged(rw + "/a/b"))
	w.set(rw, "x")
	x.expectEvents(dataChanged(rw))
	w.create(dir+"/rwx", nil) // a sibling whose name starts with "rw"
	w.del(rw + "/a/b")
	x.expectEvents(deleted(rw + "/a/b"))
	w.mustDo(wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: rw + "/m", ACL: wire.OpenACLUnsafe}},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: rw + "/m", Data: []byte("y"), Version: -1}},
		{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: rw + "/m", Version: -1}},
	}})
	x.expectEvents(created(rw+"/m"), dataChanged(rw+"/m"), deleted(rw+"/m"))
	w.del(rw + "/a")
	x.expectEvents(deleted(rw + "/a"))
	w.del(rw)
	x.expectEvents(deleted(rw))
	w.create(rw, nil)
	x.expectEvents(created(rw))
	x.create(rw+"/own", nil, created(rw+"/own"))

	// A standard data watch on a descendant as well: still one
	// notification per change; the standard one is then spent.
	x.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: rw + "/own", Watch: true})
	w.set(rw+"/own", "1")
	x.expectEvents(dataChanged(rw + "/own"))
	w.set(rw+"/own", "2")
	x.expectEvents(dataChanged(rw + "/own"))
	x.proveQuiet(w, dir)
}

func rawAddWatchBadMode(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	dir := tg.p("/ab")
	x.create(dir, nil)
	for _, mode := range []int32{2, -1} {
		x.mustFail(wire.CodeMarshallingError, wire.OpAddWatch, &wire.AddWatchRequest{Path: dir, Mode: mode})
	}
	x.watches(wire.OpCheckWatches, dir, wire.WatcherTypeAny, wire.CodeNoWatcher)
	x.set(dir, "no watch")
	x.create(dir+"/k", nil)
	mustPing(t, x.rawConn)
}

func rawAddWatchMixed(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/mx")
	w.create(dir, nil)
	mx := dir + "/n"
	w.create(mx, nil)

	// Persistent, then a standard data watch: the data table now holds a
	// one-shot watch; the child table keeps the persistent one.
	x.addWatch(mx, wire.AddWatchModePersistent)
	x.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: mx, Watch: true})
	w.set(mx, "1")
	x.expectEvents(dataChanged(mx))
	w.set(mx, "2")
	w.create(mx+"/k1", nil)
	x.expectEvents(childrenChanged(mx))
	w.create(mx+"/k2", nil)
	x.expectEvents(childrenChanged(mx))

	// A standard child watch replaces the persistent one in the child
	// table; addWatch then makes both persistent again.
	x.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: mx, Watch: true})
	w.create(mx+"/k3", nil)
	x.expectEvents(childrenChanged(mx))
	w.create(mx+"/k4", nil)
	w.set(mx, "3")
	x.addWatch(mx, wire.AddWatchModePersistent)
	w.set(mx, "4")
	x.expectEvents(dataChanged(mx))
	w.set(mx, "5")
	x.expectEvents(dataChanged(mx))
	w.create(mx+"/k5", nil)
	x.expectEvents(childrenChanged(mx))
	x.proveQuiet(w, dir)
}

func rawCheckRemoveWatches(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	y := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/cw")
	w.create(dir, nil)
	n := dir + "/n"
	w.create(n, nil)
	watchBoth := func() {
		x.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: n, Watch: true})
		x.mustDo(wire.OpGetChildren, &wire.PathWatchRequest{Path: n, Watch: true})
	}
	check, remove := wire.OpCheckWatches, wire.OpRemoveWatches
	children, data, anyType := wire.WatcherTypeChildren, wire.WatcherTypeData, wire.WatcherTypeAny

	watchBoth()
	for _, typ := range []int32{children, data, anyType} {
		x.watches(check, n, typ, wire.CodeOK)
		// ZooKeeper 3.8.0 looks for any connection's watch on the path.
		y.watches(check, n, typ, wire.CodeOK)
		// But a connection removes only its own.
		y.watches(remove, n, typ, wire.CodeNoWatcher)
	}

	x.watches(remove, n, data, wire.CodeOK)
	x.watches(check, n, data, wire.CodeNoWatcher)
	x.watches(check, n, children, wire.CodeOK)
	x.watches(check, n, anyType, wire.CodeOK)
	x.watches(remove, n, data, wire.CodeNoWatcher)
	w.set(n, "removed data watch")
	x.proveQuiet(w, dir)

	x.watches(remove, n, children, wire.CodeOK)
	x.watches(check, n, children, wire.CodeNoWatcher)
	x.watches(check, n, anyType, wire.CodeNoWatcher)
	x.watches(remove, n, anyType, wire.CodeNoWatcher)
	w.create(n+"/k1", nil)
	x.proveQuiet(w, dir)

	// Any removes both.
	watchBoth()
	x.watches(remove, n, anyType, wire.CodeOK)
	x.watches(check, n, anyType, wire.CodeNoWatcher)
	w.set(n, "removed both")
	w.create(n+"/k2", nil)
	x.proveQuiet(w, dir)

	// Any removes the one there is; exists on a missing node is a data
	// watch.
	missing := dir + "/missing"
	x.mustWatchMissing(missing)
	x.watches(check, missing, children, wire.CodeNoWatcher)
	x.watches(check, missing, data, wire.CodeOK)
	x.watches(remove, missing, anyType, wire.CodeOK)
	x.watches(check, missing, anyType, wire.CodeNoWatcher)
	w.create(missing, nil)
	x.proveQuiet(w, dir)

	// What is left still fires: remove only the data watch.
	watchBoth()
	x.watches(remove, n, data, wire.CodeOK)
	w.set(n, "still removed")
	w.create(n+"/k3", nil)
	x.expectEvents(childrenChanged(n))
	x.proveQuiet(w, dir)
}

func rawRemovePersistent(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/rp")
	w.create(dir, nil)
	check, remove := wire.OpCheckWatches, wire.OpRemoveWatches

	// A persistent watch is in both tables; removing the data one leaves
	// the child one.
	pw := dir + "/pw"
	w.create(pw, nil)
	x.addWatch(pw, wire.AddWatchModePersistent)
	x.watches(check, pw, wire.WatcherTypeChildren, wire.CodeOK)
	x.watches(check, pw, wire.WatcherTypeData, wire.CodeOK)
	x.watches(remove, pw, wire.WatcherTypeData, wire.CodeOK)
	w.set(pw, "data watch removed")
	w.create(pw+"/k1", nil)
	x.expectEvents(childrenChanged(pw))
	x.watches(remove, pw, wire.WatcherTypeAny, wire.CodeOK)
	x.watches(check, pw, wire.WatcherTypeAny, wire.CodeNoWatcher)
	w.create(pw+"/k2", nil)
	w.set(pw, "all removed")
	x.proveQuiet(w, dir)

	// So is a recursive one, in ZooKeeper 3.8.0.
	rw := dir + "/rw"
	x.addWatch(rw, wire.AddWatchModePersistentRecursive)
	x.watches(check, rw, wire.WatcherTypeChildren, wire.CodeOK)
	x.watches(check, rw, wire.WatcherTypeData, wire.CodeOK)
	x.watches(remove, rw, wire.WatcherTypeAny, wire.CodeOK)
	x.watches(check, rw, wire.WatcherTypeAny, wire.CodeNoWatcher)
	w.create(rw, nil)
	w.create(rw+"/a", nil)
	x.proveQuiet(w, dir)
}

// rawWatcherTypeInvalid checks watcher types other than 1-3: ZooKeeper
// 3.8.0 knows no Persistent (4) or PersistentRecursive (5) type, and
// answers MARSHALLINGERROR whether or not a watch exists; the watch stays.
func rawWatcherTypeInvalid(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/wt")
	w.create(dir, nil)
	pw := dir + "/pw"
	x.addWatch(pw, wire.AddWatchModePersistent)
	rw := dir + "/rw"
	x.addWatch(rw, wire.AddWatchModePersistentRecursive)
	for _, op := range []wire.Op{wire.OpCheckWatches, wire.OpRemoveWatches} {
		for _, path := range []string{pw, rw, dir + "/unwatched"} {
			for _, typ := range []int32{wire.WatcherTypePersistent, wire.WatcherTypePersistentRecursive} {
				x.watches(op, path, typ, wire.CodeMarshallingError)
			}
		}
	}
	w.create(pw, nil)
	x.expectEvents(created(pw))
	w.create(rw, nil)
	x.expectEvents(created(rw))
	mustPing(t, x.rawConn)
}

func rawSetWatches2(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	w := mustRawSession(t, tg.addr)
	dir := tg.p("/sw")
	x.create(dir, nil)
	for _, n := range []string{"/changed", "/same", "/deleted", "/parent", "/sameparent"} {
		x.create(dir+n, nil)
	}
	// The zxid the client last saw: the reply to its last create.
	rel := x.stat(dir + "/sameparent").Czxid

	// Changes while the client is away.
	w.set(dir+"/changed", "c")
	w.del(dir + "/deleted")
	w.create(dir+"/created", nil)
	w.create(dir+"/parent/kid", nil)

	x2 := x.mustResume()
	x.expectClosed()
	x2.sendXid(wire.XidSetWatches, wire.OpSetWatches2, &wire.SetWatches2{
		RelativeZxid:               rel,
		DataWatches:                []string{dir + "/changed", dir + "/same", dir + "/deleted"},
		ExistWatches:               []string{dir + "/created", dir + "/stillmissing"},
		ChildWatches:               []string{dir + "/parent", dir + "/sameparent", dir + "/deleted"},
		PersistentWatches:          []string{dir + "/pw"},
		PersistentRecursiveWatches: []string{dir + "/rw"},
	})
	// The missed events come first, in list order, then the reply.
	x2.expectEvents(
		dataChanged(dir+"/changed"),
		deleted(dir+"/deleted"),
		created(dir+"/created"),
		childrenChanged(dir+"/parent"),
		deleted(dir+"/deleted"),
	)
	h, body := x2.expectReply(wire.XidSetWatches)
	assert.Equal(t, wire.CodeOK, h.Err)
	assert.Empty(t, body)

	// The rest were registered again, as one-shot watches.
	w.set(dir+"/same", "s")
	x2.expectEvents(dataChanged(dir + "/same"))
	w.set(dir+"/same", "again")
	w.create(dir+"/stillmissing", nil)
	x2.expectEvents(created(dir + "/stillmissing"))
	w.create(dir+"/sameparent/k", nil)
	x2.expectEvents(childrenChanged(dir + "/sameparent"))
	w.create(dir+"/sameparent/k2", nil)

	// The persistent and recursive watches are back.
	x2.watches(wire.OpCheckWatches, dir+"/pw", wire.WatcherTypeData, wire.CodeOK)
	x2.watches(wire.OpCheckWatches, dir+"/pw", wire.WatcherTypeChildren, wire.CodeOK)
	x2.watches(wire.OpCheckWatches, dir+"/rw", wire.WatcherTypeData, wire.CodeOK)
	w.create(dir+"/pw", nil)
	x2.expectEvents(created(dir + "/pw"))
	w.create(dir+"/pw/k", nil)
	x2.expectEvents(childrenChanged(dir + "/pw"))
	w.set(dir+"/pw", "1")
	x2.expectEvents(dataChanged(dir + "/pw"))
	w.set(dir+"/pw", "2")
	x2.expectEvents(dataChanged(dir + "/pw"))
	w.set(dir+"/pw/k", "not watched")
	w.create(dir+"/rw", nil)
	x2.expectEvents(created(dir + "/rw"))
	w.create(dir+"/rw/a", nil)
	x2.expectEvents(created(dir + "/rw/a"))
	w.set(dir+"/rw/a", "1")
	x2.expectEvents(dataChanged(dir + "/rw/a"))
	w.del(dir + "/rw/a")
	x2.expectEvents(deleted(dir + "/rw/a"))
	x2.proveQuiet(w, dir)
	require.Equal(t, x.id, x2.id)
}
