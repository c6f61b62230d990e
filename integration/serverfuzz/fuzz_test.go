package serverfuzz

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// markerXid is the xid of the request that ends every program which does
// not close its session: its reply says the server answered all before it.
const markerXid = 0x7ffffffe

// answerLimit bounds how long the server may take over one program.
const answerLimit = 10 * time.Second

// superDigest is super:test, so that the healthy client can clean up
// whatever ACLs a program left.
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// FuzzServer plays fuzzed sessions (Decode) against one live server, one
// session per input. After each the server must have answered every
// request in order until it closed the connection for a reason, never
// stalled; a healthy client's request is answered; the state keeps its
// invariants (FSM.Check); and once the program's leftovers are cleaned up,
// none of the server's goroutines is left behind.
func FuzzServer(f *testing.F) {
	for _, seed := range seeds() {
		f.Add(seed)
	}
	srv := servertest.NewServer(f, servertest.WithTickTime(50*time.Millisecond),
		servertest.WithConfig(func(c *server.Config) { c.SuperDigest = superDigest; c.MaxClientCnxns = 0 }))
	addr := srv.Addr().String()
	healthy, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(healthy.Close)
	if err := healthy.AddAuth("digest", []byte("super:test")); err != nil {
		f.Fatal(err)
	}
	if err := answers(healthy); err != nil {
		f.Fatal(err)
	}
	// The server's own goroutines before any program, the healthy
	// client's connection among them.
	baseline := srv.Goroutines()

	f.Fuzz(func(t *testing.T, data []byte) {
		prog := Decode(data)
		if err := play(addr, prog); err != nil {
			t.Fatalf("%v\nprogram:\n%s", err, prog)
		}
		if err := answers(healthy); err != nil {
			t.Fatalf("the healthy client is not served after the program: %v\nprogram:\n%s", err, prog)
		}
		if err := cleanUp(healthy); err != nil {
			t.Fatalf("cleaning up after the program: %v\nprogram:\n%s", err, prog)
		}
		if err := srv.FSM().Check(); err != nil {
			t.Fatalf("state invariants broken: %v\nprogram:\n%s", err, prog)
		}
		if err := settles(srv.Server, baseline); err != nil {
			t.Fatalf("%v\nprogram:\n%s", err, prog)
		}
	})
}

// play runs one program on a fresh connection and checks the answers.
func play(addr string, p Program) error {
	nc, err := net.DialTimeout("tcp", addr, answerLimit)
	if err != nil {
		return err
	}
	defer nc.Close()
	deadline := time.Now().Add(answerLimit)
	_ = nc.SetDeadline(deadline)

	var out []byte
	out = frame(out, p.Connect.Append)
	// zkraft answers a ping at once, ahead of the session's writes in
	// flight (ZooKeeper queues it behind them); clients take a ping's reply
	// (xid -2) apart from the others, so pings, and any request sent with
	// the ping's xid, are left out of the order.
	var sent []int32
	var createSession []bool // per sent request: a createSession opcode
	pings := 0
	for _, r := range p.Requests {
		out = frame(out, func(b []byte) []byte {
			return append(wire.RequestHeader{Xid: r.Xid, OpCode: r.Op}.Append(b), r.Body...)
		})
		if r.Op == wire.OpPing || (r.Xid == wire.XidPing && r.Op != wire.OpCreateSession) {
			pings++
		} else {
			sent = append(sent, r.Xid)
			createSession = append(createSession, r.Op == wire.OpCreateSession)
		}
	}
	if !p.Closes {
		out = frame(out, func(b []byte) []byte {
			b = wire.RequestHeader{Xid: markerXid, OpCode: wire.OpExists}.Append(b)
			return (&wire.PathWatchRequest{Path: "/"}).Append(b)
		})
		sent = append(sent, markerXid)
		createSession = append(createSession, false)
	}
	// The writes go on while the replies are read: a server that answers
	// as it reads must not be blocked by a reader that waits for the end.
	wrote := make(chan error, 1)
	go func() {
		_, err := nc.Write(out)
		wrote <- err
	}()

	fr := wire.NewFrameReader(nc, 64<<20)
	if _, err := fr.Next(); err != nil { // the ConnectResponse, or EOF
		<-wrote
		if isClosed(err) {
			return nil // the server may refuse the session (a bad timeout, an unknown session id)
		}
		return fmt.Errorf("reading the connect response: %w", err)
	}
	var got []int32
	for {
		body, err := fr.Next()
		if err != nil {
			<-wrote
			if !isClosed(err) {
				return fmt.Errorf("after %d replies (xids %v of %v): %w", len(got), got, sent, err)
			}
			break
		}
		var h wire.ReplyHeader
		if _, err := h.Decode(body); err != nil {
			return fmt.Errorf("reply %d: undecodable header %x: %w", len(got), body, err)
		}
		if h.Xid == -1 {
			continue // a watch notification
		}
		if h.Xid == wire.XidPing {
			if pings--; pings < 0 {
				return fmt.Errorf("more replies with xid -2 than requests with it or pings")
			}
			continue
		}
		if len(got) < len(sent) && createSession[len(got)] {
			// As ZooKeeper 3.8.0 does, the answer to a createSession after
			// the handshake is a connect response, and the connection ends.
			var cr wire.ConnectResponse
			if _, err := cr.Decode(body); err != nil {
				return fmt.Errorf("reply %d to createSession: not a connect response %x: %w", len(got), body, err)
			}
			got = append(got, sent[len(got)])
			continue
		}

		got = append(got, h.Xid)
		if len(got) > len(sent) || got[len(got)-1] != sent[len(got)-1] {
			return fmt.Errorf("replies out of order: xids %v for requests %v", got, sent)
		}
		if h.Xid == markerXid && len(got) == len(sent) {
			<-wrote
			return nil
		}
	}
	return nil
}

