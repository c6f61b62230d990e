package integration

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterWriteTheLogKeptIsNotFailed kills the leader, round after
// round, while a client of a follower creates nodes one after another: a
// create the follower had sent to the leader may have been kept by the
// next leader, and then it must be answered as done, not failed with a
// lost connection. A create that fails is checked afterwards: it must not
// exist. Each create is answered at most once (NODEEXISTS would show a
// create applied twice).
func TestClusterWriteTheLogKeptIsNotFailed(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	setup := mustConnect(t, c.Addr(0))
	mustCreateRetried(t, setup, "/kept", nil)

	var failed, done []string
	for round := range 4 {
		leader := c.Leader()
		require.GreaterOrEqual(t, leader, 0, "a leader")
		follower := (leader + 1) % 3
		conn := mustConnect(t, c.Addr(follower))

		var mu sync.Mutex
		stop := make(chan struct{})
		writerDone := make(chan struct{})
		created := 0
		go func() {
			defer close(writerDone)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := fmt.Sprintf("/kept/r%d-%06d", round, i)
				_, err := conn.Create(path, []byte(strconv.Itoa(i)), 0, openACL)
				mu.Lock()
				switch {
				case err == nil:
					done = append(done, path)
					created++
				case lostConnection(err):
					failed = append(failed, path)
				default:
					t.Errorf("create %s: %v", path, err)
				}
				mu.Unlock()
			}
		}()
		writes := func() int {
			mu.Lock()
			defer mu.Unlock()
			return created
		}
		waitCondition(t, "writes before the kill", func() error {
			if n := writes(); n < 50 {
				return fmt.Errorf("%d writes", n)
			}
			return nil
		})
		mustKill(t, c, leader)
		before := writes()
		waitCondition(t, "writes after the kill", func() error {
			if n := writes(); n < before+50 {
				return fmt.Errorf("%d writes since the kill", n-before)
			}
			return nil
		})
		close(stop)
		<-writerDone
		conn.Close()
		c.Restart(leader)
		waitCaughtUp(t, c, leader)
	}

	check := mustConnect(t, c.Addr(c.Leader()))
	kids := mustSyncedChildren(t, check, "/kept")
	have := make(map[string]bool, len(kids))
	for _, k := range kids {
		have["/kept/"+k] = true
	}
	for _, p := range done {
		assert.True(t, have[p], "an acknowledged create is missing: %s", p)
	}
	var kept []string
	for _, p := range failed {
		if have[p] {
			kept = append(kept, p)
		}
	}
	assert.Empty(t, kept, "creates failed with a lost connection although the log kept them")
	t.Logf("%d creates acknowledged, %d failed, %d of those kept, over 4 leader kills", len(done), len(failed), len(kept))
}
