// Package backoff is the pause an accept loop takes after failures in a
// row: a process out of descriptors (EMFILE) fails every accept until a
// connection closes, and a loop that retried at once would spin.
package backoff

import "time"

// Accept's pauses: 5 ms after the first failure, doubling up to a second,
// as Go's HTTP server and hashicorp/raft's transport pause.
const (
	Min = 5 * time.Millisecond
	Max = time.Second
)

// Accept is the pause after the failures in a row so far. Its zero value
// is ready, at no failure.
type Accept struct{ last time.Duration }

// Failed returns the pause after one more failure.
func (b *Accept) Failed() time.Duration {
	b.last = min(max(2*b.last, Min), Max)
	return b.last
}

// Succeeded starts the pauses over.
func (b *Accept) Succeeded() { b.last = 0 }

// Sleep waits d, or until quit is closed, and reports whether it waited
// all of d.
func Sleep(d time.Duration, quit <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-quit:
		return false
	}
}
