// Package clock is where a server reads the time: wall time for what
// ZooKeeper stores and compares across members (a znode's ctime and mtime,
// TTLs, session ids) and elapsed time, on a monotonic clock, for what must
// not move when the wall clock is stepped (session deadlines), as
// ZooKeeper's Time.currentWallTime and Time.currentElapsedTime.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock gives the wall time and the elapsed time.
type Clock interface {
	// Now is the wall time.
	Now() time.Time
	// Elapsed is the time since the clock began, on a monotonic clock: it
	// never goes back and does not follow steps of the wall clock.
	Elapsed() time.Duration
}

// Real is the machine's clock.
type Real struct{ origin time.Time }

// NewReal returns the machine's clock, its elapsed time counted from now.
func NewReal() *Real { return &Real{origin: time.Now()} }

// Now implements Clock.
func (r *Real) Now() time.Time { return time.Now() }

// Elapsed implements Clock; Go's time.Since reads the monotonic clock.
func (r *Real) Elapsed() time.Duration { return time.Since(r.origin) }

// Steppable is a clock whose wall time can be stepped, as an operator or
// an NTP step moves a machine's clock, while its elapsed time runs on
// undisturbed. Fault tests use it to move one member's clock.
type Steppable struct {
	Clock
	offset atomic.Int64 // ns added to the wall time
}

// NewSteppable wraps c.
func NewSteppable(c Clock) *Steppable { return &Steppable{Clock: c} }

// Step moves the wall time by d (back if d is negative).
func (s *Steppable) Step(d time.Duration) { s.offset.Add(int64(d)) }

// Offset returns how far the wall time has been stepped in all.
func (s *Steppable) Offset() time.Duration { return time.Duration(s.offset.Load()) }

// Now implements Clock: the wrapped wall time, stepped.
func (s *Steppable) Now() time.Time { return s.Clock.Now().Add(s.Offset()) }

// Advancer is a clock a test moves forward: OnAdvance registers a hook
// that runs on every Advance, after the time has moved and before Advance
// returns, until stop is called. A server registers one to do at once what
// the new time makes due (session expiry, TTLs, containers).
type Advancer interface {
	OnAdvance(hook func()) (stop func())
}

// OnAdvance implements Advancer for the clock it wraps, if that is one: a
// stepped clock is advanced with the clock beneath it.
func (s *Steppable) OnAdvance(hook func()) (stop func()) {
	if a, ok := s.Clock.(Advancer); ok {
		return a.OnAdvance(hook)
	}
	return func() {}
}

// Fake is a clock that stands still until a test moves it: Advance moves
// its wall and elapsed time together, and runs the hooks of whoever
// listens (the servers using it) before it returns.
type Fake struct {
	mu      sync.Mutex // guards wall, elapsed, hooks, next
	wall    time.Time
	elapsed time.Duration
	hooks   map[int]func()
	next    int

	advancing sync.Mutex // one Advance at a time, hooks included
}

var _ Advancer = (*Fake)(nil)

// NewFake returns a clock standing at wall time start.
func NewFake(start time.Time) *Fake {
	return &Fake{wall: start, hooks: make(map[int]func())}
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wall
}

// Elapsed implements Clock.
func (f *Fake) Elapsed() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.elapsed
}

// Advance moves the clock forward by d and returns once every hook has
// run. A negative d is an error of the test's: it panics.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Advance by a negative duration")
	}
	f.advancing.Lock()
	defer f.advancing.Unlock()
	f.mu.Lock()
	f.wall = f.wall.Add(d)
	f.elapsed += d
	hooks := make([]func(), 0, len(f.hooks))
	for i := range f.next {
		if h, ok := f.hooks[i]; ok {
			hooks = append(hooks, h)
		}
	}
	f.mu.Unlock()
	for _, h := range hooks {
		h()
	}
}

// OnAdvance implements Advancer.
func (f *Fake) OnAdvance(hook func()) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.hooks[id] = hook
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.hooks, id)
	}
}
