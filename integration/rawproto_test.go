package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestHandshake checks connect requests that are valid but not plain: the
// timeout is clamped to [2, 20] ticks (servertest: 200ms to 30s), a client
// that has seen exactly the server's last zxid is accepted, and resuming a
// session on a new connection closes the old one.
func TestHandshake(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()

	t.Run("timeout clamped", func(t *testing.T) {
		tests := []struct {
			name      string
			requested int32
			want      int32
		}{
			{"below the minimum", 1, 200},
			{"at the minimum", 200, 200},
			{"between", 4321, 4321},
			{"above the maximum", 1000000, 30000},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				c := dialRaw(t, addr)
				req := connectRequest()
				req.TimeOut = tc.requested
				resp, _ := c.connect(req)
				assert.NotZero(t, resp.SessionID)
				assert.Equal(t, tc.want, resp.TimeOut)
			})
		}
	})

	t.Run("lastZxidSeen equal to the server's", func(t *testing.T) {
		zxid := mustServerZxid(t, addr)
		c := dialRaw(t, addr)
		req := connectRequest()
		req.LastZxidSeen = zxid
		resp, _ := c.connect(req)
		assert.NotZero(t, resp.SessionID)
		mustPing(t, c)
	})

	t.Run("resume moves the session to the new connection", func(t *testing.T) {
		first := dialRaw(t, addr)
		sess := first.mustSession()
		create := &wire.CreateRequest{Path: "/moved", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral}
		h, _ := first.call(1, wire.OpCreate, create.Append(nil))
		require.Equal(t, wire.CodeOK, h.Err)

		second := dialRaw(t, addr)
		resp, _ := second.connect(&wire.ConnectRequest{TimeOut: 5000, SessionID: sess.SessionID, Passwd: sess.Passwd})
		assert.Equal(t, sess.SessionID, resp.SessionID)
		assert.Equal(t, int32(5000), resp.TimeOut, "renegotiated")
		assert.Equal(t, sess.Passwd, resp.Passwd)
		first.expectClosed()
		h, body := second.call(2, wire.OpExists, pathWatch("/moved", false))
		require.Equal(t, wire.CodeOK, h.Err)
		var st wire.StatResponse
		_, err := st.Decode(body)
		require.NoError(t, err)
		assert.Equal(t, sess.SessionID, st.Stat.EphemeralOwner, "the ephemeral stays with the session")
	})

	t.Run("closeSession is answered, then the socket closed", func(t *testing.T) {
		c := dialRaw(t, addr)
		sess := c.mustSession()
		create := &wire.CreateRequest{Path: "/closing", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral}
		h, _ := c.call(1, wire.OpCreate, create.Append(nil))
		require.Equal(t, wire.CodeOK, h.Err)
		h, body := c.call(2, wire.OpCloseSession, nil)
		assert.Equal(t, int32(2), h.Xid)
		assert.Equal(t, wire.CodeOK, h.Err)
		assert.Empty(t, body)
		c.expectClosed()

		other := dialRaw(t, addr)
		other.mustSession()
		h, _ = other.call(1, wire.OpExists, pathWatch("/closing", false))
		assert.Equal(t, wire.CodeNoNode, h.Err, "the ephemeral went with the session")
		again := dialRaw(t, addr)
		resp, _ := again.connect(&wire.ConnectRequest{TimeOut: 5000, SessionID: sess.SessionID, Passwd: sess.Passwd})
		assert.Zero(t, resp.SessionID, "a closed session cannot be resumed")
		again.expectClosed()
	})
}

