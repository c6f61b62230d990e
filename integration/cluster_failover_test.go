package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterLeaderKillUnderLoad kills the leader of an in-memory cluster
// while clients write: no acknowledged write is lost, the clients keep their
// sessions and ephemerals, and the killed member, restarted empty, catches
// up.
func TestClusterLeaderKillUnderLoad(t *testing.T) {
	runLeaderKillUnderLoad(t)
}

// TestClusterDurableLeaderKillUnderLoad is the same with durable members;
// the killed one recovers from its data dir.
func TestClusterDurableLeaderKillUnderLoad(t *testing.T) {
	runLeaderKillUnderLoad(t, servertest.WithDurable())
}

// failoverQuota is how many acknowledged writes each writer makes before the
// kill, and after it, before it stops.
const failoverQuota = 10

// failoverWrite is one create of the load and how it ended.
type failoverWrite struct {
	path       string
	sent, done time.Time
	err        error
}

// failoverWriter is one client of the load: it creates /load/<name>-<i>
// with its path as data, one after another, and keeps an ephemeral
// /owners/<name> from before the kill.
type failoverWriter struct {
	name    string
	hosts   []string
	conn    *zk.Conn
	rec     *recorder
	session int64

	mu     sync.Mutex // guards writes
	writes []failoverWrite
}

func (w *failoverWriter) results() []failoverWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

// acked counts the acknowledged writes sent at or after since.
func (w *failoverWriter) acked(since time.Time) int {
	n := 0
	for _, r := range w.results() {
		if r.err == nil && !r.sent.Before(since) {
			n++
		}
	}
	return n
}

// run writes until stop is closed, or until it has failoverQuota
// acknowledged writes sent after the time in killed (unix ns, 0 before).
func (w *failoverWriter) run(stop <-chan struct{}, killed *atomic.Int64) {
	after := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		path := fmt.Sprintf("/load/%s-%d", w.name, i)
		sent := time.Now()
		_, err := w.conn.Create(path, []byte(path), 0, openACL)
		r := failoverWrite{path: path, sent: sent, done: time.Now(), err: err}
		w.mu.Lock()
		w.writes = append(w.writes, r)
		w.mu.Unlock()
		if k := killed.Load(); err == nil && k != 0 && sent.UnixNano() >= k {
			if after++; after >= failoverQuota {
				return
			}
		}
	}
}

func runLeaderKillUnderLoad(t *testing.T, opts ...servertest.Option) {
	// The scenario places its clients by who leads; on a loaded machine a
	// leader change can come before the kill, and then it starts again on
	// a new cluster.
	for attempt := 1; ; attempt++ {
		if leaderKillUnderLoad(t, opts...) || attempt == 3 {
			return
		}
		t.Logf("attempt %d: the leader changed before the kill (machine under load): again", attempt)
	}
}

