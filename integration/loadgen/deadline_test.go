package loadgen

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// silentServer accepts connections and reads what they send; it answers
// a connect request when answer is set, and nothing else, as a server
// whose host vanished answers nothing (no FIN, no RST).
func silentServer(t *testing.T, answer bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
	})
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			go func() {
				fr := wire.NewFrameReader(nc, 1<<20)
				if _, err := fr.Next(); err != nil || !answer {
					return
				}
				resp := wire.ConnectResponse{TimeOut: 10000, SessionID: 1, Passwd: make([]byte, 16)}
				b, start := wire.StartFrame(nil)
				nc.Write(wire.EndFrame(resp.Append(b), start))
				for {
					if _, err := fr.Next(); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A session does not wait for ever on a server that went silent: neither
// for its connect's answer nor for a reply.
func TestSession_GivesUpOnASilentServer(t *testing.T) {
	defer func(r, c time.Duration) { replyWait, connectWait = r, c }(replyWait, connectWait)
	replyWait, connectWait = 100*time.Millisecond, 100*time.Millisecond

	_, err := dialTimeout(silentServer(t, false), 10*time.Second, idleWriteBuffer)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no answer to the connect")

	s, err := dialTimeout(silentServer(t, true), 10*time.Second, idleWriteBuffer)
	require.NoError(t, err)
	defer s.nc.Close()
	err = s.do(wire.OpExists, &wire.PathWatchRequest{Path: "/"}, wire.CodeOK)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no reply")
}

// keepAlive leaves no write deadline behind: a session whose pinging
// stopped can still send once the interval of its last ping has passed,
// as a storm's expiring owners do just before the cut.
func TestKeepAlive_LeavesNoWriteDeadline(t *testing.T) {
	srv := servertest.NewServer(t)
	s, err := dialTimeout(srv.ConnectString(), 200*time.Millisecond, idleWriteBuffer)
	require.NoError(t, err)
	defer s.nc.Close()
	interval := s.timeout / 3
	stop := make(chan struct{})
	pinging := keepAlive([]*session{s}, stop)
	frame, err := s.fr.Next() // the first ping's reply: a write deadline was set
	require.NoError(t, err)
	var h wire.ReplyHeader
	_, err = h.Decode(frame)
	require.NoError(t, err)
	require.Equal(t, wire.XidPing, h.Xid)
	close(stop)
	pinging.Wait()
	<-time.After(interval + 50*time.Millisecond) // what the deadline of the last ping, if left, would have expired by
	assert.NoError(t, s.do(wire.OpExists, &wire.PathWatchRequest{Path: "/"}, wire.CodeOK))
}
