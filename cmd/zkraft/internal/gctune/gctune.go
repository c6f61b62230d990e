// Package gctune keeps the garbage collector's target in step with the
// live heap: after each collection it sets GOGC so that the heap may grow
// by a fixed amount (Floor) or by a fraction of the live heap (1/Divisor),
// whichever is more, within [MinPercent, MaxPercent].
//
// A server's heap is mostly its tree, which lives long. A fixed GOGC either
// collects a small heap very often (a low GOGC: many cheap cycles, each
// with fixed costs) or lets a large one grow to several times the live
// data (a high GOGC: memory). With the tree's storage holding no pointers
// (package tree), a collection of a large heap costs little more than
// one of a small heap, so a large heap can afford a small headroom.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Policy is how much the heap may grow between collections.
type Policy struct {
	Floor      uint64 // bytes the heap may always grow by
	Divisor    uint64 // or live/Divisor, if more
	MinPercent int    // bounds of the GOGC set
	MaxPercent int
}

// Default is the binary's policy: 32 MiB or an eighth of the live heap,
// GOGC between 12 and 400. An idle or small server (8 MiB live) runs at
// GOGC=400, as the binary always did; one holding a million znodes (about
// 165 MB) near GOGC=20, whose headroom is then an eighth of its resident
// memory rather than a third, with no change in its throughput or write
// p99 (cmd/zkload/PERFORMANCE.md, 2026-11-28).
var Default = Policy{Floor: 32 << 20, Divisor: 8, MinPercent: 12, MaxPercent: 400}

// Percent returns the GOGC that p sets for a live heap of live bytes.
func (p Policy) Percent(live uint64) int {
	if live == 0 {
		return p.MaxPercent
	}
	room := max(p.Floor, live/p.Divisor)
	pct := room * 100 / live
	return int(min(max(pct, uint64(p.MinPercent)), uint64(p.MaxPercent)))
}

// Tuner sets GOGC after each collection until Stop.
type Tuner struct {
	p       Policy
	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
}

// Start sets GOGC for the live heap now and after every collection.
func Start(p Policy) *Tuner {
	t := &Tuner{p: p, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
	return t
}

// arm makes the next collection call tune: a sentinel object that nothing
// refers to is found unreachable by it, which runs the sentinel's cleanup.
func (t *Tuner) arm() {
	sentinel := new([16]byte)
	runtime.AddCleanup(sentinel, func(t *Tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets GOGC for the live heap the last collection measured, and
// reports whether the tuner still runs.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	live := uint64(0)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if pct := t.p.Percent(live); pct != t.percent {
		debug.SetGCPercent(pct)
		t.percent = pct
	}
	return true
}

// Percent returns the GOGC the tuner set last.
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Stop stops tuning; GOGC stays as last set.
func (t *Tuner) Stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
}