func frame(dst []byte, body func([]byte) []byte) []byte {
	dst, start := wire.StartFrame(dst)
	return wire.EndFrame(body(dst), start)
}

// isClosed reports whether err is the server closing the connection (an
// EOF, a reset), not a stall.
func isClosed(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "connection reset")
}

// answers checks that c's requests are answered within answerLimit.
func answers(c *zk.Conn) error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Sync("/")
		if err == nil {
			_, _, err = c.Exists("/zookeeper")
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(answerLimit):
		return fmt.Errorf("no answer within %v", answerLimit)
	}
}

// cleanUp removes what a program created and gives the root its open ACL
// back, as the super user, so that every input starts from the same tree.
func cleanUp(c *zk.Conn) error {
	if _, err := c.SetACL("/", zk.WorldACL(zk.PermAll), -1); err != nil {
		return fmt.Errorf("setACL /: %w", err)
	}
	for _, p := range []string{"/zookeeper", "/zookeeper/quota"} {
		if _, err := c.SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("setACL %s: %w", p, err)
		}
	}
	keep := []string{"/zookeeper", "/zookeeper/config", "/zookeeper/quota"}
	var remove func(p string) error
	remove = func(p string) error {
		children, _, err := c.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("children of %s: %w", p, err)
		}
		for _, ch := range children {
			if err := remove(path.Join(p, ch)); err != nil {
				return err
			}
		}
		if slices.Contains(keep, p) || p == "/" {
			return nil
		}
		if err := c.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete %s: %w", p, err)
		}
		return nil
	}
	return remove("/")
}

// settles waits until the server's own goroutines are back to baseline:
// what a closed connection and its session's leftovers started must end.
func settles(srv *server.Server, baseline int) error {
	deadline := make(chan struct{})
	timer := time.AfterFunc(answerLimit, func() { close(deadline) })
	defer timer.Stop()
	if srv.WaitGoroutines(baseline, deadline) {
		return nil
	}
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return fmt.Errorf("the server runs %d goroutines of its own, %d before the program, %v after it ended:\n%s",
		srv.Goroutines(), baseline, answerLimit, b.String())
}

// seeds returns the seed corpus: a program that touches every request
// kind, and a few random ones from a fixed source.
func seeds() [][]byte {
	var all []byte
	all = append(all, 0)
	for kind := range 18 {
		all = append(all, byte(kind), 1, 2, 3, 0, 1, 2)
	}
	out := [][]byte{{}, {0, 0, 1, 0, 0}, all}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 64+rng.IntN(192))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		out = append(out, b)
	}
	return out
}
