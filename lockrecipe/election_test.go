package lockrecipe_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestElection_CampaignResignObserve runs three candidates: the first to
// campaign leads, an observer sees each change of leader, resigning or
// losing the session passes leadership on in campaign order.
func TestElection_CampaignResignObserve(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	watcher := lockrecipe.NewElection(newSession(t, addr).Conn, path)
	_, err := watcher.Leader()
	assert.ErrorIs(t, err, lockrecipe.ErrNoLeader)
	observeCtx, stop := context.WithCancel(ctx)
	leaders := watcher.Observe(observeCtx)

	sessions := []*session{newSession(t, addr), newSession(t, addr), newSession(t, addr)}
	t.Cleanup(func() { // before the sessions close: their nodes and watches are still there
		if t.Failed() {
			t.Log(srv.Inspect().Dump())
		}
	})
	var candidates []*lockrecipe.Election
	elected := make(chan string, 3)
	for i, id := range []string{"a", "b", "c"} {
		e := lockrecipe.NewElection(sessions[i].Conn, path)
		candidates = append(candidates, e)
		go func() {
			if assert.NoError(t, e.Campaign(ctx, id)) {
				elected <- id
			}
		}()
		if i == 0 {
			assert.Equal(t, "a", wait(t, elected, "the first candidate is elected"))
		}
		waitChildren(t, sessions[0].Conn, path, i+1)
	}
	assert.Equal(t, "a", wait(t, leaders, "observed leader"))
	leader, err := watcher.Leader()
	require.NoError(t, err)
	assert.Equal(t, "a", leader)

	require.NoError(t, candidates[0].Resign())
	assert.Equal(t, "b", wait(t, elected, "the next candidate is elected"))
	assert.Equal(t, "b", wait(t, leaders, "observed leader"))

	require.True(t, srv.ExpireSession(sessions[1].SessionID()))
	wait(t, candidates[1].Lost(), "leadership lost with the session")
	assert.Equal(t, "c", wait(t, elected, "the last candidate is elected"))
	assert.Equal(t, "c", wait(t, leaders, "observed leader"))
	assert.ErrorIs(t, candidates[1].Resign(), lockrecipe.ErrLost)
	assert.ErrorIs(t, candidates[0].Resign(), lockrecipe.ErrNotLocked)

	stop()
	for range leaders { // closed once the context ends
	}
}

// TestElection_CampaignCancelled withdraws a candidacy when its context
// ends.
func TestElection_CampaignCancelled(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	leader := lockrecipe.NewElection(newSession(t, addr).Conn, path)
	require.NoError(t, leader.Campaign(ctx, "leader"))
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	other := lockrecipe.NewElection(newSession(t, addr).Conn, path)
	assert.ErrorIs(t, other.Campaign(short, "other"), context.DeadlineExceeded)
	assert.Len(t, children(t, newSession(t, addr).Conn, path), 1)
	require.NoError(t, leader.Resign())
}
