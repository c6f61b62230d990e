package servertest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/server/servertest/history"
	"github.com/zkraft/zkraft/wire"
)

// A server of the test's own, ready when NewServer returns, closed (and its
// state checked) when the test ends.
func Example() {
	t := newExampleT() // in a test: the *testing.T
	defer t.finish()

	srv := servertest.NewServer(t)
	conn := connectExample(srv.ConnectString())
	defer conn.Close()
	conn.Create("/app", []byte("config"), 0, zk.WorldACL(zk.PermAll))
	data, _, _ := conn.Get("/app")
	fmt.Println(string(data))
	// Output: config
}

// Virtual time: the session expires when the test moves the clock past its
// timeout, at once and with no sleep; its ephemeral is gone when Advance
// returns.
func ExampleWithFakeClock() {
	t := newExampleT()
	defer t.finish()

	srv := servertest.NewServer(t, servertest.WithFakeClock())
	owner := connectExample(srv.ConnectString())
	defer owner.Close()
	owner.Create("/leader", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))

	srv.Advance(9 * time.Second) // of a 10s session: alive
	fmt.Println(srv.Inspect().Node("/leader") != nil)
	srv.Advance(2 * time.Second) // 11s without a word from the client: expired
	fmt.Println(srv.Inspect().Node("/leader") != nil)
	// Output:
	// true
	// false
}

// A fault rule: the create is applied, but its reply is lost with the
// connection, the classic "did my create happen?".
func ExampleFaults() {
	t := newExampleT()
	defer t.finish()

	srv := servertest.NewServer(t)
	conn := connectExample(srv.ConnectString())
	defer conn.Close()
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpCreate}, Path: "/job", Fault: servertest.LoseReply})

	_, err := conn.Create("/job", nil, 0, zk.WorldACL(zk.PermAll))
	fmt.Println(err)
	_, err = conn.Create("/job", nil, 0, zk.WorldACL(zk.PermAll))
	fmt.Println(err)
	for _, r := range srv.Faults().List() {
		fmt.Printf("rule %d fired %d time(s)\n", r.ID, r.Fired)
	}
	// Output:
	// zk: connection closed
	// zk: node already exists
	// rule 1 fired 1 time(s)
}

// Pausing a member, as SIGSTOP would: the others elect a leader without
// it, and its clients' requests wait until it resumes.
func ExampleCluster_Pause() {
	t := newExampleT()
	defer t.finish()

	c := servertest.NewCluster(t, 3)
	old := c.Leader()
	c.Pause(old)
	// The paused leader's lease lapses and another member is elected.
	for deadline := time.Now().Add(10 * time.Second); (c.Leader() == old || c.Leader() < 0) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println(c.Leader() != old)
	c.Resume(old)
	// Output: true
}

// A three-member cluster in the test's process; killing the leader, the
// others elect another and keep the data.
func ExampleNewCluster() {
	t := newExampleT()
	defer t.finish()

	c := servertest.NewCluster(t, 3)
	conn := connectExample(c.ConnectString())
	defer conn.Close()
	conn.Create("/kept", []byte("yes"), 0, zk.WorldACL(zk.PermAll))

	old := c.Leader()
	c.Kill(old)
	leader, _ := c.WaitForLeader(context.Background())
	fmt.Println(leader != old)
	for range 100 { // go-zookeeper moves to a live member; a read sent as the leader went is tried again
		if data, _, err := conn.Get("/kept"); err == nil {
			fmt.Println(string(data))
			break
		}
	}
	// Output:
	// true
	// yes
}

// Tests that share one server, each in a namespace of its own: both create
// /config, and each sees its own.
func ExampleShared() {
	t := newExampleT()
	defer t.finish()

	a, b := servertest.Shared(t), servertest.Shared(t)
	for i, ns := range []*servertest.Namespace{a, b} {
		conn := connectExample(ns.ConnectString())
		defer conn.Close()
		conn.Create("/config", []byte(fmt.Sprint("test ", i)), 0, zk.WorldACL(zk.PermAll))
	}
	for _, ns := range []*servertest.Namespace{a, b} {
		fmt.Printf("%s", ns.Inspect().Tree("/config").Text())
	}
	fmt.Println(strings.HasPrefix(a.Chroot(), "/servertest/"))
	// Output:
	// /config "test 0" v0 cv0 av0
	// /config "test 1" v0 cv0 av0
	// true
}

