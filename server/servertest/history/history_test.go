package history_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/server/servertest/history"
	"github.com/zkraft/zkraft/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-zookeeper's Conn.Close does not wait for its goroutines.
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("time.Sleep"),
	)
}

var openACL = zk.WorldACL(zk.PermAll)

func connect(t *testing.T, rec *history.Recorder, addrs ...string) *history.Conn {
	t.Helper()
	addrs = append(addrs, addrs...) // go-zookeeper fails queued requests with one address at every reconnect
	conn, events, err := rec.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	return conn
}

// workload runs clients that write, sync and read a few znodes at once,
// with watches, as a test's own code might.
func workload(t *testing.T, rec *history.Recorder, addrs []string, clients, rounds int) {
	setup := connect(t, rec, addrs[0])
	_, err := setup.Create("/h", nil, 0, openACL)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for c := range clients {
		conn := connect(t, rec, addrs[c%len(addrs)])
		rnd := rand.New(rand.NewPCG(uint64(c), 7))
		wg.Go(func() {
			for i := range rounds {
				key := fmt.Sprintf("/h/k%d", rnd.IntN(3))
				switch rnd.IntN(7) {
				case 0:
					conn.Create(key, []byte(fmt.Sprint(c, i)), 0, openACL)
				case 1:
					conn.Delete(key, -1)
				case 2:
					if _, st, err := conn.Get(key); err == nil {
						conn.Set(key, []byte(fmt.Sprint(c, i)), st.Version)
					}
				case 3:
					conn.Sync(key)
					conn.Get(key)
				case 4:
					conn.Sync("/")
					conn.Exists(key)
				case 5:
					conn.GetW(key)
					conn.Get(key)
				case 6:
					conn.Multi(&zk.CreateRequest{Path: key + "-m", Data: []byte("m"), Acl: openACL},
						&zk.DeleteRequest{Path: key + "-m", Version: -1})
					conn.Create("/h/seq-", nil, zk.FlagSequence|zk.FlagEphemeral, openACL)
				}
			}
		})
	}
	wg.Wait()
}

func TestRecorder_CorrectRunPasses(t *testing.T) {
	srv := servertest.NewServer(t)
	rec := history.New()
	workload(t, rec, []string{srv.ConnectString()}, 4, 150)
	rep := rec.Verify(t)
	t.Log(rep)
	assert.True(t, rep.OK())
	assert.Greater(t, rep.Checked, 300, "writes and synced reads were checked")
}

func TestRecorder_ClusterRunPasses(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	rec := history.New()
	workload(t, rec, []string{c.Addr(0), c.Addr(1), c.Addr(2)}, 6, 80)
	rep := rec.Verify(t)
	t.Log(rep)
	assert.True(t, rep.OK())
}

// fakeTB takes a test's failures for itself, to see Verify fail.
type fakeTB struct {
	testing.TB
	errors []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

// A history made wrong on purpose: a fault rule answers the client's
// synced read of a node it created, and that another client set, with
// NONODE. The checker must say the history is not linearizable, that the
// client did not read its own write, and write its visualisation.
func TestRecorder_WrongHistoryFails(t *testing.T) {
	srv := servertest.NewServer(t)
	rec := history.New()
	a, b := connect(t, rec, srv.ConnectString()), connect(t, rec, srv.ConnectString())
	_, err := a.Create("/x", []byte("1"), 0, openACL)
	require.NoError(t, err)
	_, err = b.Set("/x", []byte("2"), 0)
	require.NoError(t, err)
	srv.Faults().Add(servertest.Rule{Ops: []wire.Op{wire.OpGetData}, Path: "/x", Session: a.SessionID(),
		Fault: servertest.FailWith(wire.CodeNoNode)})
	_, err = a.Sync("/x")
	require.NoError(t, err)
	_, _, err = a.Get("/x")
	require.ErrorIs(t, err, zk.ErrNoNode, "the planted fault")

	tb := &fakeTB{TB: t}
	rep := rec.Verify(tb)
	require.False(t, rep.OK())
	assert.Equal(t, "Illegal", rep.Verdict)
	assert.Equal(t, []string{"/x"}, rep.Illegal)
	require.Len(t, rep.Violations, 1)
	assert.Equal(t, "read your writes", rep.Violations[0].Guarantee)
	require.Len(t, tb.errors, 1)
	report := tb.errors[0]
	t.Log(report)
	assert.Contains(t, report, "not linearizable: /x")
	assert.Contains(t, report, `get(/x) -> zk: node does not exist`)
	html := filepath.Join(t.ArtifactDir(), "history.html")
	assert.Contains(t, report, "visualisation: "+html)
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(page), "read your writes"), "the violation is marked on the page")
}

// A run that recorded nothing checked nothing, and fails: the code under
// test used a client the Recorder did not hand out. AllowEmpty says it is
// expected.
func TestRecorder_NothingRecordedFails(t *testing.T) {
	srv := servertest.NewServer(t)
	rec := history.New()
	conn, _, err := zk.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Create("/unrecorded", nil, 0, openACL) // not through rec
	require.NoError(t, err)

	tb := &fakeTB{TB: t}
	rep := rec.Verify(tb)
	assert.Equal(t, 0, rep.Ops)
	require.Len(t, tb.errors, 1)
	assert.Contains(t, tb.errors[0], "nothing was recorded")

	rec.AllowEmpty()
	tb = &fakeTB{TB: t}
	rec.Verify(tb)
	assert.Empty(t, tb.errors)
}
