package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterPartitionedLeader cuts the leader off from the other members.
// The minority of one stops serving, as a ZooKeeper member that has lost
// its quorum: its clients are disconnected, and neither reads nor writes
// nor new sessions are served there. A client that knows every member
// moves to the majority with its session, the majority elects a leader and
// takes writes, and once the partition heals the old leader follows and
// has the majority's writes.
func TestClusterPartitionedLeader(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	old := c.Leader()
	majority := []int{(old + 1) % 3, (old + 2) % 3}
	setup := mustConnect(t, c.Addr(majority[0]))
	mustCreate(t, setup, "/part", nil)

	// pinned knows only the old leader. It cannot ping anyone during the
	// partition, so its session is long enough to outlive it.
	pinned, pinnedRec := mustConnectInOrder(t, []string{c.Addr(old)}, 20*time.Second)
	_, err := pinned.Create("/part/pinned", []byte("pinned"), zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	// mover knows every member and starts on the old leader.
	mover, moverRec := mustConnectInOrder(t, addrsFrom(c, 3, old), 5*time.Second)
	require.Equal(t, c.Addr(old), mover.Server())
	_, err = mover.Create("/part/mover", []byte("mover"), zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	pinnedID, moverID := pinned.SessionID(), mover.SessionID()
	// The followers have applied what the clients saw, so that they take
	// the clients at once (a member refuses a client that has seen a later
	// zxid than its own).
	for _, i := range majority {
		waitCaughtUp(t, c, i)
	}

	c.Partition([]int{old}, majority)

	// The majority elects a leader; the old one stops serving.
	waitCondition(t, "a leader in the majority", func() error {
		for _, i := range majority {
			if c.Server(i).Leader() {
				return nil
			}
		}
		return errors.New("none of the majority leads")
	})
	waitCondition(t, "the old leader stops serving", func() error {
		if c.Server(old).Serving() {
			return fmt.Errorf("member %d still serves, as %s", old, c.Server(old).Mode())
		}
		return nil
	})
	assert.False(t, c.Server(old).Leader(), "the minority does not lead")

	// Both clients lost their connection to the old leader; mover resumes
	// its session on the majority.
	pinnedRec.waitState(t, zk.StateDisconnected)
	moverRec.waitState(t, zk.StateDisconnected)
	moverRec.waitState(t, zk.StateHasSession)
	assert.Equal(t, moverID, mover.SessionID(), "mover keeps its session")
	assert.NotEqual(t, c.Addr(old), mover.Server(), "mover is on the majority")
	mustCreateRetried(t, mover, "/part/from-mover", []byte("m"))

	// The majority takes writes, through its leader and its follower.
	for _, i := range majority {
		w := mustConnect(t, c.Addr(i))
		for k := range 5 {
			p := fmt.Sprintf("/part/maj-%d-%d", i, k)
			mustCreateRetried(t, w, p, []byte(p))
		}
	}

	// pinned can neither write nor read on the minority: its requests wait
	// for a connection that the old leader refuses, and fail.
	type outcome struct {
		op  string
		err error
	}
	outcomes := make(chan outcome, 2)
	go func() {
		_, err := pinned.Create("/part/from-pinned", nil, 0, openACL)
		outcomes <- outcome{"create", err}
	}()
	go func() {
		_, _, err := pinned.Get("/part/mover")
		outcomes <- outcome{"get", err}
	}()
	// Meanwhile a new client is turned away: the old leader closes the
	// connection without answering the connect request.
	raw := dialRaw(t, c.Addr(old))
	raw.sendFrame(connectRequest().Append)
	raw.expectClosed()
	for range 2 {
		select {
		case o := <-outcomes:
			assert.True(t, lostConnection(o.err), "pinned's %s on the minority: %v, want a lost connection", o.op, o.err)
		case <-time.After(waitTimeout):
			t.Fatal("pinned's requests neither failed nor succeeded")
		}
	}
	assert.Equal(t, 1, countStates(pinnedRec, zk.StateHasSession), "pinned never got back in")

	c.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	now, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, old, now, "the old leader, behind the majority, cannot lead")
	assert.Equal(t, "follower", c.Server(old).Mode())
	waitCaughtUp(t, c, old)

	// pinned gets back in on the old leader with its session, and sees the
	// majority's writes there.
	pinnedRec.waitState(t, zk.StateHasSession)
	assert.Equal(t, pinnedID, pinned.SessionID(), "pinned keeps its session")
	assert.Equal(t, c.Addr(old), pinned.Server())
	kids := mustSyncedChildren(t, pinned, "/part")
	want := []string{"pinned", "mover", "from-mover"}
	for _, i := range majority {
		for k := range 5 {
			want = append(want, fmt.Sprintf("maj-%d-%d", i, k))
		}
	}
	assert.ElementsMatch(t, want, kids, "the old leader has the majority's writes, and nothing else")
	for _, k := range kids {
		p := "/part/" + k
		data, st, err := pinned.Get(p)
		require.NoError(t, err)
		switch k {
		case "pinned":
			assert.Equal(t, pinnedID, st.EphemeralOwner)
		case "mover":
			assert.Equal(t, moverID, st.EphemeralOwner)
		case "from-mover":
			assert.Equal(t, "m", string(data))
		default:
			assert.Equal(t, p, string(data))
		}
	}
}
