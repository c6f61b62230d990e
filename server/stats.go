package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// serverStats are the counters four-letter words and mntr report.
type serverStats struct {
	received    atomic.Int64 // packets received
	sent        atomic.Int64 // packets sent
	outstanding atomic.Int64 // writes in flight
	rejected    atomic.Int64 // connections refused
	expired     atomic.Int64 // sessions expired
	lat         latencies
}

func (s *serverStats) latency(d time.Duration) { s.lat.add(d.Milliseconds()) }

func (s *serverStats) reset() {
	s.received.Store(0)
	s.sent.Store(0)
	s.lat.reset()
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
	n, sum := l.count.Load(), l.sum.Load()
	lo := max(l.min.Load()-1, 0)
	if n == 0 {
		return 0, "0.0", 0
	}
	avg := float64(sum) / float64(n)
	return lo, javaDouble(float64(int64(avg*10000+0.5)) / 10000), l.max.Load()
}

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
