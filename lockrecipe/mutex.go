package lockrecipe

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// A Mutex is an exclusive lock shared by every process that uses the same
// ZooKeeper path: Curator's InterProcessMutex, without the herd. Each
// attempt creates an ephemeral sequential node _c_<uuid>-lock-<sequence>
// under the path; the lowest sequence holds the lock, and every other
// attempt watches only the node just before its own. Waiters get the lock
// in the order of their sequence numbers.
//
// Within a process, a Mutex behaves like a sync.Mutex shared by any number
// of goroutines: one of them holds it from Lock (or Acquire) until the
// matching Unlock (or last Release), the others wait without creating
// nodes, and any goroutine may call Unlock. It is not reentrant: a second
// Lock waits, like sync.Mutex's; for reentrancy use Acquire and the Lease
// it returns.
type Mutex struct {
	q    queue
	name string // the lock name: "lock-", or "latch-" for an Election

	// gate holds a token from the start of a Lock until its Unlock: the
	// in-process sync.Mutex, which a context can abandon.
	gate chan struct{}

	mu   sync.Mutex // guards held
	held *Lease
}

// NewMutex returns a Mutex on path. Nothing is sent to the server until the
// first Lock, which creates path (and its parents, as containers) if they
// are missing. Use one client (conn, usually a *zk.Conn) per process, or
// per session that should count as one holder; the Mutex never closes it.
func NewMutex(conn Conn, path string, opts ...Option) *Mutex {
	return &Mutex{q: newQueue(conn, path, mutexKey, opts), name: mutexName, gate: make(chan struct{}, 1)}
}

// Lock waits until it holds the lock, or until ctx ends: then its node is
// deleted and ctx's error returned. It fails with an ErrLost error if the
// session expires while waiting.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.Acquire(ctx)
	return err
}

// Acquire is Lock that also returns the holding as a Lease, which nests
// (Lease.Acquire, Lease.Release) and reports its loss (Lease.Lost).
// Releasing the lease's last hold unlocks m; so does Unlock.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, m.q.opts.data)
}

// TryLock takes the lock if nobody holds or awaits it, and reports whether
// it did, without waiting: not for another goroutine of this process that
// holds or is taking m, and not for another holder. A node is created and,
// if it is not first, deleted again. ctx bounds only the retries through a
// connection loss.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	select {
	case m.gate <- struct{}{}:
	default:
		return false, nil
	}
	_, err := m.take(ctx, m.q.opts.data, false)
	if errors.Is(err, errBusy) {
		return false, nil
	}
	return err == nil, err
}

// Unlock releases one hold of the current holding: the lock itself, unless
// it was re-entered through its Lease. It returns ErrNotLocked if m is not
// locked, and an ErrLost error if the lock had been lost (m is unlocked all
// the same).
func (m *Mutex) Unlock() error {
	m.mu.Lock()
	l := m.held
	m.mu.Unlock()
	if l == nil {
		return fmt.Errorf("unlock %s: %w", m.q.dir, ErrNotLocked)
	}
	return l.Release()
}

// Lost returns a channel that is closed when the current holding of m is
// lost (see Lease.Lost). When m is not held it returns a closed channel:
// nothing is held.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		return closed[struct{}]()
	}
	return m.held.Lost()
}

func (m *Mutex) acquire(ctx context.Context, data []byte) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case m.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.take(ctx, data, true)
}

// take runs one attempt once the gate is ours, and gives the gate back if
// it fails.
func (m *Mutex) take(ctx context.Context, data []byte, wait bool) (*Lease, error) {
	c, err := m.q.acquire(ctx, m.name, data, exclusive, wait)
	if err != nil {
		<-m.gate
		return nil, err
	}
	var l *Lease
	l = newLease(c, func() {
		m.mu.Lock()
		if m.held == l {
			m.held = nil
		}
		m.mu.Unlock()
		<-m.gate
	})
	m.mu.Lock()
	m.held = l
	m.mu.Unlock()
	return l, nil
}