// The tree as a value: Text is a golden file's form, without the zxids,
// times and session ids that differ from run to run.
func ExampleInspector_Tree() {
	t := newExampleT()
	defer t.finish()

	srv := servertest.NewServer(t)
	conn := connectExample(srv.ConnectString())
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	conn.Create("/app", []byte("v1"), 0, acl)
	conn.Create("/app/workers", nil, 0, acl)
	conn.Create("/app/workers/w-", []byte("busy"), zk.FlagEphemeral|zk.FlagSequence, acl)
	conn.Set("/app", []byte("v2"), 0)

	fmt.Print(srv.Inspect().Tree("/app").Text())
	// Output:
	// /app "v2" v1 cv1 av0
	// /app/workers "" v0 cv1 av0
	// /app/workers/w-0000000000 "busy" v0 cv0 av0 ephemeral
}

// Lock queues, recognised by their nodes' names: lockrecipe's, Curator's,
// go-zookeeper's and kazoo's.
func ExampleInspector_Locks() {
	t := newExampleT()
	defer t.finish()

	srv := servertest.NewServer(t)
	holder, waiter := connectExample(srv.ConnectString()), connectExample(srv.ConnectString())
	defer holder.Close()
	defer waiter.Close()
	ctx := context.Background()
	lockrecipe.NewMutex(holder, "/locks/jobs").Lock(ctx)
	go lockrecipe.NewMutex(waiter, "/locks/jobs").Lock(ctx)
	in := srv.Inspect()
	in.WaitForChildren("/locks/jobs", 2)

	q := in.Locks()[0]
	h, _ := q.Holder()
	fmt.Println(q.Path, q.Kind)
	fmt.Println(h.Session == holder.SessionID(), q.Waiters()[0].Session == waiter.SessionID())
	// Output:
	// /locks/jobs mutex
	// true true
}

// Waiting for the server's state without sleeping: the wait wakes at each
// change the server applies.
func ExampleInspector_WaitForNode() {
	t := newExampleT()
	defer t.finish()

	srv := servertest.NewServer(t)
	conn := connectExample(srv.ConnectString())
	defer conn.Close()
	go conn.Create("/ready", nil, 0, zk.WorldACL(zk.PermAll)) // the code under test
	srv.Inspect().WaitForNode("/ready")
	fmt.Println("ready")
	// Output: ready
}

// go-zookeeper's own test-cluster helper, in process: code written against
// it moves with an import change.
func ExampleStartTestCluster() {
	t := newExampleT()
	defer t.finish()

	tc, _ := servertest.StartTestCluster(t, 3, nil, nil)
	defer tc.Stop()
	conn, _, _ := tc.ConnectAll()
	defer conn.Close()
	_, err := conn.Create("/gozk", nil, 0, zk.WorldACL(zk.PermAll))
	fmt.Println(err)
	// Output: <nil>
}

// The history checker: clients handed out by a Recorder are recorded as
// the test's code uses them; Verify checks what they saw (linearizable
// writes and synced reads per znode, and each session's guarantees) and
// fails the test with a report and an HTML visualisation if anything is
// wrong.
func Example_historyChecker() {
	t := newExampleT()
	defer t.finish()

	srv := servertest.NewServer(t)
	rec := history.New()
	a, _, _ := rec.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
	b, _, _ := rec.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
	defer a.Close()
	defer b.Close()

	a.Create("/counter", []byte("0"), 0, zk.WorldACL(zk.PermAll))
	_, st, _ := b.Get("/counter")
	b.Set("/counter", []byte("1"), st.Version)
	a.Sync("/counter")
	a.Get("/counter")

	rep := rec.Verify(t)
	fmt.Println(rep.OK(), rep.Verdict)
	// Output: true Ok
}

// connectExample connects a go-zookeeper client that logs nothing.
func connectExample(addrs string) *zk.Conn {
	hosts := strings.Split(addrs, ",")
	conn, events, err := zk.Connect(append(hosts, hosts...), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		panic(err)
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	return conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// exampleT stands in for a test's *testing.T in the examples, which have
// none: it keeps the cleanups for finish and reports failures on stdout,
// where the example's expected output shows them up.
type exampleT struct {
	testing.TB // the methods not below are not used
	cleanups   []func()
	failed     bool
}

func newExampleT() *exampleT { return &exampleT{} }

func (t *exampleT) Helper()             {}
func (t *exampleT) Name() string        { return "Example" }
func (t *exampleT) Cleanup(f func())    { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Output() io.Writer   { return io.Discard }
func (t *exampleT) Failed() bool        { return t.failed }
func (t *exampleT) Logf(string, ...any) {}
func (t *exampleT) Errorf(format string, args ...any) {
	t.failed = true
	fmt.Printf("error: "+format+"\n", args...)
}
func (t *exampleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic("example failed")
}
func (t *exampleT) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }
func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "servertest-example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
