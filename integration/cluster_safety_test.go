package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterRestartedMemberCannotElectAStaleLeader builds the failure that
// in-memory members invite: member B falls behind (cut off while writes
// commit on the leader L and member C), L dies and restarts empty, and C is
// cut off, so that B and the empty L could elect B, whose log lacks the last
// acknowledged writes. The empty L must refuse B its vote; once C is back,
// C leads and every acknowledged write is there.
func TestClusterRestartedMemberCannotElectAStaleLeader(t *testing.T) {
	refusals := make(chan string, 64)
	logger := slog.New(&refusalHandler{refusals: refusals})
	c := servertest.NewCluster(t, 3, servertest.WithConfig(func(cfg *server.Config) { cfg.Logger = logger }))
	l := c.Leader()
	b, m := (l+1)%3, (l+2)%3
	cl := mustConnect(t, c.Addr(m))
	// Retried after a lost connection: a member closes its clients'
	// connections when a write of theirs fails, as ZooKeeper's do, and on a
	// loaded machine an election can come between the cluster's start and
	// these writes (CI, beside a chaos campaign: 1 run in many).
	create := func(name string) {
		t.Helper()
		mustCreateRetried(t, cl, name, nil)
	}
	for i := range 10 {
		create(fmt.Sprintf("/before-%d", i))
	}
	waitApplied(t, c, b, c.Server(m).FSM().LastZxid())

	c.Partition([]int{b}, []int{l, m}) // B falls behind
	for i := range 20 {
		create(fmt.Sprintf("/acked-%d", i)) // committed by L and C
	}
	c.Kill(l)
	c.Partition([]int{m}, []int{b, l}) // C cut off: B and L may talk
	c.Restart(l)                       // empty

	bID := strconv.Itoa(c.Server(b).ServerID())
	deadline := time.After(20 * time.Second)
	for refused := false; !refused; {
		select {
		case candidate := <-refusals:
			refused = candidate == bID
		case <-deadline:
			t.Fatal("the restarted member never refused the stale member its vote")
		}
	}
	assert.NotEqual(t, "leader", c.Server(b).Mode(), "the stale member does not lead")

	c.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, b, leader, "the stale member does not lead")
	requireAcked(t, c.Addr(leader), 20)
}

// TestClusterTwoRestartedMembersElectTheOneThatKeptTheData kills two of
// three members and restarts them empty (in memory, or durable with their
// data dirs wiped) beside the one that kept every write. A ZooKeeper
// ensemble elects the member with the highest zxid; the two empty members
// must likewise elect the survivor, not one of themselves (which would make
// the survivor drop what it holds).
func TestClusterTwoRestartedMembersElectTheOneThatKeptTheData(t *testing.T) {
	for _, tc := range []struct {
		name          string
		survivorLeads bool // the survivor led before the kills
		durable       bool // durable members, their data dirs wiped
	}{
		{"the leader survives", true, false},
		{"a follower survives", false, false},
		{"durable, wiped: the leader survives", true, true},
		{"durable, wiped: a follower survives", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []servertest.Option
			if tc.durable {
				opts = append(opts, servertest.WithDurable())
			}
			c := servertest.NewCluster(t, 3, opts...)
			l := c.Leader()
			survivor := (l + 1) % 3
			if tc.survivorLeads {
				survivor = l
			}
			cl := mustConnect(t, c.Addr(survivor))
			for i := range 20 { // a leader change under load costs a connection: retried
				mustCreateRetried(t, cl, fmt.Sprintf("/acked-%d", i), []byte("x"))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := c.WaitForLeader(ctx)
			require.NoError(t, err)
			zxid := c.Server(l).FSM().LastZxid()
			waitApplied(t, c, survivor, zxid)
			var killed []int
			for i := range 3 {
				if i != survivor {
					c.Kill(i)
					c.Wipe(i)
					killed = append(killed, i)
				}
			}
			for _, i := range killed {
				c.Restart(i)
			}
			leader, err := c.WaitForLeader(ctx)
			require.NoError(t, err)
			assert.Equal(t, survivor, leader, "the member that kept the writes leads")
			requireAcked(t, c.Addr(killed[0]), 20)
		})
	}
}

// requireAcked checks, through the member at addr after a sync, that
// /acked-0 to /acked-(n-1) are there.
func requireAcked(t *testing.T, addr string, n int) {
	t.Helper()
	check := mustConnect(t, addr)
	_, err := check.Sync("/")
	require.NoError(t, err)
	for i := range n {
		ok, _, err := check.Exists(fmt.Sprintf("/acked-%d", i))
		require.NoError(t, err)
		assert.True(t, ok, "acknowledged write /acked-%d survives", i)
	}
}

// waitApplied waits until member i has applied zxid.
func waitApplied(t *testing.T, c *servertest.Cluster, i int, zxid int64) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Server(i).FSM().LastZxid() >= zxid }, 10*time.Second, time.Millisecond)
}

// refusalHandler passes on the candidate of every vote a member refuses
// for a short log, and drops every other record.
type refusalHandler struct {
	refusals chan<- string
	attrs    []slog.Attr
}

func (h *refusalHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *refusalHandler) Handle(_ context.Context, r slog.Record) error {
	if len(r.Message) < 10 || r.Message[:10] != "refusing a" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "candidate" {
			select {
			case h.refusals <- a.Value.String():
			default:
			}
			return false
		}
		return true
	})
	return nil
}

func (h *refusalHandler) WithAttrs(attrs []slog.Attr) slog.Handler { return h }
func (h *refusalHandler) WithGroup(string) slog.Handler            { return h }
