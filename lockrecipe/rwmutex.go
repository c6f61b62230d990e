package lockrecipe

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// An RWMutex is a reader/writer lock shared by every process that uses the
// same ZooKeeper path, with Curator's InterProcessReadWriteLock's names and
// order: readers create _c_<uuid>-__READ__<sequence> nodes, writers
// _c_<uuid>-__WRIT__<sequence>, all ordered by sequence. A reader holds the
// lock when no writer node comes before its own, and otherwise watches the
// last writer node before it; a writer holds it when its node is first, and
// otherwise watches the node just before it. So readers share, writers
// exclude everyone, a waiting writer holds back later readers, and a
// release wakes only the waiters it may let in.
//
// Within a process, an RWMutex behaves like a sync.RWMutex shared by any
// number of goroutines: readers share, a writer excludes them, and a
// waiting writer holds back new readers. Each read lock has its own node.
// Curator's downgrade (a thread holding the write lock may take the read
// lock) has no equivalent: a goroutine's RLock waits for a Lock it holds,
// as with sync.RWMutex.
type RWMutex struct {
	q    queue
	gate rwGate

	mu      sync.Mutex // guards writer, readers
	writer  *Lease
	readers []*Lease
}

// NewRWMutex returns an RWMutex on path. Nothing is sent to the server
// until the first lock, which creates path (and its parents, as
// containers) if they are missing.
func NewRWMutex(conn Conn, path string, opts ...Option) *RWMutex {
	return &RWMutex{q: newQueue(conn, path, rwKey, opts)}
}

// Lock waits until it holds the write lock, or until ctx ends: then its
// node is deleted and ctx's error returned.
func (rw *RWMutex) Lock(ctx context.Context) error {
	_, err := rw.Acquire(ctx)
	return err
}

// Unlock releases one hold of the write lock (see Mutex.Unlock).
func (rw *RWMutex) Unlock() error {
	rw.mu.Lock()
	l := rw.writer
	rw.mu.Unlock()
	if l == nil {
		return fmt.Errorf("unlock %s: %w", rw.q.dir, ErrNotLocked)
	}
	return l.Release()
}

// RLock waits until it holds a read lock, or until ctx ends: then its node
// is deleted and ctx's error returned.
func (rw *RWMutex) RLock(ctx context.Context) error {
	_, err := rw.RAcquire(ctx)
	return err
}

// RUnlock releases one hold of one of the read locks held through rw (any
// one: like sync.RWMutex, read locks have no owner).
func (rw *RWMutex) RUnlock() error {
	rw.mu.Lock()
	var l *Lease
	last := false
	for n := len(rw.readers); n > 0 && l == nil; n-- {
		var err error
		last, err = rw.readers[n-1].drop()
		if err == nil {
			l = rw.readers[n-1]
		}
		if err != nil || last {
			rw.readers = rw.readers[:n-1]
		}
	}
	rw.mu.Unlock()
	switch {
	case l == nil:
		return fmt.Errorf("runlock %s: %w", rw.q.dir, ErrNotLocked)
	case !last:
		return l.c.lostErr()
	}
	return l.finish()
}

// Acquire is Lock that also returns the holding as a Lease.
func (rw *RWMutex) Acquire(ctx context.Context) (*Lease, error) { return rw.acquire(ctx, true) }

// RAcquire is RLock that also returns the holding as a Lease.
func (rw *RWMutex) RAcquire(ctx context.Context) (*Lease, error) { return rw.acquire(ctx, false) }

// acquire takes the write lock (write) or a read lock: in the process
// first, then in ZooKeeper with a writer's or a reader's node and rule.
func (rw *RWMutex) acquire(ctx context.Context, write bool) (*Lease, error) {
	if err := rw.gate.lock(ctx, write); err != nil {
		return nil, err
	}
	name, r := readName, rule(shared)
	if write {
		name, r = writeName, exclusive
	}
	c, err := rw.q.acquire(ctx, name, rw.q.opts.data, r, true)
	if err != nil {
		rw.gate.unlock(write)
		return nil, err
	}
	var l *Lease
	l = newLease(c, func() {
		rw.mu.Lock()
		if write && rw.writer == l {
			rw.writer = nil
		} else if !write {
			rw.readers = slices.DeleteFunc(rw.readers, func(r *Lease) bool { return r == l })
		}
		rw.mu.Unlock()
		rw.gate.unlock(write)
	})
	rw.mu.Lock()
	if write {
		rw.writer = l
	} else {
		rw.readers = append(rw.readers, l)
	}
	rw.mu.Unlock()
	return l, nil
}

// rwGate is an in-process reader/writer lock that a context can abandon,
// preferring writers as sync.RWMutex does.
type rwGate struct {
	mu      sync.Mutex    // guards the fields below
	readers int           // read holds
	writer  bool          // a write hold
	waiting int           // writers waiting
	changed chan struct{} // closed and replaced when the fields change
}

// lock waits for a write (write) or read hold, or until ctx ends.
func (g *rwGate) lock(ctx context.Context, write bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if write {
		g.waiting++
		defer func() { g.waiting--; g.broadcast() }()
	}
	for g.writer || (write && g.readers > 0) || (!write && g.waiting > 0) {
		ch := g.signal()
		g.mu.Unlock()
		select {
		case <-ch:
			g.mu.Lock()
		case <-ctx.Done():
			g.mu.Lock()
			return ctx.Err()
		}
	}
	if write {
		g.writer = true
	} else {
		g.readers++
	}
	return nil
}

// unlock gives a hold back.
func (g *rwGate) unlock(write bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if write {
		g.writer = false
	} else {
		g.readers--
	}
	g.broadcast()
}

// signal returns the channel the next change closes. g.mu must be held.
func (g *rwGate) signal() <-chan struct{} {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

// broadcast wakes every waiter. g.mu must be held.
func (g *rwGate) broadcast() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}
