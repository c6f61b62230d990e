package lockrecipe_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestMutex_ExpiryWhileHolding expires the holder's session: its Lost
// channel closes, the waiter gets the lock, the old holder's Unlock and
// re-entry report the loss, and the old holder can lock again later in
// its new session.
func TestMutex_ExpiryWhileHolding(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	holderSession := newSession(t, addr)
	holder := lockrecipe.NewMutex(holderSession.Conn, path)
	lease, err := holder.Acquire(ctx)
	require.NoError(t, err)
	waiter := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	waitChildren(t, newSession(t, addr).Conn, path, 2)

	require.True(t, srv.ExpireSession(holderSession.SessionID()))
	wait(t, lease.Lost(), "Lost closes")
	wait(t, holder.Lost(), "the Mutex's Lost is the lease's")
	require.NoError(t, wait(t, got, "the waiter gets the lock"))

	assert.ErrorIs(t, lease.Acquire(), lockrecipe.ErrLost, "no re-entry into a lost lock")
	err = holder.Unlock()
	assert.ErrorIs(t, err, lockrecipe.ErrLost)
	assert.ErrorIs(t, err, zk.ErrSessionExpired, "the loss names its cause")
	assert.ErrorContains(t, err, "as its session ended")
	require.NoError(t, waiter.Unlock())
	require.NoError(t, holder.Lock(ctx), "the holder locks again in its new session")
	require.NoError(t, holder.Unlock())
}

// TestMutex_ExpiryWhileWaiting expires a waiter's session: its Lock fails
// with ErrLost at once, and the lock keeps working for the others.
func TestMutex_ExpiryWhileWaiting(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	holder := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	require.NoError(t, holder.Lock(ctx))
	waiterSession := newSession(t, addr)
	waiter := lockrecipe.NewMutex(waiterSession.Conn, path)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	observer := newSession(t, addr)
	waitChildren(t, observer.Conn, path, 2)

	require.True(t, srv.ExpireSession(waiterSession.SessionID()))
	assert.ErrorIs(t, wait(t, got, "the waiter's Lock returns"), lockrecipe.ErrLost)
	assert.Len(t, children(t, observer.Conn, path), 1, "only the holder's node")
	require.NoError(t, holder.Unlock())
	require.NoError(t, waiter.Lock(ctx), "the waiter locks in its new session")
	require.NoError(t, waiter.Unlock())
}

// TestMutex_NodeDeletedByOther deletes the holder's node behind its back,
// as an operator might: that is a loss too.
func TestMutex_NodeDeletedByOther(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	holder := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	lease, err := holder.Acquire(ctx)
	require.NoError(t, err)
	admin := newSession(t, addr)
	require.NoError(t, admin.Delete(lease.Node(), -1))
	wait(t, lease.Lost(), "Lost closes")
	err = holder.Unlock()
	assert.ErrorIs(t, err, lockrecipe.ErrLost)
	assert.ErrorContains(t, err, "deleted by another client")
	assert.NotErrorIs(t, err, zk.ErrSessionExpired)
	require.NoError(t, holder.Lock(ctx), "and the Mutex is free again")
	require.NoError(t, holder.Unlock())
}

// TestMutex_ConnClosedWhileHolding closes the client under a holder: its
// session ends, so the lock is lost.
func TestMutex_ConnClosedWhileHolding(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	s := newSession(t, addr)
	holder := lockrecipe.NewMutex(s.Conn, path)
	require.NoError(t, holder.Lock(ctx))
	s.Close()
	wait(t, holder.Lost(), "Lost closes")
	assert.ErrorIs(t, holder.Unlock(), lockrecipe.ErrLost)
	other := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	require.NoError(t, other.Lock(ctx))
	require.NoError(t, other.Unlock())
}

// TestMutex_ConnClosedWhileWaiting closes the client under a waiter: its
// Lock returns at once with ErrLost instead of retrying.
func TestMutex_ConnClosedWhileWaiting(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	holder := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	require.NoError(t, holder.Lock(ctx))
	s := newSession(t, addr)
	waiter := lockrecipe.NewMutex(s.Conn, path)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	observer := newSession(t, addr)
	waitChildren(t, observer.Conn, path, 2)
	s.Close()
	assert.ErrorIs(t, wait(t, got, "the waiter's Lock returns"), lockrecipe.ErrLost)
	waitChildren(t, observer.Conn, path, 1)
	require.NoError(t, holder.Unlock())
}
