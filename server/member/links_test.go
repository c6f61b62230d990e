package member

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinks_Partition(t *testing.T) {
	l := NewLinks()
	l.Partition([]int{1}, []int{2, 3})
	assert.False(t, l.up(1, 2))
	assert.False(t, l.up(3, 1), "cuts go both ways")
	assert.True(t, l.up(2, 3))
	assert.True(t, l.up(4, 5), "members named in no group keep their links to each other")
	assert.False(t, l.up(1, 4), "but not to named ones")
	l.Partition([]int{1, 2}, []int{2, 3})
	assert.True(t, l.up(1, 2), "a bridge reaches both sides")
	assert.True(t, l.up(3, 2), "a bridge reaches both sides")
	assert.False(t, l.up(1, 3), "the sides do not reach each other")
	l.Heal()
	assert.True(t, l.up(1, 2))
	l.Cut(2, 3)
	assert.False(t, l.up(3, 2))
	assert.True(t, l.up(1, 2))
	var none *Links
	assert.True(t, none.up(1, 2), "no switchboard: every link is up")
}

// linkedPair connects member 1 to a listener of member 2 through l, and
// returns both ends and the listener's address. All close with the test.
func linkedPair(t *testing.T, l *Links) (dialed, accepted net.Conn, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pl := &peerListener{Listener: ln, self: 2, links: l}
	conns := make(chan net.Conn, 1)
	done := make(chan []net.Conn)
	go func() {
		var all []net.Conn
		defer func() { done <- all }()
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			all = append(all, c)
			select {
			case conns <- c:
			default: // a later connection the test does not read from
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for _, c := range <-done {
			c.Close()
		}
	})
	dialed, err = dialPeer(l, nil, 1, 2, ln.Addr().String(), time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { dialed.Close() })
	return dialed, <-conns, ln.Addr().String()
}

// A cut closes the live connections between the two members, on both
// sides, and refuses new ones until healed.
func TestLinks_CutClosesConnections(t *testing.T) {
	l := NewLinks()
	dialed, server, addr := linkedPair(t, l)
	_, err := dialed.Write([]byte("hi"))
	require.NoError(t, err)
	buf := make([]byte, 2)
	_, err = io.ReadFull(server, buf) // reads the header, learns member 1
	require.NoError(t, err)
	assert.Equal(t, "hi", string(buf))
	assert.Equal(t, 1, server.(*peerConn).remoteID())

	l.Cut(1, 2)
	_, err = io.ReadFull(server, buf)
	assert.Error(t, err, "the accepted side is closed")
	_, err = dialPeer(l, nil, 1, 2, addr, time.Second)
	assert.ErrorIs(t, err, errLinkCut)
	l.Heal()
	again, err := dialPeer(l, nil, 1, 2, addr, time.Second)
	require.NoError(t, err)
	again.Close()
}

// A degraded link delays each write by up to its delay and, with its loss
// probability, loses one by breaking the connection; undegrading restores it.
func TestLinks_Degrade(t *testing.T) {
	l := NewLinks()
	dialed, server, addr := linkedPair(t, l)

	l.Degrade(2, 1, Degradation{Delay: time.Millisecond})
	_, err := dialed.Write([]byte("a"))
	require.NoError(t, err, "a delayed write still goes out")
	buf := make([]byte, 1)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err)
	assert.Equal(t, "a", string(buf))

	l.Degrade(1, 2, Degradation{Loss: 1})
	_, err = dialed.Write([]byte("b"))
	assert.ErrorIs(t, err, errLinkLost)
	_, err = io.ReadFull(server, buf)
	assert.Error(t, err, "the lost write broke the connection")

	l.Degrade(1, 2, Degradation{})
	again, err := dialPeer(l, nil, 1, 2, addr, time.Second)
	require.NoError(t, err)
	defer again.Close()
	_, err = again.Write([]byte("c"))
	assert.NoError(t, err, "restored")
	l.Degrade(1, 2, Degradation{Loss: 1})
	l.Heal()
	_, err = again.Write([]byte("d"))
	assert.NoError(t, err, "Heal restores degraded links too")
}

// A member dials an address that Config.PeerVia names at the address it
// gives, as through a proxy; the header still names the dialing member.
func TestDialPeer_Via(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	const configured = "192.0.2.1:2888" // TEST-NET: nothing answers there
	nc, err := dialPeer(nil, map[string]string{configured: ln.Addr().String()}, 3, 2, configured, time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	accepted, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { accepted.Close() })
	header := make([]byte, 2)
	_, err = io.ReadFull(accepted, header)
	require.NoError(t, err)
	assert.Equal(t, []byte{peerMagic, 3}, header)
}

// A paused member's writes, and its reads, wait for its resume; what
// others write to it goes out (into its connections, as to a stopped
// process), and other links carry on.
func TestLinks_Pause(t *testing.T) {
	l := NewLinks()
	l.Pause(2)
	done := make(chan bool, 2)
	go func() { done <- l.beforeWrite(2, 3) }()
	go func() { l.waitResumed(2); done <- true }()
	assert.True(t, l.beforeWrite(1, 3), "a link without the paused member")
	assert.True(t, l.beforeWrite(1, 2), "a write to the paused member")
	l.waitResumed(1)
	select {
	case <-done:
		t.Fatal("the paused member wrote or read")
	case <-time.After(50 * time.Millisecond):
	}
	l.Resume(2)
	for range 2 {
		assert.True(t, <-done)
	}
	l.Resume(2) // again: nothing to do
}
