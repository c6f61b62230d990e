package servertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestCluster has the shape of go-zookeeper's test cluster (the helper its
// own tests use, which projects copy into theirs): code written against it
// moves to zkraft by calling this StartTestCluster instead, with no Java
// and no ZooKeeper install, and a start in milliseconds. Its members are
// durable, as ZooKeeper's are, so that StopAllServers and StartAllServers
// keep the data.
type TestCluster struct {
	Path    string // the members' data, under t.TempDir()
	Servers []TestServer

	t       testing.TB
	cluster *Cluster
}

// TestServer is one member of a TestCluster.
type TestServer struct {
	Port int
	Path string // its data dir
}

// StartTestCluster starts size durable members in the test's process and
// returns once one leads and all serve; they stop with the test (Stop
// stops them sooner). go-zookeeper's takes a *testing.T; any testing.TB
// does here. stdout and stderr are accepted for the signature's
// sake: the members log to the test's output.
func StartTestCluster(t testing.TB, size int, stdout, stderr io.Writer) (*TestCluster, error) {
	t.Helper()
	if size < 1 {
		return nil, fmt.Errorf("servertest: a cluster of %d members", size)
	}
	c := NewCluster(t, size, WithDurable())
	tc := &TestCluster{t: t, cluster: c}
	for i, m := range c.members {
		_, port, err := net.SplitHostPort(c.Addr(i))
		if err != nil {
			return nil, err
		}
		p, _ := strconv.Atoi(port)
		tc.Servers = append(tc.Servers, TestServer{Port: p, Path: m.cfg.DataDir})
	}
	if len(tc.Servers) > 0 {
		tc.Path = tc.Servers[0].Path
	}
	return tc, nil
}

// Connect connects a client to member idx alone, with a 15s session.
func (tc *TestCluster) Connect(idx int) (*zk.Conn, <-chan zk.Event, error) {
	return zk.Connect([]string{tc.cluster.Addr(idx)}, 15*time.Second)
}

// ConnectAll connects a client to every member, with a 15s session.
func (tc *TestCluster) ConnectAll() (*zk.Conn, <-chan zk.Event, error) {
	return tc.ConnectAllTimeout(15 * time.Second)
}

// ConnectAllTimeout connects a client to every member with the given
// session timeout.
func (tc *TestCluster) ConnectAllTimeout(sessionTimeout time.Duration) (*zk.Conn, <-chan zk.Event, error) {
	return tc.ConnectWithOptions(sessionTimeout)
}

// ConnectWithOptions connects a client to every member with the given
// session timeout and go-zookeeper options (zk.WithLogger, ...).
func (tc *TestCluster) ConnectWithOptions(sessionTimeout time.Duration, options ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event, error) {
	hosts := strings.Split(tc.cluster.ConnectString(), ",")
	// go-zookeeper's option type is unexported, but a func literal is
	// assignable to it: the options go in as one.
	return zk.Connect(hosts, sessionTimeout, func(c *zk.Conn) {
		for _, o := range options {
			o(c)
		}
	})
}

// member returns the index of the member at server, an address as
// zk.Conn.Server gives it ("127.0.0.1:port"); it panics on an unknown
// one, as go-zookeeper's helper does.
func (tc *TestCluster) member(server string) int {
	for i, s := range tc.Servers {
		if strings.HasSuffix(server, ":"+strconv.Itoa(s.Port)) {
			return i
		}
	}
	panic(fmt.Sprintf("unknown server: %s", server))
}

// StopServer stops the member at server (its address), as a crash would.
func (tc *TestCluster) StopServer(server string) { tc.cluster.Kill(tc.member(server)) }

// StartServer starts the stopped member at server again, from its data.
func (tc *TestCluster) StartServer(server string) { tc.cluster.Restart(tc.member(server)) }

// StopAllServers stops every running member.
func (tc *TestCluster) StopAllServers() error {
	for i := range tc.Servers {
		if tc.cluster.Server(i) != nil {
			tc.cluster.Kill(i)
		}
	}
	return nil
}

// StartAllServers starts every stopped member, and returns once one leads
// and all serve.
func (tc *TestCluster) StartAllServers() error {
	for i := range tc.Servers {
		if tc.cluster.Server(i) == nil {
			tc.cluster.Restart(i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := tc.cluster.WaitForLeader(ctx)
	return err
}

// Stop stops every member.
func (tc *TestCluster) Stop() error { return tc.StopAllServers() }

// Cluster returns the servertest cluster beneath, for what go-zookeeper's
// helper does not offer (partitions, fault rules, a fake clock...).
func (tc *TestCluster) Cluster() *Cluster { return tc.cluster }

// WaitClientSettled waits until c's go-zookeeper loop has passed its
// re-sending of watches after the connect that gave it its session (it
// then waits in sync.(*WaitGroup).Wait until the connection ends), or has
// stopped; call it after zk.Connect, before the first request, in tests
// run with -race. go-zookeeper v1.0.4 reads Conn.lastZxid there without
// the lock its receiver writes it under (go-zookeeper/zk#35, unfixed
// upstream): a test whose request, with a watch, is answered before the
// loop gets there makes -race report the client's own race in that test
// (about once in 300 runs of this project's tests in a soak). The loop's
// goroutine is found by its receiver in the stacks of all goroutines, as
// goleak reads them. It fails t after 10 s.
func WaitClientSettled(t testing.TB, c *zk.Conn) {
	t.Helper()
	frame := fmt.Sprintf("github.com/go-zookeeper/zk.(*Conn).loop(%p,", c)
	deadline := time.Now().Add(10 * time.Second)
	for !loopSettled(frame) {
		if time.Now().After(deadline) {
			t.Fatalf("servertest: go-zookeeper's loop did not settle after connecting")
		}
		time.Sleep(time.Millisecond)
	}
}

// loopSettled reports whether the goroutine with the given loop frame
// waits in sync.(*WaitGroup).Wait called by that frame, or is gone.
func loopSettled(frame string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if i := strings.Index(g, frame); i >= 0 {
			return strings.Contains(g[:i], "sync.(*WaitGroup).Wait(")
		}
	}
	return true
}
