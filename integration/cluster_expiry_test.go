package integration

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterSessionExpiry has a session on a follower, behind a proxy,
// own ephemerals that sessions on every member watch. When the session
// expires (its client vanishes and its timeout runs out, or the test
// expires it), the leader closes it once for the whole cluster: one
// transaction deletes its ephemerals, every watcher on every member gets
// each event once, and the session cannot be resumed.
func TestClusterSessionExpiry(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		// expire makes the session expire; it returns when the test
		// gave the last push.
		expire func(t *testing.T, c *servertest.Cluster, px *proxy, id int64)
		// within bounds the time from that push to the deletion.
		min, within time.Duration
	}{{
		name:    "client vanishes",
		timeout: 400 * time.Millisecond, // servertest: 100ms tick, 200ms minimum
		expire: func(t *testing.T, _ *servertest.Cluster, px *proxy, _ int64) {
			px.refuse(true)
			px.sever()
		},
		// At least the timeout after the last ping, which came at most
		// a third of it before the cut; the leader hears of pings a tick
		// late at most, and rounds deadlines up to the next tick.
		min: 400*time.Millisecond*2/3 - 100*time.Millisecond, within: 3 * time.Second,
	}, {
		name:    "ExpireSession",
		timeout: 20 * time.Second,
		expire: func(t *testing.T, c *servertest.Cluster, _ *proxy, id int64) {
			require.True(t, c.ExpireSession(id))
		},
		within: 2 * time.Second, // not the session's timeout
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := servertest.NewCluster(t, 3)
			follower := (c.Leader() + 1) % 3
			px := newProxy(t, c.Addr(follower))
			owner, ownerRec := mustConnectInOrder(t, []string{px.addr()}, tc.timeout)
			id := owner.SessionID()
			setup := mustConnect(t, c.Addr(c.Leader()))
			mustCreate(t, setup, "/exp", nil)
			mustCreate(t, setup, "/exp2", nil)
			for _, p := range []string{"/exp/e", "/exp2/e"} {
				_, err := owner.Create(p, []byte(p), zk.FlagEphemeral, openACL)
				require.NoError(t, err)
			}
			seq, err := owner.Create("/exp/s-", nil, zk.FlagEphemeralSequential, openACL)
			require.NoError(t, err)
			cv := mustStat(t, owner, "/exp").Cversion

			watchers, recs := mustConnectEach(t, c, 3, 5*time.Second)
			type watches struct{ data, exist, kids, exist2 <-chan zk.Event }
			ws := make([]watches, 3)
			for i, w := range watchers {
				_, err := w.Sync("/exp")
				require.NoError(t, err)
				_, _, ws[i].data, err = w.GetW("/exp/e")
				require.NoError(t, err, "member %d", i)
				_, _, ws[i].exist, err = w.ExistsW("/exp/e")
				require.NoError(t, err)
				kids, _, ch, err := w.ChildrenW("/exp")
				require.NoError(t, err)
				assert.ElementsMatch(t, []string{"e", seq[len("/exp/"):]}, kids, "member %d", i)
				ws[i].kids = ch
				_, _, ws[i].exist2, err = w.ExistsW("/exp2/e")
				require.NoError(t, err)
			}

			pushed := time.Now()
			tc.expire(t, c, px, id)
			for i := range watchers {
				for _, wc := range []struct {
					ch   <-chan zk.Event
					want zk.Event
				}{
					{ws[i].data, nodeEvent(zk.EventNodeDeleted, "/exp/e")},
					{ws[i].exist, nodeEvent(zk.EventNodeDeleted, "/exp/e")},
					{ws[i].kids, nodeEvent(zk.EventNodeChildrenChanged, "/exp")},
					{ws[i].exist2, nodeEvent(zk.EventNodeDeleted, "/exp2/e")},
				} {
					assert.Equal(t, wc.want, waitEvent(t, wc.ch), "member %d", i)
				}
			}
			took := time.Since(pushed)
			t.Logf("ephemerals deleted %v after the %s", took.Round(time.Millisecond), tc.name)
			assert.GreaterOrEqual(t, took, tc.min, "not before the session's timeout")
			assert.Less(t, took, tc.within)

			// One transaction deleted every ephemeral, the same on every member.
			var pzxid int64
			for i, w := range watchers {
				kids := mustSyncedChildren(t, w, "/exp")
				assert.Empty(t, kids, "member %d", i)
				st, st2 := mustStat(t, w, "/exp"), mustStat(t, w, "/exp2")
				assert.Equal(t, cv+2, st.Cversion, "member %d: two deletes under /exp", i)
				assert.Equal(t, st.Pzxid, st2.Pzxid, "member %d: one transaction deleted all", i)
				if i == 0 {
					pzxid = st.Pzxid
				}
				assert.Equal(t, pzxid, st.Pzxid, "member %d", i)
			}

			// Each watcher got each event once: a later event proves that
			// nothing else was on its way (events come in zxid order).
			marks := make([]<-chan zk.Event, 3)
			for i, w := range watchers {
				_, _, marks[i], err = w.ExistsW("/exp/mark")
				require.NoError(t, err)
			}
			mustCreate(t, setup, "/exp/mark", nil)
			for i := range watchers {
				assert.Equal(t, nodeEvent(zk.EventNodeCreated, "/exp/mark"), waitEvent(t, marks[i]))
				assert.ElementsMatch(t, []zk.Event{
					nodeEvent(zk.EventNodeDeleted, "/exp/e"),
					nodeEvent(zk.EventNodeChildrenChanged, "/exp"),
					nodeEvent(zk.EventNodeDeleted, "/exp2/e"),
					nodeEvent(zk.EventNodeCreated, "/exp/mark"),
				}, nodeEvents(recs[i]), "member %d: every notification once", i)
			}

			// The owner learns that its session expired when it gets
			// through again, and goes on with a new one.
			px.refuse(false)
			ownerRec.waitState(t, zk.StateExpired)
			ownerRec.waitState(t, zk.StateHasSession)
			assert.NotEqual(t, id, owner.SessionID())
			assert.Equal(t, 1, countStates(ownerRec, zk.StateExpired))
			assert.False(t, c.ExpireSession(id), "the session is gone cluster-wide")
			_, err = owner.Create("/exp/after", nil, zk.FlagEphemeral, openACL)
			require.NoError(t, err, "the new session works")
			_, err = setup.Sync("/exp/after")
			require.NoError(t, err)
			assert.Equal(t, owner.SessionID(), mustStat(t, setup, "/exp/after").EphemeralOwner)
		})
	}
}
