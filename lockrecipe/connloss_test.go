package lockrecipe_test

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestMutex_ConnectionLossDuringCreate cuts the client's connection exactly
// while the create of its lock node is in flight: before the server gets
// it, or after the server made the node but before its reply reaches the
// client. Either way the client must end up with exactly one node (the one
// the server made, found again by its protected id), get the lock, and
// leave nothing behind.
func TestMutex_ConnectionLossDuringCreate(t *testing.T) {
	checkConnectionLossDuringCreate(t, servertest.NewServer(t).ConnectString())
}

func checkConnectionLossDuringCreate(t *testing.T, addr string) {
	for _, tc := range []struct {
		name      string
		mode      dropMode
		contended bool // another session holds the lock meanwhile
	}{
		{"request lost", dropRequest, false},
		{"reply lost", dropReply, false},
		{"reply lost while another holds", dropReply, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.contended && raceEnabled {
				// Its session reconnects with a watch set and requests going
				// out at once, which trips go-zookeeper v1.0.4's own race on
				// Conn.lastZxid (see dropped_test.go): seen once in a -race
				// run of the whole suite.
				t.Skip("go-zookeeper's lastZxid race: run without -race")
			}
			path, ctx := uniquePath(t), testContext(t)
			observer := newSession(t, addr)
			other := lockrecipe.NewMutex(observer.Conn, path)
			require.NoError(t, other.Lock(ctx)) // creates the lock path
			if !tc.contended {
				require.NoError(t, other.Unlock())
			}
			proxy := newFaultProxy(t, addr)
			s := newSession(t, proxy.addr())
			session := s.SessionID()
			proxy.arm(path+"/_c_", tc.mode)

			m := lockrecipe.NewMutex(s.Conn, path)
			got := make(chan *lockrecipe.Lease, 1)
			go func() {
				lease, err := m.Acquire(ctx)
				assert.NoError(t, err)
				got <- lease
			}()
			if tc.contended {
				waitChildren(t, observer.Conn, path, 2)
				require.NoError(t, other.Unlock())
			}
			lease := wait(t, got, "Acquire returns")
			require.NotNil(t, lease)
			assert.Equal(t, 1, proxy.firedCount(), "the connection was cut during the create")
			assert.Equal(t, session, s.SessionID(), "same session after reconnecting")
			assert.Equal(t, []string{pathBase(lease.Node())}, children(t, observer.Conn, path), "one node, no orphan")

			require.NoError(t, m.Unlock())
			assert.Empty(t, children(t, observer.Conn, path), "nothing left behind")
			ok, err := other.TryLock(ctx)
			require.NoError(t, err)
			assert.True(t, ok, "the lock is free for everyone")
			require.NoError(t, other.Unlock())
		})
	}
}

// dropMode says which half of a create exchange a faultProxy loses.
type dropMode int

const (
	dropRequest dropMode = iota // close the link instead of forwarding the request
	dropReply                   // forward the request, close the link instead of forwarding its reply
)

// faultProxy forwards ZooKeeper client connections frame by frame, and once
// armed, cuts the link during the next create of a path containing a
// marker. The client then reconnects through it to the same session.
type faultProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	marker string     // "" when disarmed
	mode   dropMode
	fired  int
	links  map[*link]struct{}
}

type link struct {
	client, server net.Conn

	mu      sync.Mutex // guards dropXid, drop
	dropXid int32
	drop    bool
}

func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{ln: ln, target: target, links: make(map[*link]struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) arm(marker string, mode dropMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.mode = marker, mode
}

func (p *faultProxy) firedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fired
}

func (p *faultProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		l := &link{client: client, server: server}
		p.mu.Lock()
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.up(l) })
		p.wg.Go(func() { p.down(l) })
	}
}

// up forwards the client's frames; the first is the connect request,
// the others start with xid and opcode.
func (p *faultProxy) up(l *link) {
	defer p.cut(l)
	for first := true; ; first = false {
		frame, err := readFrame(l.client)
		if err != nil {
			return
		}
		if !first {
			if mode, hit := p.hit(frame); hit && mode == dropRequest {
				return
			} else if hit {
				l.mu.Lock()
				l.dropXid, l.drop = int32(binary.BigEndian.Uint32(frame[4:])), true
				l.mu.Unlock()
			}
		}
		if _, err := l.server.Write(frame); err != nil {
			return
		}
	}
}

// down forwards the server's frames, except the reply to drop.
func (p *faultProxy) down(l *link) {
	defer p.cut(l)
	for first := true; ; first = false {
		frame, err := readFrame(l.server)
		if err != nil {
			return
		}
		if !first {
			xid := int32(binary.BigEndian.Uint32(frame[4:]))
			l.mu.Lock()
			drop := l.drop && xid == l.dropXid
			l.mu.Unlock()
			if drop {
				return
			}
		}
		if _, err := l.client.Write(frame); err != nil {
			return
		}
	}
}

// hit reports whether a request frame is the armed create, and disarms.
func (p *faultProxy) hit(frame []byte) (dropMode, bool) {
	if len(frame) < 16 {
		return 0, false
	}
	op := int32(binary.BigEndian.Uint32(frame[8:]))
	n := int(binary.BigEndian.Uint32(frame[12:]))
	if (op != 1 && op != 15) || 16+n > len(frame) {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker == "" || !strings.Contains(string(frame[16:16+n]), p.marker) {
		return 0, false
	}
	p.marker = ""
	p.fired++
	return p.mode, true
}

// readFrame reads one length-prefixed frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

func (p *faultProxy) cut(l *link) {
	l.client.Close()
	l.server.Close()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for l := range p.links {
		l.client.Close()
		l.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
