package servertest

import (
	"context"
	"fmt"
	"io"
	"net"
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
