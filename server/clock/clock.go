// Package clock is where a server reads the time: wall time for what
// ZooKeeper stores and compares across members (a znode's ctime and mtime,
// TTLs, session ids) and elapsed time, on a monotonic clock, for what must
// not move when the wall clock is stepped (session deadlines), as
// ZooKeeper's Time.currentWallTime and Time.currentElapsedTime.
package clock

import (
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
