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

// TestSemaphore_AtMostN runs eight sessions through a semaphore of three
// leases: never more than three holders. (That n leases are held at once
// is shown step by step below.)
func TestSemaphore_AtMostN(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	const n = 3
	var holders, tooMany atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		sem := lockrecipe.NewSemaphore(newSession(t, addr).Conn, path, n)
		wg.Go(func() {
			for range 10 {
				lease, err := sem.Acquire(ctx)
				if !assert.NoError(t, err) {
					return
				}
				if holders.Add(1) > n {
					tooMany.Add(1)
				}
				runtime.Gosched()
				holders.Add(-1)
				assert.NoError(t, lease.Release())
			}
		})
	}
	wg.Wait()
	assert.Zero(t, tooMany.Load(), "never more than n holders")
	assert.Empty(t, children(t, newSession(t, addr).Conn, path+"/leases"))
}

// TestSemaphore_WaitsAndCancels fills a semaphore, then checks that a
// further Acquire waits, leaves nothing behind when cancelled, and gets a
// lease once one is released.
func TestSemaphore_WaitsAndCancels(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	a := lockrecipe.NewSemaphore(newSession(t, addr).Conn, path, 2)
	b := lockrecipe.NewSemaphore(newSession(t, addr).Conn, path, 2)
	observer := newSession(t, addr)
	l1, err := a.Acquire(ctx)
	require.NoError(t, err)
	l2, err := a.Acquire(ctx)
	require.NoError(t, err, "a second lease in the same process")
	assert.Contains(t, l2.Node(), path+"/leases/_c_")
	assert.Contains(t, l2.Node(), "-lease-")

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, children(t, observer.Conn, path+"/leases"), 2, "the cancelled lease is gone")
	assert.Empty(t, children(t, observer.Conn, path+"/locks"), "and so is its lock node")

	got := make(chan *lockrecipe.Lease, 1)
	go func() {
		l, err := b.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	waitChildren(t, observer.Conn, path+"/leases", 3)
	require.NoError(t, l1.Release())
	l3 := wait(t, got, "a lease once one is free")
	require.NotNil(t, l3)
	require.NoError(t, l2.Release())
	require.NoError(t, l3.Release())
	_, err = lockrecipe.NewSemaphore(observer.Conn, path, 0).Acquire(ctx)
	assert.Error(t, err, "a semaphore of no leases")
}
