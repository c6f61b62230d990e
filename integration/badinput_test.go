package integration

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// badInputCase sends something malformed on a raw connection to addr and
// checks how the server answers it. The cases only use the client protocol,
// so they can be run against any ZooKeeper.
type badInputCase struct {
	name string
	run  func(t *testing.T, addr string)
}

// lengthPrefix is a bare 4-byte frame length.
func lengthPrefix(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// pathWatch is the body of getData, exists and getChildren.
func pathWatch(path string, watch bool) []byte {
	return (&wire.PathWatchRequest{Path: path, Watch: watch}).Append(nil)
}

// mustPing checks that the connection is still served: a ping is answered.
func mustPing(t testing.TB, c *rawConn) {
	t.Helper()
	h, body := c.call(wire.XidPing, wire.OpPing, nil)
	assert.Equal(t, wire.XidPing, h.Xid)
	assert.Equal(t, wire.CodeOK, h.Err)
	assert.Empty(t, body)
}

// mustServerZxid opens a session and returns the zxid of a reply header.
func mustServerZxid(t testing.TB, addr string) int64 {
	t.Helper()
	c := dialRaw(t, addr)
	c.mustSession()
	h, _ := c.call(1, wire.OpExists, pathWatch("/", false))
	require.Equal(t, wire.CodeOK, h.Err)
	return h.Zxid
}

var badInputCases = []badInputCase{
	{"text instead of a frame", func(t *testing.T, addr string) {
		// "GET " read as a length is far above jute.maxbuffer.
		c := dialRaw(t, addr)
		c.write([]byte("GET / HTTP/1.1\r\nHost: zk\r\n\r\n"))
		c.expectClosed()
	}},
	{"garbage frame as connect request", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.sendFrame(func(b []byte) []byte { return append(b, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6) })
		c.expectClosed()
	}},
	{"negative length as first frame", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.write(lengthPrefix(-1))
		c.expectClosed()
	}},
	{"negative length after handshake", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.mustSession()
		c.write(lengthPrefix(-20))
		c.expectClosed()
	}},
	{"length above jute.maxbuffer as first frame, payload never sent", func(t *testing.T, addr string) {
		// Only the length is sent: a server that waited for the payload
		// would never close.
		c := dialRaw(t, addr)
		c.write(lengthPrefix(wire.MaxBuffer + 1))
		c.expectClosed()
	}},
	{"length above jute.maxbuffer after handshake, payload never sent", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.mustSession()
		c.write(lengthPrefix(wire.MaxBuffer + 1))
		c.expectClosed()
	}},
	{"connect request of exactly jute.maxbuffer bytes", func(t *testing.T, addr string) {
		// A valid connect request with the readOnly byte, then trailing
		// garbage up to the limit: the frame is accepted and the request
		// decodes.
		c := dialRaw(t, addr)
		req := connectRequest()
		req.HasReadOnly = true
		c.sendFrame(func(b []byte) []byte {
			start := len(b)
			b = req.Append(b)
			return append(b, bytes.Repeat([]byte{0x5a}, wire.MaxBuffer-(len(b)-start))...)
		})
		frame := c.readFrame()
		var resp wire.ConnectResponse
		_, err := resp.Decode(frame)
		require.NoError(t, err)
		assert.NotZero(t, resp.SessionID)
		assert.NotZero(t, resp.TimeOut)
		assert.Len(t, frame, 37, "the request carried the readOnly byte")
		mustPing(t, c)
	}},
	{"request of exactly jute.maxbuffer bytes after handshake", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.mustSession()
		path := "/big-" + time.Now().Format("150405.000000000")
		create := &wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe}
		h, _ := c.call(1, wire.OpCreate, create.Append(nil))
		require.Equal(t, wire.CodeOK, h.Err)
		// header 8 + path (4+len) + data (4+n) + version 4 = MaxBuffer
		n := wire.MaxBuffer - 8 - (4 + len(path)) - 4 - 4
		data := bytes.Repeat([]byte{0x42}, n)
		set := &wire.SetDataRequest{Path: path, Data: data, Version: -1}
		frame := len(wire.RequestHeader{}.Append(nil)) + len(set.Append(nil))
		require.Equal(t, wire.MaxBuffer, frame)
		h, body := c.call(2, wire.OpSetData, set.Append(nil))
		require.Equal(t, wire.CodeOK, h.Err)
		var st wire.StatResponse
		_, err := st.Decode(body)
		require.NoError(t, err)
		assert.Equal(t, int32(n), st.Stat.DataLength)
		// The reply to getData is larger than jute.maxbuffer: replies are
		// not limited.
		h, body = c.call(3, wire.OpGetData, pathWatch(path, false))
		require.Equal(t, wire.CodeOK, h.Err)
		var got wire.GetDataResponse
		_, err = got.Decode(body)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(data, got.Data), "data read back differs")
		h, _ = c.call(4, wire.OpDelete, (&wire.DeleteRequest{Path: path, Version: -1}).Append(nil))
		assert.Equal(t, wire.CodeOK, h.Err)
	}},
	{"stream ends inside the connect request", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.write(append(lengthPrefix(44), make([]byte, 10)...))
		c.closeWrite()
		c.expectClosed()
	}},
	{"stream ends inside a request; the session survives", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		sess := c.mustSession()
		frame := append(lengthPrefix(100), wire.RequestHeader{Xid: 1, OpCode: wire.OpGetData}.Append(nil)...)
		c.write(frame)
		c.closeWrite()
		c.expectClosed()
		// Only the connection went: the session can be resumed.
		c2 := dialRaw(t, addr)
		resp, _ := c2.connect(&wire.ConnectRequest{TimeOut: 30000, SessionID: sess.SessionID, Passwd: sess.Passwd})
		assert.Equal(t, sess.SessionID, resp.SessionID)
		assert.NotZero(t, resp.TimeOut)
		mustPing(t, c2)
	}},
	{"unknown opcode", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.mustSession()
		h, body := c.call(7, wire.Op(999), nil)
		assert.Equal(t, int32(7), h.Xid)
		assert.Equal(t, wire.CodeUnimplemented, h.Err)
		assert.Empty(t, body)
		c.expectClosed()
	}},
	{"request header shorter than 8 bytes", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.mustSession()
		c.sendFrame(func(b []byte) []byte { return append(b, 0, 0, 0, 1) })
		c.expectClosed()
	}},
	{"request before the handshake", func(t *testing.T, addr string) {
		// A getData frame read as a connect request: its lastZxidSeen is
		// made of the opcode and the path length, far ahead of the server,
		// or the frame is too short; either way no session.
		c := dialRaw(t, addr)
		c.sendFrame(func(b []byte) []byte {
			b = wire.RequestHeader{Xid: 1, OpCode: wire.OpGetData}.Append(b)
			return append(b, pathWatch("/zookeeper", false)...)
		})
		c.expectClosed()
	}},
	{"getData body that does not decode", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		c.mustSession()
		// A path string that claims 100 bytes and has 3.
		body := append(binary.BigEndian.AppendUint32(nil, 100), '/', 'z', 'o')
		h, rest := c.call(5, wire.OpGetData, body)
		assert.Equal(t, int32(5), h.Xid)
		assert.Equal(t, wire.CodeMarshallingError, h.Err)
		assert.Empty(t, rest)
		// The connection stays open and served.
		mustPing(t, c)
		h, _ = c.call(6, wire.OpExists, pathWatch("/zookeeper", false))
		assert.Equal(t, int32(6), h.Xid)
		assert.Equal(t, wire.CodeOK, h.Err)
	}},
	{"connect with lastZxidSeen ahead of the server", func(t *testing.T, addr string) {
		zxid := mustServerZxid(t, addr)
		c := dialRaw(t, addr)
		req := connectRequest()
		req.LastZxidSeen = zxid + 1<<40
		c.sendFrame(req.Append)
		c.expectClosed()
	}},
	{"resume with a wrong password", func(t *testing.T, addr string) {
		owner := dialRaw(t, addr)
		sess := owner.mustSession()
		bad := append([]byte(nil), sess.Passwd...)
		bad[0] ^= 0xff
		c := dialRaw(t, addr)
		resp, frame := c.connect(&wire.ConnectRequest{TimeOut: 30000, SessionID: sess.SessionID, Passwd: bad})
		assert.Len(t, frame, 36)
		assert.Equal(t, wire.ConnectResponse{Passwd: make([]byte, 16)}, resp, "an invalid session is answered with zeros")
		c.expectClosed()
	}},
	{"resume with a wrong password closes the session's connection", func(t *testing.T, addr string) {
		// ZooKeeper closes the connection the session has on this server
		// before it checks the password (PROTOCOL.md 2.3 step 7); the
		// session itself stays valid.
		owner := dialRaw(t, addr)
		sess := owner.mustSession()
		bad := append([]byte(nil), sess.Passwd...)
		bad[15] ^= 0x01
		c := dialRaw(t, addr)
		resp, _ := c.connect(&wire.ConnectRequest{TimeOut: 30000, SessionID: sess.SessionID, Passwd: bad})
		assert.Zero(t, resp.SessionID)
		c.expectClosed()
		owner.expectClosed()
		again := dialRaw(t, addr)
		resp, _ = again.connect(&wire.ConnectRequest{TimeOut: 30000, SessionID: sess.SessionID, Passwd: sess.Passwd})
		assert.Equal(t, sess.SessionID, resp.SessionID, "the session is still valid")
	}},
	{"resume an unknown session", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		req := &wire.ConnectRequest{TimeOut: 30000, SessionID: 0x0123456789abcdef, Passwd: make([]byte, 16),
			HasReadOnly: true}
		resp, frame := c.connect(req)
		assert.Len(t, frame, 37)
		assert.Equal(t, wire.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}, resp,
			"an invalid session is answered with zeros")
		c.expectClosed()
	}},
	{"connect response is 36 bytes for a 44-byte request", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		req := connectRequest()
		require.Len(t, req.Append(nil), 44)
		resp, frame := c.connect(req)
		assert.Len(t, frame, 36)
		assert.False(t, resp.HasReadOnly)
		assert.NotZero(t, resp.SessionID)
		assert.Len(t, resp.Passwd, 16)
		mustPing(t, c)
	}},
	{"connect response is 37 bytes for a 45-byte request", func(t *testing.T, addr string) {
		c := dialRaw(t, addr)
		req := connectRequest()
		req.HasReadOnly = true
		require.Len(t, req.Append(nil), 45)
		resp, frame := c.connect(req)
		assert.Len(t, frame, 37)
		assert.True(t, resp.HasReadOnly)
		assert.False(t, resp.ReadOnly)
		assert.NotZero(t, resp.SessionID)
		assert.Len(t, resp.Passwd, 16)
		mustPing(t, c)
	}},
}