// TestPipelinedRequests sends a burst of writes and reads in one TCP write
// and checks that the replies come back in request order, that each read
// sees the writes sent before it, and that reply zxids never go back.
func TestPipelinedRequests(t *testing.T) {
	srv := servertest.NewServer(t)
	c := dialRaw(t, srv.ConnectString())
	c.mustSession()

	type req struct {
		op   wire.Op
		body wire.Record
	}
	reqs := []req{
		{wire.OpCreate, &wire.CreateRequest{Path: "/p", Data: []byte("v0"), ACL: wire.OpenACLUnsafe}},
		{wire.OpGetData, &wire.PathWatchRequest{Path: "/p"}},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/p", Data: []byte("v1"), Version: 0}},
		{wire.OpGetData, &wire.PathWatchRequest{Path: "/p"}},
		{wire.OpCreate, &wire.CreateRequest{Path: "/p/kid", ACL: wire.OpenACLUnsafe}},
		{wire.OpGetChildren2, &wire.PathWatchRequest{Path: "/p"}},
		{wire.OpSetData, &wire.SetDataRequest{Path: "/p", Data: []byte("stale"), Version: 0}},
		{wire.OpSync, &wire.PathRequest{Path: "/p"}},
		{wire.OpDelete, &wire.DeleteRequest{Path: "/p/kid", Version: -1}},
		{wire.OpExists, &wire.PathWatchRequest{Path: "/p/kid"}},
		{wire.OpGetData, &wire.PathWatchRequest{Path: "/p"}},
	}
	var burst []byte
	for i, r := range reqs {
		var start int
		burst, start = wire.StartFrame(burst)
		burst = wire.RequestHeader{Xid: int32(i + 1), OpCode: r.op}.Append(burst)
		burst = r.body.Append(burst)
		burst = wire.EndFrame(burst, start)
	}
	c.write(burst)

	wantErr := []wire.Code{0, 0, 0, 0, 0, 0, wire.CodeBadVersion, 0, 0, wire.CodeNoNode, 0}
	bodies := make([][]byte, len(reqs))
	var lastZxid int64
	for i := range reqs {
		h, body := c.reply()
		require.Equal(t, int32(i+1), h.Xid, "replies in request order")
		assert.Equal(t, wantErr[i], h.Err, "request %d (%v)", i+1, reqs[i].op)
		assert.GreaterOrEqual(t, h.Zxid, lastZxid, "reply zxids never go back")
		lastZxid = h.Zxid
		bodies[i] = body
	}
	var get wire.GetDataResponse
	_, err := get.Decode(bodies[1])
	require.NoError(t, err)
	assert.Equal(t, "v0", string(get.Data))
	_, err = get.Decode(bodies[3])
	require.NoError(t, err)
	assert.Equal(t, "v1", string(get.Data))
	assert.Equal(t, int32(1), get.Stat.Version)
	var kids wire.GetChildren2Response
	_, err = kids.Decode(bodies[5])
	require.NoError(t, err)
	assert.Equal(t, []string{"kid"}, kids.Children)
	_, err = get.Decode(bodies[10])
	require.NoError(t, err)
	assert.Equal(t, "v1", string(get.Data))
	assert.Equal(t, int32(2), get.Stat.Cversion, "one create and one delete")
	assert.Zero(t, get.Stat.NumChildren)
}

// TestNotificationFrame checks the raw form of a watch notification: reply
// header {xid -1, zxid -1, err 0} (ZooKeeper before 3.9) and a WatcherEvent
// with state SyncConnected, queued before the reply to the write that fired
// it on the writer's own connection.
func TestNotificationFrame(t *testing.T) {
	srv := servertest.NewServer(t)
	c := dialRaw(t, srv.ConnectString())
	c.mustSession()
	h, _ := c.call(1, wire.OpExists, pathWatch("/n", true))
	require.Equal(t, wire.CodeNoNode, h.Err)

	c.sendFrame(func(b []byte) []byte {
		b = wire.RequestHeader{Xid: 2, OpCode: wire.OpCreate}.Append(b)
		return (&wire.CreateRequest{Path: "/n", ACL: wire.OpenACLUnsafe}).Append(b)
	})
	frame := c.readFrame()
	var hdr wire.ReplyHeader
	n, err := hdr.Decode(frame)
	require.NoError(t, err)
	assert.Equal(t, wire.ReplyHeader{Xid: wire.XidNotification, Zxid: -1, Err: wire.CodeOK}, hdr,
		"the notification comes before the create's reply")
	var ev wire.WatcherEvent
	m, err := ev.Decode(frame[n:])
	require.NoError(t, err)
	assert.Equal(t, wire.WatcherEvent{Type: wire.EventNodeCreated, State: wire.StateSyncConnected, Path: "/n"}, ev)
	assert.Equal(t, len(frame), n+m, "nothing after the event")

	h, body := c.reply()
	assert.Equal(t, int32(2), h.Xid)
	assert.Equal(t, wire.CodeOK, h.Err)
	var created wire.CreateResponse
	_, err = created.Decode(body)
	require.NoError(t, err)
	assert.Equal(t, "/n", created.Path)

	// The watch was one-shot: the delete fires nothing, so the next frame
	// is the delete's reply.
	c.sendFrame(func(b []byte) []byte {
		b = wire.RequestHeader{Xid: 3, OpCode: wire.OpDelete}.Append(b)
		return (&wire.DeleteRequest{Path: "/n", Version: -1}).Append(b)
	})
	_, err = hdr.Decode(c.readFrame())
	require.NoError(t, err)
	assert.Equal(t, int32(3), hdr.Xid)
	assert.Equal(t, wire.CodeOK, hdr.Err)
}
