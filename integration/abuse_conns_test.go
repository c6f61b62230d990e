package integration

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// connectionBudget returns how many client connections a test may open,
// at most want: each takes two descriptors in this process (the client's
// and the server's), and some are left for everything else.
func connectionBudget(t testing.TB, want int) int {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	n := min(want, (int(lim.Cur)-512)/2)
	if n < want {
		t.Logf("open files limited to %d: %d connections instead of %d", lim.Cur, n, want)
	}
	require.Positive(t, n, "open files limit %d", lim.Cur)
	return n
}

// bareSession dials addr and opens a session with the least client-side
// state (no frame reader), so that what the test measures is the server's.
func bareSession(addr string) (net.Conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(waitTimeout))
	b, start := wire.StartFrame(nil)
	if _, err := nc.Write(wire.EndFrame(connectRequest().Append(b), start)); err != nil {
		nc.Close()
		return nil, err
	}
	var frame [4 + 36]byte
	if _, err := io.ReadFull(nc, frame[:]); err != nil {
		nc.Close()
		return nil, err
	}
	var resp wire.ConnectResponse
	if _, err := resp.Decode(frame[4:]); err != nil || resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("no session (%v)", err)
	}
	nc.SetDeadline(time.Time{})
	return nc, nil
}

// closeBareSession sends closeSession and waits for the server to close
// the connection.
func closeBareSession(nc net.Conn) error {
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(waitTimeout))
	b, start := wire.StartFrame(nil)
	b = wire.RequestHeader{Xid: 1, OpCode: wire.OpCloseSession}.Append(b)
	if _, err := nc.Write(wire.EndFrame(b, start)); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, nc) // the reply, then the end of the stream
	return err
}

// TestLimits_ThousandsOfConnections opens 2000 sessions on raw
// connections (fewer if the open files limit is low) with no limit on
// connections from one address (maxClientCnxns=0, which ZooKeeper 3.8 and
// zkraft both read as no limit; zookeeper.maxCnxns, ZooKeeper's total, is
// unlimited by default too, ServerCnxnFactory). Every one gets a session,
// a healthy client is served while they are open, and once they close
// their sessions the server is back where it started: no connection, no
// session, no goroutine left. The memory an idle connection costs is
// bounded (a small read buffer and one or two goroutines).
func TestLimits_ThousandsOfConnections(t *testing.T) {
	n := connectionBudget(t, 2000)
	srv := servertest.NewServer(t, quiet)
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	baseConns := mntrValue(t, addr, "num_alive_connections")
	baseSessions := mntrValue(t, addr, "global_sessions")
	baseGoroutines := runtime.NumGoroutine()
	before := liveMemory()

	conns := make([]net.Conn, n)
	start := time.Now()
	forEach(t, n, func(i int) (err error) {
		conns[i], err = bareSession(addr)
		return err
	})
	opened := time.Since(start)
	waitMntr(t, addr, "num_alive_connections", baseConns+int64(n))
	assert.Equal(t, baseSessions+int64(n), mntrValue(t, addr, "global_sessions"))
	perConn := (liveMemory() - before) / int64(n)
	t.Logf("%d sessions opened in %v; %d bytes of memory per connection", n, opened, perConn)
	assert.Less(t, perConn, int64(48<<10), "memory per idle connection")
	healthy.mustProgress()

	forEach(t, n, func(i int) error { return closeBareSession(conns[i]) })
	waitMntr(t, addr, "num_alive_connections", baseConns)
	waitMntr(t, addr, "global_sessions", baseSessions)
	waitCondition(t, "goroutines back to where they were", func() error {
		if g := runtime.NumGoroutine(); g > baseGoroutines {
			return fmt.Errorf("%d goroutines, %d before", g, baseGoroutines)
		}
		return nil
	})
	healthy.finish()
}

// forEach runs f(0..n-1) on a few goroutines and fails the test with the
// first error.
func forEach(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- fmt.Errorf("%d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// trickle writes b to nc a byte every interval until it is all written, a
// write fails or stop is closed; it returns how many bytes went out.
func trickle(nc net.Conn, b []byte, interval time.Duration, stop <-chan struct{}) <-chan int {
	sent := make(chan int, 1)
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		n := 0
		defer func() { sent <- n }()
		for n < len(b) {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := nc.Write(b[n : n+1]); err != nil {
				return
			}
			n++
		}
	}()
	return sent
}

// slowlorisCase abuses a server whose sessionless connection timeout is
// timeout; a healthy client is served meanwhile.
type slowlorisCase struct {
	name    string
	timeout time.Duration
	run     func(t *testing.T, addr string, timeout time.Duration, healthy *healthyClient)
}

// TestLimits_Slowloris covers clients that send too slowly or not at all.
// ZooKeeper 3.8's NIOServerCnxnFactory closes a connection that has no
// session after zookeeper.nio.sessionlessCnxnTimeout (10s) without I/O
// (its ConnectionExpirerThread; touchCnxn on every read), and a session
// that sends no whole request expires (only a whole request touches it,
// ZooKeeperServer.submitRequestNow), which closes its connection. zkraft
// does the same, with one deliberate difference: the timeout for the
// connect request runs from the accept, not from the last byte, so a
// client trickling a byte at a time is closed too (ZooKeeper would keep it
// for as long as the bytes come). And where ZooKeeper allocates the whole
// length a frame announces as soon as it reads the prefix
// (NIOServerCnxn.readLength), zkraft's buffer grows with the bytes that
// arrive: many connections announcing jute.maxbuffer and sending nothing
// more cost little.
func TestLimits_Slowloris(t *testing.T) {
	for _, tc := range slowlorisCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := servertest.NewServer(t, quiet, servertest.WithConfig(func(c *server.Config) {
				c.SessionlessCnxnTimeout = tc.timeout
			}))
			addr := srv.ConnectString()
			healthy := startHealthyClient(t, addr)
			tc.run(t, addr, tc.timeout, healthy)
			healthy.finish()
		})
	}
}

