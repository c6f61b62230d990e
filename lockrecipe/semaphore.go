package lockrecipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// A Semaphore hands out at most n leases at a time to every process that
// uses the same ZooKeeper path, with the layout of Curator's
// InterProcessSemaphoreV2: an acquirer first takes the Mutex on
// <path>/locks, then creates its lease node _c_<uuid>-lease-<sequence>
// under <path>/leases, and, holding the mutex, waits until at most n lease
// nodes exist. Only the one acquirer holding the mutex watches the leases,
// so each release wakes one process; the others wait for the mutex, each
// watching only its predecessor.
//
// A Semaphore is safe for concurrent use; each Acquire returns its own
// Lease, released with Lease.Release.
type Semaphore struct {
	lock   *Mutex
	leases queue
	n      int
}

// NewSemaphore returns a Semaphore of n leases on path. Every process must
// use the same n (Curator's note applies: nothing checks it). Nothing is
// sent to the server until the first Acquire.
func NewSemaphore(conn Conn, path string, n int, opts ...Option) *Semaphore {
	dir := cleanPath(path)
	return &Semaphore{
		lock:   NewMutex(conn, childPath(dir, "locks"), opts...),
		leases: newQueue(conn, childPath(dir, "leases"), func(s string) string { return sortKey(s, leaseName) }, opts),
		n:      n,
	}
}

// Acquire waits until it holds a lease, or until ctx ends: then its nodes
// are deleted and ctx's error returned. The lease is released with
// Lease.Release, and reports its loss on Lease.Lost.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	if s.n < 1 {
		return nil, fmt.Errorf("semaphore %s: %d leases: %w", s.leases.dir, s.n, zk.ErrBadArguments)
	}
	if err := s.lock.Lock(ctx); err != nil {
		return nil, err
	}
	c, err := s.leases.acquire(ctx, leaseName, s.leases.opts.data, s.fits, true)
	if uerr := s.lock.Unlock(); uerr != nil && err == nil && !errors.Is(uerr, ErrLost) {
		// Our lock node may stay behind and block everyone: give up
		// the lease rather than hand out one that blocks the others.
		c.release()
		return nil, fmt.Errorf("semaphore %s: %w", s.leases.dir, uerr)
	}
	if err != nil {
		return nil, err
	}
	return newLease(c, func() {}), nil
}

// fits is the semaphore's rule: hold when at most n leases exist, else
// watch the list of leases.
func (s *Semaphore) fits(o order, _ int) (bool, string) {
	return len(o.names) <= s.n, ""
}
