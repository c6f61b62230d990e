package lockrecipe_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestRWMutex_ReadersShareWritersExclude walks through the cases one by
// one across three sessions.
func TestRWMutex_ReadersShareWritersExclude(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	a := lockrecipe.NewRWMutex(newSession(t, addr).Conn, path)
	b := lockrecipe.NewRWMutex(newSession(t, addr).Conn, path)
	w := lockrecipe.NewRWMutex(newSession(t, addr).Conn, path)
	observer := newSession(t, addr)
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}

	require.NoError(t, a.RLock(ctx))
	require.NoError(t, b.RLock(ctx), "readers share")
	assert.ErrorIs(t, w.Lock(short()), context.DeadlineExceeded, "a writer waits for readers")

	writer := make(chan error, 1)
	go func() { writer <- w.Lock(ctx) }()
	waitChildren(t, observer.Conn, path, 3)
	assert.ErrorIs(t, a.RLock(short()), context.DeadlineExceeded, "a reader queues behind a waiting writer")
	require.NoError(t, a.RUnlock())
	require.NoError(t, b.RUnlock())
	require.NoError(t, wait(t, writer, "the writer gets the lock once readers left"))
	assert.ErrorIs(t, b.RLock(short()), context.DeadlineExceeded, "no reader while a writer holds")
	assert.ErrorIs(t, a.Lock(short()), context.DeadlineExceeded, "no second writer")
	require.NoError(t, w.Unlock())
	require.NoError(t, b.RLock(ctx))
	require.NoError(t, b.RUnlock())
	assert.ErrorIs(t, b.RUnlock(), lockrecipe.ErrNotLocked)
	assert.ErrorIs(t, w.Unlock(), lockrecipe.ErrNotLocked)
	assert.Empty(t, children(t, observer.Conn, path))
}

// TestRWMutex_Stress runs readers and writers in several sessions, two
// goroutines sharing each RWMutex, and checks the invariant inside every
// critical section: a writer is alone, readers see no writer. (That
// readers do share is shown step by step above.)
func TestRWMutex_Stress(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	var readers, writers, broken atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		rw := lockrecipe.NewRWMutex(newSession(t, addr).Conn, path)
		for g := range 2 {
			write := (i+g)%3 == 0
			wg.Go(func() {
				for range 20 {
					if write {
						if !assert.NoError(t, rw.Lock(ctx)) {
							return
						}
						if writers.Add(1) != 1 || readers.Load() != 0 {
							broken.Add(1)
						}
						writers.Add(-1)
						assert.NoError(t, rw.Unlock())
						continue
					}
					if !assert.NoError(t, rw.RLock(ctx)) {
						return
					}
					readers.Add(1)
					if writers.Load() != 0 {
						broken.Add(1)
					}
					runtime.Gosched()
					readers.Add(-1)
					assert.NoError(t, rw.RUnlock())
				}
			})
		}
	}
	wg.Wait()
	assert.Zero(t, broken.Load(), "a writer was not alone")
	assert.Empty(t, children(t, newSession(t, addr).Conn, path))
}

// TestRWMutex_Leases reports loss through leases, as Mutex does.
func TestRWMutex_Leases(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	s := newSession(t, addr)
	rw := lockrecipe.NewRWMutex(s.Conn, path)
	r1, err := rw.RAcquire(ctx)
	require.NoError(t, err)
	r2, err := rw.RAcquire(ctx)
	require.NoError(t, err, "two read locks in one process")
	assert.NotEqual(t, r1.Node(), r2.Node())
	assert.Contains(t, r1.Node(), "-__READ__")
	require.True(t, srv.ExpireSession(s.SessionID()))
	wait(t, r1.Lost(), "first read lock lost")
	wait(t, r2.Lost(), "second read lock lost")
	assert.ErrorIs(t, r1.Release(), lockrecipe.ErrLost)
	assert.ErrorIs(t, rw.RUnlock(), lockrecipe.ErrLost)
	w, err := rw.Acquire(ctx)
	require.NoError(t, err, "the write lock in the new session")
	assert.Contains(t, w.Node(), "-__WRIT__")
	require.NoError(t, w.Release())
}
