package lockrecipe

import (
	"fmt"
	"sync"
)

// A Lease is one holding of a lock, a read lock, a semaphore lease or
// leadership: the node that won, watched until it is released. It is the
// way this package does reentrancy: code that holds a Lease passes it down
// the call stack (or to another goroutine), and code that needs the lock
// while its caller may already hold it calls Acquire and defers Release on
// that lease, which nest like Curator's per-thread counts. The lock is
// released when the last hold is.
//
// A Lease is safe for concurrent use.
type Lease struct {
	c    *contender
	free func() // called once, after the last hold is released

	mu    sync.Mutex // guards holds
	holds int
}

func newLease(c *contender, free func()) *Lease {
	return &Lease{c: c, free: free, holds: 1}
}

// Acquire takes one more hold of a held lease, at once and without asking
// the server. It fails with ErrReleased once the lease has been released
// completely, and with an ErrLost error once the lease is known to be lost
// (the recipe never hands out a hold it knows it no longer has).
func (l *Lease) Acquire() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds == 0 {
		return fmt.Errorf("acquire %s: %w", l.c.path, ErrReleased)
	}
	if err := l.c.lostErr(); err != nil {
		return err
	}
	l.holds++
	return nil
}

// Release gives back one hold. The last one deletes the lease's node,
// which hands the lock to the next waiter, and frees the lock for other
// goroutines sharing the lock object. Release reports an ErrLost error if
// the lease was lost meanwhile (the lock may have been held by someone else
// since), and ErrReleased if there was no hold left.
func (l *Lease) Release() error {
	last, err := l.drop()
	if err != nil {
		return err
	}
	if !last {
		return l.c.lostErr()
	}
	return l.finish()
}

// drop takes one hold away and reports whether it was the last one, after
// which the caller must call finish.
func (l *Lease) drop() (last bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds == 0 {
		return false, fmt.Errorf("release %s: %w", l.c.path, ErrReleased)
	}
	l.holds--
	return l.holds == 0, nil
}

// finish releases the node once the last hold is dropped.
func (l *Lease) finish() error {
	err := l.c.release()
	l.free()
	return err
}

// Lost returns a channel that is closed when the lease is lost while held:
// its session expired or was closed, or its node was deleted by someone
// else. It is not closed by Release. See the package documentation for
// when a client can learn of an expiry.
func (l *Lease) Lost() <-chan struct{} { return l.c.lost }

// Node returns the path of the lease's node, for example
// /locks/x/_c_0f8e...-lock-0000000007.
func (l *Lease) Node() string { return l.c.path }

// closed returns a closed channel: what Lost returns when nothing is held,
// and a wait that should end at once.
func closed[T any]() <-chan T {
	ch := make(chan T)
	close(ch)
	return ch
}
