package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/server/internal/summary"
	"github.com/zkraft/zkraft/wire"
)

// serverStats are the counters four-letter words, mntr and /metrics
// report. Each is an atomic (or a few): recording costs no lock.
type serverStats struct {
	received    atomic.Int64 // packets received
	sent        atomic.Int64 // packets sent
	outstanding atomic.Int64 // writes in flight
	rejected    atomic.Int64 // connections refused
	expired     atomic.Int64 // sessions expired
	lat         latencies

	bytesReceived atomic.Int64 // bytes of the frames received, length prefixes included
	responseBytes atomic.Int64 // bytes of the frames queued to clients (replies and notifications)
	watchBytes    atomic.Int64 // bytes of the notifications among them
	responseSizes summary.Sizes
	read, update  summary.Summary // request latencies in ms, by kind (pings left out)
	authFailed    atomic.Int64    // auth packets refused
	connRequests  atomic.Int64    // connect requests received
	sessionless   atomic.Int64    // connections closed for sending no connect request in time
	commits       atomic.Int64    // commands applied
	notServing    atomic.Int64    // clients refused because the member was not serving
	// watchers notified per event that notified any, by event type
	// (zk_node_created/deleted/changed/children_watch_count).
	created, deleted, changed, children summary.Summary
}

func (s *serverStats) latency(d time.Duration, write bool) {
	ms := d.Milliseconds()
	s.lat.add(ms)
	if write {
		s.update.Add(ms)
	} else {
		s.read.Add(ms)
	}
}

// reset is srst and stat_reset: the request counters and latencies, as
// ZooKeeper's ServerStats.reset with its metrics.
func (s *serverStats) reset() {
	s.received.Store(0)
	s.sent.Store(0)
	s.lat.reset()
	s.bytesReceived.Store(0)
	s.responseBytes.Store(0)
	s.watchBytes.Store(0)
	s.responseSizes.Reset()
	for _, sum := range []*summary.Summary{&s.read, &s.update, &s.created, &s.deleted, &s.changed, &s.children} {
		sum.Reset()
	}
	for _, n := range []*atomic.Int64{&s.rejected, &s.expired, &s.authFailed, &s.connRequests, &s.sessionless, &s.commits, &s.notServing} {
		n.Store(0)
	}
}

// queued counts n frames of size bytes queued to clients.
func (s *serverStats) queued(size, n int) {
	s.sent.Add(int64(n))
	s.responseBytes.Add(int64(size * n))
	s.responseSizes.Add(size) // the same size n times: once tells the last, least and largest
}

// watchersNotified records how many watchers one event notified.
func (s *serverStats) watchersNotified(ev wire.EventType, n int) {
	if n == 0 {
		return
	}
	switch ev {
	case wire.EventNodeCreated:
		s.created.Add(int64(n))
	case wire.EventNodeDeleted:
		s.deleted.Add(int64(n))
	case wire.EventNodeDataChanged:
		s.changed.Add(int64(n))
	case wire.EventNodeChildrenChanged:
		s.children.Add(int64(n))
	}
}

// latencies is a lock-free min/avg/max of request latencies in ms.
type latencies struct {
	count, sum atomic.Int64
	min, max   atomic.Int64 // min holds ms+1 so that 0 means "none yet"
}

func (l *latencies) add(ms int64) {
	l.count.Add(1)
	l.sum.Add(ms)
	for v := l.max.Load(); ms > v && !l.max.CompareAndSwap(v, ms); v = l.max.Load() {
	}
	for v := l.min.Load(); (v == 0 || ms+1 < v) && !l.min.CompareAndSwap(v, ms+1); v = l.min.Load() {
	}
}

func (l *latencies) reset() {
	l.count.Store(0)
	l.sum.Store(0)
	l.min.Store(0)
	l.max.Store(0)
}

// minAvgMax returns min and max in ms and the average as ZooKeeper prints a
// double (4 decimals at most, "0.0" for none).
func (l *latencies) minAvgMax() (int64, string, int64) {
	lo, avg, hi := l.minAvgMaxValues()
	return lo, javaDouble(avg), hi
}

// minAvgMaxValues returns min and max in ms and the average rounded to 4
// decimals, as ZooKeeper's ServerStats; all 0 for none.
func (l *latencies) minAvgMaxValues() (int64, float64, int64) {
	n, sum := l.count.Load(), l.sum.Load()
	if n == 0 {
		return 0, 0, 0
	}
	return max(l.min.Load()-1, 0), round4(float64(sum) / float64(n)), l.max.Load()
}

// JavaDouble formats v as Java's Double.toString does for the values
// ZooKeeper prints (averages): "0.0", "2.3333".
func JavaDouble(v float64) string { return javaDouble(v) }

// javaDouble formats v as Java's Double.toString does for ordinary values.
func javaDouble(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10) + ".0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// connStats are one connection's counters, as cons and stat print them.
type connStats struct {
	recv, sent  atomic.Int64
	heard       atomic.Int64 // when the last request came, Unix ns
	established time.Time

	mu       sync.Mutex // guards the fields below
	lastOp   string
	lastCxid int32
	lastZxid int64
	lastResp time.Time
	lastLat  int64
	lat      latencies
}

func (c *connStats) received() { c.recv.Add(1) }
func (c *connStats) sentOne()  { c.sent.Add(1) }

func (c *connStats) answered(req request, zxid int64, lat time.Duration, now time.Time) {
	ms := lat.Milliseconds()
	c.lat.add(ms)
	c.mu.Lock()
	c.lastOp = opTag(req.op)
	c.lastCxid = req.xid
	c.lastZxid = zxid
	c.lastResp = now
	c.lastLat = ms
	c.mu.Unlock()
}

func (c *connStats) reset() {
	c.recv.Store(0)
	c.sent.Store(0)
	c.lat.reset()
	c.mu.Lock()
	c.lastOp, c.lastCxid, c.lastZxid, c.lastResp, c.lastLat = "", 0, 0, time.Time{}, 0
	c.mu.Unlock()
}

// opTag is the four-letter tag ZooKeeper's cons prints for an opcode.
func opTag(op wire.Op) string {
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		return "CREA"
	case wire.OpDelete, wire.OpDeleteContainer:
		return "DELE"
	case wire.OpGetChildren, wire.OpGetChildren2:
		return "GETC"
	}
	if tag, ok := opTags[op]; ok {
		return tag
	}
	return "NA"
}

var opTags = map[wire.Op]string{
	wire.OpExists: "EXIS", wire.OpGetData: "GETD", wire.OpSetData: "SETD", wire.OpGetACL: "GETA",
	wire.OpSetACL: "SETA", wire.OpSync: "SYNC", wire.OpPing: "PING", wire.OpMulti: "MULT",
	wire.OpSetWatches: "SETW", wire.OpSetWatches2: "STW2", wire.OpCloseSession: "CLOS",
	wire.OpCheck: "CHEC", wire.OpReconfig: "RECO", wire.OpMultiRead: "MLTR", wire.OpAddWatch: "ADDW",
	wire.OpCheckWatches: "CHKW", wire.OpRemoveWatches: "REMW", wire.OpWhoAmI: "HOMI",
	wire.OpGetEphemerals: "GETE", wire.OpGetAllChildrenNumber: "GETACN", wire.OpCreateSession: "SESS",
}