// TestBadInputClosesOnlyThatConnection sends malformed input on raw
// connections. Each offending connection is answered as ZooKeeper 3.8 does
// (mostly: closed), while a go-zookeeper session open across the test keeps
// working, keeps its ephemeral node and loses no data.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	c, rec := mustConnectRecorded(t, addr, 5*time.Second)
	mustCreate(t, c, "/keep", []byte("kept"))
	_, err := c.Create("/keep/eph", []byte("mine"), zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	before := mustStat(t, c, "/keep")

	for _, tc := range badInputCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, addr)

			// The rest of the server is unaffected.
			data, st, err := c.Get("/keep")
			require.NoError(t, err)
			assert.Equal(t, "kept", string(data))
			assert.Equal(t, before.Mzxid, st.Mzxid)
			assert.Equal(t, before.Cversion, st.Cversion)
			eph := mustStat(t, c, "/keep/eph")
			assert.Equal(t, c.SessionID(), eph.EphemeralOwner)
			other, _ := mustConnectRecorded(t, addr, 5*time.Second)
			_, err = other.Sync("/keep")
			assert.NoError(t, err)
			assert.Equal(t, []bool{true}, zk.FLWRuok([]string{addr}, waitTimeout))
		})
	}
	assert.Equal(t, []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateHasSession}, rec.sessionStates(),
		"the long-lived session was never disconnected")
}