// leaderKillUnderLoad runs the scenario once; it returns false, having
// checked nothing, if the leader changed before it could be killed.
func leaderKillUnderLoad(t *testing.T, opts ...servertest.Option) bool {
	c := servertest.NewCluster(t, 3, opts...)
	leader := c.Leader()
	f1, f2 := (leader+1)%3, (leader+2)%3
	setup := mustConnect(t, c.Addr(f1))
	for _, p := range []string{"/load", "/owners"} { // a leader change under load costs a connection: retried
		require.NoError(t, retryOnConnLoss(func() error {
			_, err := setup.Create(p, nil, 0, openACL)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil // a try whose connection was lost made it
			}
			return err
		}))
	}

	// Three clients know every member, each starting on a different one;
	// two know a single follower only.
	writers := []*failoverWriter{
		{name: "all-from-leader", hosts: addrsFrom(c, 3, leader)},
		{name: "all-from-f1", hosts: addrsFrom(c, 3, f1)},
		{name: "all-from-f2", hosts: addrsFrom(c, 3, f2)},
		{name: "only-f1", hosts: []string{c.Addr(f1)}},
		{name: "only-f2", hosts: []string{c.Addr(f2)}},
	}
	for _, w := range writers {
		// A session is created through the leader; if that fails (under load
		// a startup election may still be settling: the leader then closes
		// forward connections from an earlier term), the client moves on to
		// its next host. Each writer must start on its first, so try again.
		for attempt := 0; ; attempt++ {
			w.conn, w.rec = mustConnectInOrder(t, w.hosts, 8*time.Second)
			if w.conn.Server() == w.hosts[0] || attempt == 5 {
				break
			}
			w.conn.Close()
		}
		require.Equal(t, w.hosts[0], w.conn.Server(), "%s starts on its first host", w.name)
		w.session = w.conn.SessionID()
		require.NoError(t, retryOnConnLoss(func() error {
			_, err := w.conn.Create("/owners/"+w.name, []byte(w.name), zk.FlagEphemeral, openACL)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil // a try whose connection was lost made it
			}
			return err
		}))
	}

	stop := make(chan struct{})
	var killedAt atomic.Int64
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(stop, &killedAt)
		}()
	}
	stopped := false
	stopWriters := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopWriters()

	waitCondition(t, "every writer writes before the kill", func() error {
		for _, w := range writers {
			if n := w.acked(time.Time{}); n < failoverQuota {
				return fmt.Errorf("%s has %d acknowledged writes", w.name, n)
			}
		}
		return nil
	})
	if c.Leader() != leader {
		return false
	}
	kill := time.Now()
	mustKill(t, c, leader)
	// The old leader is gone: a write sent from now on succeeds only once a
	// new leader has committed it.
	killed := time.Now()
	killedAt.Store(killed.UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	newLeader, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, leader, newLeader)
	t.Logf("failover: member %d leads and every member serves %v after the kill",
		newLeader, time.Since(kill).Round(time.Millisecond))
	waitCondition(t, "every writer writes after the kill", func() error {
		for _, w := range writers {
			if n := w.acked(killed); n < failoverQuota {
				return fmt.Errorf("%s has %d acknowledged writes since the kill", w.name, n)
			}
		}
		return nil
	})
	stopWriters()
	logFailover(t, writers, kill, killed)

	acked, lost := map[string]bool{}, map[string]bool{}
	for _, w := range writers {
		for _, r := range w.results() {
			switch {
			case r.err == nil:
				acked[r.path] = true
			case lostConnection(r.err):
				lost[r.path] = true
			default:
				t.Errorf("%s: create %s: %v, want success or a lost connection", w.name, r.path, r.err)
			}
		}
		assert.Equal(t, w.session, w.conn.SessionID(), "%s keeps its session", w.name)
		assert.NotContains(t, w.rec.sessionStates(), zk.StateExpired, "%s", w.name)
	}
	assert.NotEqual(t, c.Addr(leader), writers[0].conn.Server(), "the client on the leader moved")

	var want []string
	for _, m := range []int{f1, f2} {
		want = assertLoadOn(t, c, m, writers, acked, lost)
	}

	// The killed member comes back and catches up with the others.
	c.Restart(leader)
	ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err = c.WaitForLeader(ctx)
	require.NoError(t, err)
	waitCaughtUp(t, c, leader)
	back := mustConnect(t, c.Addr(leader))
	assert.ElementsMatch(t, want, mustSyncedChildren(t, back, "/load"), "the restarted member has the load")
	for _, w := range writers {
		st := mustStat(t, back, "/owners/"+w.name)
		assert.Equal(t, w.session, st.EphemeralOwner, "%s's ephemeral on the restarted member", w.name)
	}
	return true
}

// assertLoadOn checks, through a new client on member m, that every
// acknowledged write is there with its data, that every child of /load was
// written by the load (acknowledged or lost), and that each writer's
// ephemeral is still its own. It returns /load's children.
func assertLoadOn(t *testing.T, c *servertest.Cluster, m int, writers []*failoverWriter,
	acked, lost map[string]bool) []string {
	t.Helper()
	r := mustConnect(t, c.Addr(m))
	kids := mustSyncedChildren(t, r, "/load")
	present := make(map[string]bool, len(kids))
	lostPresent := 0
	for _, k := range kids {
		p := "/load/" + k
		present[p] = true
		if lost[p] {
			lostPresent++
		}
		assert.True(t, acked[p] || lost[p], "member %d has %s, which no writer sent", m, p)
	}
	var missing []string
	for p := range acked {
		if !present[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "acknowledged writes missing on member %d", m)

	// Read back every acknowledged write, a few requests in flight at once.
	paths := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				data, _, err := r.Get(p)
				if err != nil || string(data) != p {
					t.Errorf("member %d: get %s: %q, %v", m, p, data, err)
				}
			}
		}()
	}
	for p := range acked {
		if present[p] {
			paths <- p
		}
	}
	close(paths)
	wg.Wait()

	for _, w := range writers {
		st := mustStat(t, r, "/owners/"+w.name)
		assert.Equal(t, w.session, st.EphemeralOwner, "%s's ephemeral on member %d", w.name, m)
	}
	t.Logf("member %d: %d acknowledged writes checked; %d of the %d lost ones are there",
		m, len(acked), lostPresent, len(lost))
	return kids
}

// logFailover logs the time from the kill to the first acknowledged write
// sent after the old leader was gone, overall and for the slowest writer.
func logFailover(t *testing.T, writers []*failoverWriter, kill, killed time.Time) {
	t.Helper()
	var first, slowest time.Duration
	for i, w := range writers {
		var mine time.Duration = -1
		for _, r := range w.results() {
			if r.err == nil && !r.sent.Before(killed) && (mine < 0 || r.done.Sub(kill) < mine) {
				mine = r.done.Sub(kill)
			}
		}
		require.GreaterOrEqual(t, mine, time.Duration(0), "%s wrote after the kill", w.name)
		if i == 0 || mine < first {
			first = mine
		}
		slowest = max(slowest, mine)
		t.Logf("failover: %s wrote again %v after the kill", w.name, mine.Round(time.Millisecond))
	}
	t.Logf("failover: Kill took %v; first acknowledged write sent after it: %v after the kill; every writer within %v",
		killed.Sub(kill).Round(time.Millisecond), first.Round(time.Millisecond), slowest.Round(time.Millisecond))
}
