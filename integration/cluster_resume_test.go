package integration

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterSessionResume drops a client's connection to one member; the
// client, which knows the others, resumes its session on another member,
// with its ephemeral, and its watches: go-zookeeper sends them again with
// setWatches, and the new member delivers what changed while the client was
// away, or arms them again for what changes later.
func TestClusterSessionResume(t *testing.T) {
	tests := []struct {
		name string
		// away: the client cannot reach any member until the changes
		// are made (its links go through proxies that turn it away).
		away bool
	}{
		{name: "change once moved"},
		{name: "change while away", away: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := servertest.NewCluster(t, 3)
			a := (c.Leader() + 1) % 3 // a follower
			hosts := addrsFrom(c, 3, a)
			var pxs []*proxy
			if tc.away {
				hosts = hosts[:2]
				for i, h := range hosts {
					pxs = append(pxs, newProxy(t, h))
					hosts[i] = pxs[i].addr()
				}
			}
			setup := mustConnect(t, c.Addr(c.Leader()))
			mustCreate(t, setup, "/r", nil)
			mustCreate(t, setup, "/r/data", []byte("v0"))

			cl, rec := mustConnectInOrder(t, hosts, 5*time.Second)
			require.Equal(t, hosts[0], cl.Server())
			id := cl.SessionID()
			_, err := cl.Create("/r/mine", nil, zk.FlagEphemeral, openACL)
			require.NoError(t, err)
			_, _, dataCh, err := cl.GetW("/r/data")
			require.NoError(t, err)
			kids, _, kidsCh, err := cl.ChildrenW("/r")
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{"data", "mine"}, kids)
			ok, _, existCh, err := cl.ExistsW("/r/later")
			require.NoError(t, err)
			require.False(t, ok)

			change := func() {
				_, err := setup.Set("/r/data", []byte("v1"), -1)
				require.NoError(t, err)
				mustCreate(t, setup, "/r/later", nil)
			}
			// Every member has applied what the client saw, so that the
			// next one takes it at once (a member refuses a client that
			// has seen a later zxid than its own).
			for i := range 3 {
				waitCaughtUp(t, c, i)
			}
			for _, px := range pxs {
				px.refuse(true)
			}
			c.DropClientConnections(a)
			rec.waitState(t, zk.StateDisconnected)
			if tc.away {
				change()
				pxs[1].refuse(false) // let it in on the second member
			}
			rec.waitState(t, zk.StateHasSession)
			assert.Equal(t, id, cl.SessionID(), "same session")
			assert.NotEqual(t, hosts[0], cl.Server(), "on another member")
			assert.Equal(t, 1, countStates(rec, zk.StateHasSession)-1, "resumed once, never expired")
			assert.Zero(t, countStates(rec, zk.StateExpired))
			if !tc.away {
				// The change reaches the new member after the client's
				// setWatches, which re-arms the watches there, or before
				// it, and setWatches reports it: either way, once.
				change()
			}

			assert.Equal(t, nodeEvent(zk.EventNodeDataChanged, "/r/data"), waitEvent(t, dataCh))
			assert.Equal(t, nodeEvent(zk.EventNodeChildrenChanged, "/r"), waitEvent(t, kidsCh))
			assert.Equal(t, nodeEvent(zk.EventNodeCreated, "/r/later"), waitEvent(t, existCh))
			// Each came once: a later event proves nothing else was on its way.
			_, _, markCh, err := cl.ExistsW("/r/mark")
			require.NoError(t, err)
			mustCreate(t, setup, "/r/mark", nil)
			assert.Equal(t, nodeEvent(zk.EventNodeCreated, "/r/mark"), waitEvent(t, markCh))
			assert.ElementsMatch(t, []zk.Event{
				nodeEvent(zk.EventNodeDataChanged, "/r/data"),
				nodeEvent(zk.EventNodeChildrenChanged, "/r"),
				nodeEvent(zk.EventNodeCreated, "/r/later"),
				nodeEvent(zk.EventNodeCreated, "/r/mark"),
			}, nodeEvents(rec))

			// The ephemeral is still the session's, on every member.
			for i := range 3 {
				r := mustConnect(t, c.Addr(i))
				assert.ElementsMatch(t, []string{"data", "mine", "later", "mark"}, mustSyncedChildren(t, r, "/r"), "member %d", i)
				assert.Equal(t, id, mustStat(t, r, "/r/mine").EphemeralOwner, "member %d", i)
			}
			data, _, err := cl.Get("/r/data")
			require.NoError(t, err)
			assert.Equal(t, "v1", string(data))
		})
	}
}