var slowlorisCases = []slowlorisCase{
	{"connects and sends nothing", 300 * time.Millisecond, slowlorisSilent},
	{"sends its connect request a byte at a time", 300 * time.Millisecond, slowlorisConnectRequest},
	{"200 connections announce jute.maxbuffer and send a little", 10 * time.Second, slowlorisAnnounced},
	{"trickles a request after the handshake", 300 * time.Millisecond, slowlorisAfterHandshake},
}

func slowlorisSilent(t *testing.T, addr string, timeout time.Duration, healthy *healthyClient) {
	since := time.Now()
	c := dialRaw(t, addr)
	healthy.mustProgress()
	c.expectClosed()
	assert.GreaterOrEqual(t, time.Since(since), timeout, "closed before the timeout")
}

func slowlorisConnectRequest(t *testing.T, addr string, timeout time.Duration, healthy *healthyClient) {
	b, start := wire.StartFrame(nil)
	frame := wire.EndFrame(connectRequest().Append(b), start)
	since := time.Now()
	c := dialRaw(t, addr)
	// A byte every 100ms: 4.8s for the whole request, well after the
	// timeout and after expectClosed gives up.
	trickleUntilClosed(t, c, frame, 100*time.Millisecond, since, timeout, healthy)
}

// trickleUntilClosed sends frame on c a byte every interval and checks
// that the server closes c while the bytes still come, but not before
// timeout has passed since since.
func trickleUntilClosed(t *testing.T, c *rawConn, frame []byte, interval time.Duration, since time.Time,
	timeout time.Duration, healthy *healthyClient) {
	t.Helper()
	stop := make(chan struct{})
	sent := trickle(c.nc, frame, interval, stop)
	healthy.mustProgress()
	c.expectClosed()
	assert.GreaterOrEqual(t, time.Since(since), timeout, "closed before the timeout")
	close(stop)
	n := <-sent
	t.Logf("closed after %d of %d bytes", n, len(frame))
	assert.Less(t, n, len(frame), "closed while the request was still coming")
}

func slowlorisAnnounced(t *testing.T, addr string, _ time.Duration, healthy *healthyClient) {
	const conns = 200
	before := liveMemory()
	base := mntrValue(t, addr, "num_alive_connections")
	var cs []*rawConn
	for range conns {
		c := dialRaw(t, addr)
		c.write(append(lengthPrefix(wire.MaxBuffer), make([]byte, 100)...))
		cs = append(cs, c)
	}
	// Another connection's request goes through after theirs: the server
	// has read what they sent.
	healthy.mustProgress()
	grown := liveMemory() - before
	t.Logf("%d connections each announcing %d bytes: %d bytes of memory each", conns, wire.MaxBuffer, grown/conns)
	assert.Less(t, grown, int64(conns*64<<10), "memory for connections that announced jute.maxbuffer each")
	// At least: an earlier mntr's connection may not have been closed yet.
	assert.GreaterOrEqual(t, mntrValue(t, addr, "num_alive_connections"), base+conns, "all still open while measured")
	for _, c := range cs {
		c.nc.Close()
	}
	waitMntr(t, addr, "num_alive_connections", base)
}

func slowlorisAfterHandshake(t *testing.T, addr string, _ time.Duration, healthy *healthyClient) {
	since := time.Now() // the session can expire no sooner than its timeout after this
	c := dialRaw(t, addr)
	resp, _ := c.connect(&wire.ConnectRequest{TimeOut: 400, Passwd: make([]byte, 16)})
	require.NotZero(t, resp.SessionID)
	s := &rawSession{rawConn: c, t: t, addr: addr, id: resp.SessionID, passwd: resp.Passwd, seq: &rawSeq{}}
	const eph = "/slowloris-ephemeral"
	s.mustDo(wire.OpCreate, &wire.CreateRequest{Path: eph, ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})

	// A getData frame of 100 bytes, a byte every 20ms: 2s, far longer than
	// the session timeout. The partial frame does not keep it alive.
	frame := binary.BigEndian.AppendUint32(nil, 100)
	frame = wire.RequestHeader{Xid: 99, OpCode: wire.OpGetData}.Append(frame)
	frame = append(frame, pathWatch("/"+strings.Repeat("p", 100-wire.RequestHeaderSize-5-1), false)...)
	require.Len(t, frame, 104)
	trickleUntilClosed(t, c, frame, 20*time.Millisecond, since, time.Duration(resp.TimeOut)*time.Millisecond, healthy)
	ok, _, err := healthy.conn.Exists(eph)
	require.NoError(t, err)
	assert.False(t, ok, "the session expired: its ephemeral is gone")
}
