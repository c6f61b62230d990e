package server

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/session"
	"github.com/zkraft/zkraft/wire"
)

// A session resumed on a new connection reads after the writes its old
// connection still had in flight, as ZooKeeper orders a session's requests
// whatever connection brought them. Without it, a client whose create was
// cut off with its connection could list the parent on the new connection,
// not find the node, and create it again (lockrecipe's protected create
// made a second lock node that way, which then blocked every waiter:
// TestMutex_SurvivesDroppedConnections, once in a few hundred runs under
// load). The old connection's write in flight is held open by hand here:
// writeStarted, and writeFinished once a second session has created the
// node the resumed session reads.
func TestSession_ResumedConnectionReadsAfterTheOldOnesWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, ln := startBubbled(t, Config{TickTime: 2 * time.Second})
		first := ln.dial()
		defer first.Close()
		req := wire.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, session.PasswordLen)}
		writeFrame(t, first, req.Append)
		var resp wire.ConnectResponse
		_, err := resp.Decode(readFrame(t, first))
		require.NoError(t, err)
		id := resp.SessionID
		srv.mu.Lock()
		old := srv.bySession[id]
		srv.mu.Unlock()
		require.NotNil(t, old)
		require.True(t, old.writeStarted(), "a write in flight on the first connection")

		old.close("dropped by the test")
		assert.False(t, old.writeStarted(), "a closed connection starts no write")
		synctest.Wait() // its reader is gone and has parked it

		second := ln.dial()
		defer second.Close()
		resume := wire.ConnectRequest{TimeOut: 10000, SessionID: id, Passwd: resp.Passwd}
		writeFrame(t, second, resume.Append)
		_, err = resp.Decode(readFrame(t, second))
		require.NoError(t, err)
		require.Equal(t, id, resp.SessionID, "resumed")
		writeFrame(t, second, func(b []byte) []byte {
			b = wire.RequestHeader{Xid: 1, OpCode: wire.OpExists}.Append(b)
			return (&wire.PathWatchRequest{Path: "/x"}).Append(b)
		})
		synctest.Wait() // the read waits for the first connection's write

		other := ln.dial()
		defer other.Close()
		rawSession(t, other, 10*time.Second)
		writeFrame(t, other, func(b []byte) []byte {
			b = wire.RequestHeader{Xid: 1, OpCode: wire.OpCreate}.Append(b)
			return (&wire.CreateRequest{Path: "/x", ACL: wire.OpenACLUnsafe}).Append(b)
		})
		var h wire.ReplyHeader
		_, err = h.Decode(readFrame(t, other))
		require.NoError(t, err)
		require.Equal(t, wire.CodeOK, h.Err)
		old.writeFinished()

		_, err = h.Decode(readFrame(t, second))
		require.NoError(t, err)
		assert.Equal(t, wire.CodeOK, h.Err, "the read came after the write in flight")
		synctest.Wait()
		srv.mu.Lock()
		assert.Empty(t, srv.draining, "the drained connection is forgotten")
		srv.mu.Unlock()
	})
}
