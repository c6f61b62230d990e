package servertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

var openACL = zk.WorldACL(zk.PermAll)

// sessionTimeout is what session asks for: the most the test servers
// grant, so that a client stalled by a loaded machine does not time out
// its connection and reconnect (go-zookeeper v1.0.4 races with itself when
// a connection with watches reconnects: go-zookeeper/zk#35).
const sessionTimeout = 30 * time.Second

// session connects and waits for the session, closed with the test. The
// address is listed twice: go-zookeeper fails the requests queued while it
// reconnects with ErrNoServer once it has tried every address it has,
// which with a single one is at every reconnect.
func session(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events := dial(t, []string{addr, addr}, sessionTimeout)
	waitState(t, events, zk.StateHasSession)
	return conn
}

func TestFaults_FailWith(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	id := srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate}, Path: "/a",
		Fault: servertest.FailWith(wire.CodeOperationTimeout), Times: 2})
	for range 2 {
		_, err := conn.Create("/a", nil, 0, openACL)
		assert.EqualError(t, err, "unknown error: -7", "OPERATIONTIMEOUT, which go-zookeeper has no name for")
	}
	_, err := conn.Create("/a", nil, 0, openACL)
	require.NoError(t, err, "the rule fired twice, as it said")
	_, err = conn.Create("/b", nil, 0, openACL)
	require.NoError(t, err, "another path")
	assert.Equal(t, []servertest.RuleState{{ID: id, Rule: srv.Faults().List()[0].Rule, Matched: 3, Fired: 2}},
		srv.Faults().List())
	assert.True(t, srv.Faults().Remove(id))
	assert.False(t, srv.Faults().Remove(id), "already gone")
	assert.Empty(t, srv.Faults().List())
}

func TestFaults_Matching(t *testing.T) {
	srv := servertest.NewServer(t)
	a, b := session(t, srv.ConnectString()), session(t, srv.ConnectString())
	_, err := a.Create("/dir", nil, 0, openACL)
	require.NoError(t, err)
	srv.Faults().Add(servertest.Rule{Path: "/dir", Prefix: true, Session: b.SessionID(), Nth: 2, Times: servertest.Forever,
		Fault: servertest.FailWith(wire.CodeNoAuth)})
	tests := []struct {
		conn *zk.Conn
		path string
		fail bool
	}{
		{b, "/dir/1", false}, // the first match: Nth is 2
		{b, "/dir/2", true},
		{a, "/dir/3", false}, // another session
		{b, "/dirx", false},  // not under /dir
		{b, "/dir/4", true},  // forever
		{b, "/dir/4/5", true},
	}
	for _, tc := range tests {
		_, err := tc.conn.Create(tc.path, nil, 0, openACL)
		if tc.fail {
			assert.ErrorIs(t, err, zk.ErrNoAuth, tc.path)
		} else {
			assert.NoError(t, err, tc.path)
		}
	}
}

// wire.OpCreate is one opcode; Creates matches a create of every kind.
func TestFaults_EveryKindOfCreate(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	creates := map[string]func(path string) error{
		"create": func(p string) error { _, err := conn.Create(p, nil, 0, openACL); return err },
		"container": func(p string) error {
			_, err := conn.CreateContainer(p, nil, zk.FlagContainer, openACL)
			return err
		},
		"ttl": func(p string) error {
			_, err := conn.CreateTTL(p, nil, zk.FlagTTL, openACL, time.Hour)
			return err
		},
	}
	for _, p := range []string{"/only", "/every"} {
		_, err := conn.Create(p, nil, 0, openACL)
		require.NoError(t, err)
	}
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate}, Path: "/only", Prefix: true,
		Times: servertest.Forever, Fault: servertest.FailWith(wire.CodeNoAuth)})
	srv.Faults().Add(servertest.Rule{Ops: servertest.Creates, Path: "/every", Prefix: true,
		Times: servertest.Forever, Fault: servertest.FailWith(wire.CodeNoAuth)})
	for kind, create := range creates {
		assert.ErrorIs(t, create("/every/"+kind), zk.ErrNoAuth, "Creates matches a %s", kind)
		if kind == "create" {
			assert.ErrorIs(t, create("/only/"+kind), zk.ErrNoAuth)
		} else {
			assert.NoError(t, create("/only/"+kind), "OpCreate alone does not match a %s", kind)
		}
	}
	assert.Contains(t, servertest.Creates, wire.OpCreate2, "the Java client's and Curator's create")
}

// The classic case: the create is applied, the reply lost with the
// connection; the client cannot tell, and finds the node there.
func TestFaults_LoseReply(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate}, Path: "/maybe", Fault: servertest.LoseReply})
	_, err := conn.Create("/maybe", nil, 0, openACL)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	_, err = conn.Create("/maybe", nil, 0, openACL)
	assert.ErrorIs(t, err, zk.ErrNodeExists, "it happened")
}

func TestFaults_CloseBefore(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate}, Path: "/never", Fault: servertest.CloseBefore})
	_, err := conn.Create("/never", nil, 0, openACL)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	exists, _, err := conn.Exists("/never")
	require.NoError(t, err)
	assert.False(t, exists, "it did not happen")
}

