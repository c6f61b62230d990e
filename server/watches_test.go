package server

import (
	"fmt"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatchRegistry_RemoveConnInBatches checks that a closed connection's
// watches go removeBatch per hold of the registry's lock, so that writes,
// which fire watches under it, wait for one batch only; and that the watch
// count mntr reports stays exact throughout.
func TestWatchRegistry_RemoveConnInBatches(t *testing.T) {
	w := newWatchRegistry(new(changes), new(serverStats))
	many, other := &conn{}, &conn{}
	n := 2*removeBatch + 10
	for i := range n {
		w.add(many, fmt.Sprintf("/w/%d", i), tableData)
	}
	w.add(many, "/w/0", tableChild)
	w.addMode(many, "/", tableData, modeRecursive)
	w.add(other, "/w/0", tableData)
	w.add(many, "/w/0", tableData) // again: still one watch
	require.Equal(t, n+3, w.total())

	paths := w.detach(many, tableData)
	require.Len(t, paths, n+1)
	assert.Empty(t, many.dataPaths, "the connection looks unwatched at once")
	for left := len(paths); left > 0; left -= removeBatch {
		before := w.total()
		paths = w.removeSome(many, tableData, paths)
		require.Len(t, paths, max(left-removeBatch, 0))
		require.Equal(t, before-min(left, removeBatch), w.total(), "one batch per call")
	}
	assert.Zero(t, w.recursives)
	w.removeConn(many)
	assert.Equal(t, 1, w.total(), "the other connection's watch is left")
	assert.True(t, w.watched("/w/0", tableData))
	assert.False(t, w.watched("/w/0", tableChild))

	assert.True(t, w.remove(other, "/w/0", tableData, func(mode) bool { return true }))
	assert.Zero(t, w.total())
}

// BenchmarkWatchRegistry_Fire measures what firing one node's data watch
// costs per watcher, from the registry's lock to the notification queued
// on each connection (writing it out is left out).
//
//	go test -run '^$' -bench WatchRegistry_Fire ./server
func BenchmarkWatchRegistry_Fire(b *testing.B) {
	srv := &Server{cfg: Config{MaxQueuedBytes: 1 << 20}}
	w := newWatchRegistry(new(changes), &srv.stats)
	const watchers = 10000
	conns := make([]*conn, watchers)
	for i := range conns {
		conns[i] = &conn{srv: srv}
		conns[i].setAuth(nil)
	}
	tr := []tree.Trigger{{Event: wire.EventNodeDataChanged, Path: "/fanout/node", ACL: wire.OpenACLUnsafe}}
	handoff := func([]*conn) {}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for _, c := range conns {
			w.add(c, tr[0].Path, tableData)
			c.out, c.full, c.outBytes = c.out[:0], c.full[:0], 0
		}
		b.StartTimer()
		w.fire(tr, handoff)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*watchers), "ns/watcher")
}

// TestServer_FlushLaterWaitsForTheBatch checks that the notifications a
// change queues on a few connections are written once Raft's batch has been
// applied (BatchApplied), however many changes of the batch notified them,
// and that a fan-out to more connections is handed off at once.
func TestServer_FlushLaterWaitsForTheBatch(t *testing.T) {
	s := &Server{cfg: Config{MaxQueuedBytes: 1 << 20}}
	// No socket: flushing wakes its writer, which the test stands in for.
	writerless := func() *conn {
		c := &conn{srv: s, wake: make(chan struct{}, 1)}
		c.writer.Store(true)
		return c
	}
	c := writerless()
	woken := func() bool {
		select {
		case <-c.wake:
			return true
		default:
			return false
		}
	}
	frame := eventFrame(wire.EventNodeCreated, "/a")
	for range 3 {
		require.True(t, c.queueFramed(frame))
		s.flushLater([]*conn{c})
	}
	require.False(t, woken(), "nothing flushed before the batch ends")
	require.Len(t, s.toFlush, 3)
	s.BatchApplied()
	require.True(t, woken(), "flushed at the end of the batch")
	require.Empty(t, s.toFlush)
	require.Len(t, c.out, 3*len(frame), "every notification still queued, in order, for the writer")

	many := make([]*conn, flushInline+1)
	for i := range many {
		many[i] = writerless()
	}
	s.flushLater(many)
	require.Empty(t, s.toFlush, "a fan-out is not left to the end of the batch")
	s.group.Wait()
	for _, m := range many {
		require.Len(t, m.wake, 1, "flushed by the fan-out's goroutine")
	}
}
