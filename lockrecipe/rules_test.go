package lockrecipe_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// A fault rule loses the reply to the contender's create, with its
// connection: the node was made, and the protected create finds it again
// by its id rather than making a second.
func TestMutex_CreateReplyLostByARule(t *testing.T) {
	srv := servertest.NewServer(t)
	path, ctx := uniquePath(t), testContext(t)
	observer, s := newSession(t, srv.ConnectString()), newSession(t, srv.ConnectString())
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate, wire.OpCreate2}, Path: path, Prefix: true,
		Session: s.SessionID(), Fault: servertest.LoseReply})

	lease, err := lockrecipe.NewMutex(s.Conn, path).Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, srv.Faults().List()[0].Fired, "the reply was lost")
	names := children(t, observer.Conn, path)
	require.Len(t, names, 1, "one node, found again: %v", names)
	require.NoError(t, lease.Release())
	assert.Empty(t, children(t, observer.Conn, path))
}

// A fault rule holds the holder's release back for a while: a waiter whose
// context ends first gives up with the context's error, and withdraws its
// node.
func TestMutex_WaiterTimesOutBehindADelayedRelease(t *testing.T) {
	srv := servertest.NewServer(t)
	path, ctx := uniquePath(t), testContext(t)
	observer := newSession(t, srv.ConnectString())
	holder, waiter := newSession(t, srv.ConnectString()), newSession(t, srv.ConnectString())
	held := lockrecipe.NewMutex(holder.Conn, path)
	require.NoError(t, held.Lock(ctx))
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpDelete}, Path: path, Prefix: true,
		Session: holder.SessionID(), Fault: server.Fault{Delay: time.Second}})
	released := make(chan error, 1)
	go func() { released <- held.Unlock() }() // held back by the rule

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := lockrecipe.NewMutex(waiter.Conn, path).Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, wait(t, released, "the delayed release"))
	waitChildren(t, observer.Conn, path, 0) // the waiter withdrew, the holder released
}
