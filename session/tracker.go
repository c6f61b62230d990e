package session

import (
	"slices"
	"time"
)

// Tracker keeps each session's liveness deadline in tick buckets: a touch at
// time t moves the session to the bucket of the first tick boundary after
// t+timeout, and Expired hands back every session whose bucket has passed.
// Times are durations on a monotonic clock (the server's Clock.Elapsed),
// never wall time: a wall clock stepped forward would expire every session
// at once, and one stepped back would keep dead sessions alive, which is
// why ZooKeeper's ExpiryQueue counts on System.nanoTime too. It is not safe
// for concurrent use.
type Tracker struct {
	tick     int64 // ms
	sessions map[int64]*entry
	buckets  map[int64]map[int64]struct{} // deadline (ms) -> session ids
}

type entry struct {
	timeout  int64 // ms
	deadline int64 // ms, a multiple of tick
}

// NewTracker returns a tracker with the given tick (ZooKeeper's tickTime).
func NewTracker(tick time.Duration) *Tracker {
	return &Tracker{
		tick:     max(tick.Milliseconds(), 1),
		sessions: make(map[int64]*entry),
		buckets:  make(map[int64]map[int64]struct{}),
	}
}

// roundUp returns the first tick boundary strictly after ms.
func (t *Tracker) roundUp(ms int64) int64 { return (ms/t.tick + 1) * t.tick }

// Add starts tracking session id with the given timeout, its deadline counted
// from now; an already tracked session gets the new timeout and deadline.
func (t *Tracker) Add(id int64, timeout time.Duration, now time.Duration) {
	e := t.sessions[id]
	if e == nil {
		e = &entry{}
		t.sessions[id] = e
	}
	e.timeout = timeout.Milliseconds()
	t.move(id, e, t.roundUp(now.Milliseconds()+e.timeout))
}

// Touch extends the deadline of a tracked session from now. It reports
// whether the session is tracked.
func (t *Tracker) Touch(id int64, now time.Duration) bool {
	e := t.sessions[id]
	if e == nil {
		return false
	}
	if d := t.roundUp(now.Milliseconds() + e.timeout); d != e.deadline {
		t.move(id, e, d)
	}
	return true
}

func (t *Tracker) move(id int64, e *entry, deadline int64) {
	t.unbucket(id, e)
	e.deadline = deadline
	b := t.buckets[deadline]
	if b == nil {
		b = make(map[int64]struct{})
		t.buckets[deadline] = b
	}
	b[id] = struct{}{}
}

func (t *Tracker) unbucket(id int64, e *entry) {
	if b := t.buckets[e.deadline]; b != nil {
		delete(b, id)
		if len(b) == 0 {
			delete(t.buckets, e.deadline)
		}
	}
}

// Remove stops tracking session id.
func (t *Tracker) Remove(id int64) {
	if e := t.sessions[id]; e != nil {
		t.unbucket(id, e)
		delete(t.sessions, id)
	}
}

// Contains reports whether session id is tracked.
func (t *Tracker) Contains(id int64) bool { return t.sessions[id] != nil }

// Len returns the number of tracked sessions.
func (t *Tracker) Len() int { return len(t.sessions) }

// Deadline returns the time at which session id expires, if tracked.
func (t *Tracker) Deadline(id int64) (time.Duration, bool) {
	e := t.sessions[id]
	if e == nil {
		return 0, false
	}
	return time.Duration(e.deadline) * time.Millisecond, true
}

// Expired removes and returns, in ascending order, every session whose
// deadline is at or before now.
func (t *Tracker) Expired(now time.Duration) []int64 {
	ms := now.Milliseconds()
	var out []int64
	for deadline, b := range t.buckets {
		if deadline > ms {
			continue
		}
		for id := range b {
			out = append(out, id)
			delete(t.sessions, id)
		}
		delete(t.buckets, deadline)
	}
	slices.Sort(out)
	return out
}

// Next returns the earliest deadline of any tracked session, if there is one.
func (t *Tracker) Next() (time.Duration, bool) {
	first, ok := int64(0), false
	for deadline := range t.buckets {
		if !ok || deadline < first {
			first, ok = deadline, true
		}
	}
	return time.Duration(first) * time.Millisecond, ok
}