func TestFaults_DelayAndProbability(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpGetData}, Fault: servertest.Delay(100 * time.Millisecond)})
	start := time.Now()
	_, _, err := conn.Get("/")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "held back")

	// With a seed, a probability picks the same requests each run.
	failures := func(seed uint64) []bool {
		srv.Faults().Seed(seed)
		id := srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpExists}, Probability: 0.5, Times: servertest.Forever,
			Fault: servertest.FailWith(wire.CodeSystemError)})
		defer srv.Faults().Remove(id)
		var out []bool
		for range 40 {
			_, _, err := conn.Exists("/")
			out = append(out, err != nil)
		}
		return out
	}
	first := failures(7)
	assert.Equal(t, first, failures(7), "the same seed, the same requests fail")
	assert.Contains(t, first, true)
	assert.Contains(t, first, false)
}

func TestFaults_ClusterMember(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	f := (c.Leader() + 1) % 3
	onF, other := session(t, c.Addr(f)), session(t, c.Addr((f+1)%3))
	c.Faults().Add(servertest.Rule{Member: f + 1, Times: servertest.Forever, Fault: servertest.FailWith(wire.CodeOperationTimeout)})
	_, err := onF.Create("/x", nil, 0, openACL)
	assert.EqualError(t, err, "unknown error: -7", "a client of member %d", f)
	_, err = other.Create("/x", nil, 0, openACL)
	assert.NoError(t, err, "a client of another member")
}

// A paused server holds every request, pings included, until it resumes.
func TestPause_Server(t *testing.T) {
	srv := servertest.NewServer(t)
	conn := session(t, srv.ConnectString())
	srv.Pause()
	done := make(chan error, 1)
	go func() {
		_, _, err := conn.Get("/")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("answered while paused: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	srv.Resume()
	select {
	case err := <-done:
		assert.NoError(t, err, "the held request is answered at the resume")
	case <-time.After(10 * time.Second):
		t.Fatal("not answered after the resume")
	}
}

// A rule that pauses the member a matching request came to: the request
// waits out the pause, and so does everything else sent there meanwhile.
func TestPause_ByARule(t *testing.T) {
	srv := servertest.NewServer(t)
	a, b := session(t, srv.ConnectString()), session(t, srv.ConnectString())
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate}, Path: "/stop", Pause: 300 * time.Millisecond})
	start := time.Now()
	created := make(chan error, 1)
	go func() {
		_, err := a.Create("/stop", nil, 0, openACL)
		created <- err
	}()
	srv.Inspect().WaitFor("the rule to fire", func(*servertest.Inspector) bool { return srv.Faults().List()[0].Fired == 1 })
	_, _, err := b.Exists("/stop")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "another client waited out the pause")
	require.NoError(t, <-created)
}

// A paused leader: the others elect a leader without it and go on; its
// client's request waits, and is answered once it resumes and catches up.
func TestPause_ClusterLeader(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	old := c.Leader()
	other := (old + 1) % 3
	onOld, onOther := session(t, c.Addr(old)), session(t, c.Addr(other))
	c.Pause(old)
	held := make(chan error, 1)
	go func() {
		_, err := onOld.Create("/held", nil, 0, openACL)
		held <- err
	}()
	require.Eventually(t, func() bool {
		for i := range 3 {
			if i != old && c.Server(i).Leader() && c.Server(i).Serving() {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "a new leader among the others")
	_, err := onOther.Create("/meanwhile", nil, 0, openACL)
	require.NoError(t, err, "the others serve writes")
	select {
	case err := <-held:
		t.Fatalf("the paused member answered: %v", err)
	default:
	}
	c.Resume(old)
	c.Inspect(old).WaitForNode("/meanwhile")
	select {
	case err := <-held:
		// Held through the election, the request may fail with the
		// connection (as any write in flight at a leader change) or go
		// through once the member rejoins.
		if err != nil {
			assert.ErrorIs(t, err, zk.ErrConnectionClosed)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the held request never ended")
	}
}

// A paused follower does not hold up the others: the leader can still be
// killed at once (its writes to the follower wait in the connection, and
// the RPC it awaits ends with the leader's connections, not at Raft's
// transport timeout), and a new leader is elected.
func TestPause_FollowerDoesNotHoldUpTheOthers(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.Leader()
	paused := (leader + 1) % 3
	conn := session(t, c.Addr((leader+2)%3))
	_, err := conn.Create("/before", nil, 0, openACL)
	require.NoError(t, err)
	c.Pause(paused)
	done := make(chan struct{})
	go func() { c.Kill(leader); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // Raft's transport would wait 10s for the follower's answer
		t.Fatal("killing the leader waited for the paused follower")
	}
	c.Resume(paused)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.WaitForLeader(ctx)
	require.NoError(t, err)
}

// A paused server holds connects too, so a session whose pings it held
// expires, as when the server's process is stopped past the timeout: the
// client learns it at the resume.
func TestPause_SessionsExpire(t *testing.T) {
	srv := servertest.NewServer(t)
	conn, events := connect(t, srv.ConnectString(), 400*time.Millisecond)
	waitState(t, events, zk.StateHasSession)
	id := conn.SessionID()
	srv.Pause()
	srv.Inspect().WaitFor("the session to expire", func(in *servertest.Inspector) bool {
		for _, s := range in.Sessions() {
			if s.ID == id {
				return false
			}
		}
		return true
	})
	srv.Resume()
	waitState(t, events, zk.StateExpired)
}
