package lockrecipe_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/server/servertest/history"
)

// A Mutex takes any client with go-zookeeper's methods: history's
// recording one records what the recipe does, and its history checks.
func TestMutex_OnARecordingClient(t *testing.T) {
	srv := servertest.NewServer(t)
	rec := history.New()
	ctx := testContext(t)
	path := uniquePath(t)
	var mutexes []*lockrecipe.Mutex
	for range 3 {
		conn, _, err := rec.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
		require.NoError(t, err)
		t.Cleanup(conn.Close)
		mutexes = append(mutexes, lockrecipe.NewMutex(conn, path))
	}
	for range 3 {
		for _, m := range mutexes {
			require.NoError(t, m.Lock(ctx))
			require.NoError(t, m.Unlock())
		}
	}
	rep := rec.Verify(t)
	assert.True(t, rep.OK())
	assert.GreaterOrEqual(t, rep.Ops, 9*3, "each Lock and Unlock recorded: a create, a children list, a delete at least")
}

func TestMutex_MutualExclusion(t *testing.T) {
	srv := servertest.NewServer(t)
	checkMutualExclusion(t, srv.ConnectString(), 20, 50)
}

// checkMutualExclusion runs sessions clients, each with its own session and
// Mutex on one path, each taking the lock rounds times. Inside, each bumps
// a counter that nothing but the lock protects (read, yield, write), and
// counts the holders: any overlap shows as a holder count above one, as
// lost increments, or as a data race under -race.
func checkMutualExclusion(t *testing.T, addr string, sessions, rounds int) {
	path := uniquePath(t)
	ctx := testContext(t)
	var (
		counter    int // protected by the distributed lock only
		holders    atomic.Int32
		overlapped atomic.Int32
		wg         sync.WaitGroup
	)
	errs := make(chan error, sessions)
	for range sessions {
		m := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
		wg.Go(func() {
			for range rounds {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if holders.Add(1) != 1 {
					overlapped.Add(1)
				}
				v := counter
				runtime.Gosched()
				counter = v + 1
				holders.Add(-1)
				if err := m.Unlock(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, overlapped.Load(), "two holders at once")
	assert.Equal(t, sessions*rounds, counter, "every increment under the lock survived")
	assert.Empty(t, children(t, newSession(t, addr).Conn, path), "no node left behind")
}

// TestMutex_FIFO queues waiters one at a time behind a holder, and checks
// that they get the lock in the order they queued (their sequence order).
func TestMutex_FIFO(t *testing.T) {
	srv := servertest.NewServer(t)
	path, ctx := uniquePath(t), testContext(t)
	observer := newSession(t, srv.ConnectString())
	holder := lockrecipe.NewMutex(newSession(t, srv.ConnectString()).Conn, path)
	require.NoError(t, holder.Lock(ctx))

	const waiters = 8
	var mu sync.Mutex
	var order []int
	var nodes []string
	var wg sync.WaitGroup
	for i := range waiters {
		m := lockrecipe.NewMutex(newSession(t, srv.ConnectString()).Conn, path)
		wg.Go(func() {
			lease, err := m.Acquire(ctx)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order, nodes = append(order, i), append(nodes, lease.Node()[len(lease.Node())-10:])
			mu.Unlock()
			assert.NoError(t, lease.Release())
		})
		waitChildren(t, observer.Conn, path, i+2) // queued before the next one starts
	}
	require.NoError(t, holder.Unlock())
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order)
	assert.IsIncreasing(t, nodes, "sequence numbers in acquisition order")
}

// TestMutex_WaitersWithdrawInTheMiddle queues five waiters behind a holder
// and withdraws the second and third (and the first, which both of those
// stood behind): the fourth, whose predecessor went without the lock being
// released, must wait on for the holder, then get the lock before the
// fifth.
func TestMutex_WaitersWithdrawInTheMiddle(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	observer := newSession(t, addr)
	holder := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	require.NoError(t, holder.Lock(ctx))

	var held atomic.Bool // a waiter holds the lock
	held.Store(true)
	var orderMu sync.Mutex
	var order []int // waiters in the order they acquired, noted while holding the lock
	type result struct {
		i   int
		err error
	}
	got := make(chan result, 5)
	cancels := make([]context.CancelFunc, 5)
	for i := range 5 {
		wctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		m := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
		go func() {
			err := m.Lock(wctx)
			if err == nil {
				assert.False(t, held.Swap(true), "waiter %d got the lock while it was held", i)
				orderMu.Lock()
				order = append(order, i)
				orderMu.Unlock()
				held.Store(false)
				err = m.Unlock()
			}
			got <- result{i, err}
		}()
		waitChildren(t, observer.Conn, path, i+2)
	}
	for _, i := range []int{1, 2, 0} {
		cancels[i]()
		r := wait(t, got, "a withdrawn waiter returns")
		assert.ErrorIs(t, r.err, context.Canceled, "waiter %d", r.i)
	}
	waitChildren(t, observer.Conn, path, 3) // the holder, waiters 3 and 4
	held.Store(false)
	require.NoError(t, holder.Unlock())
	for range 2 {
		r := wait(t, got, "a waiter gets the lock")
		assert.NoError(t, r.err, "waiter %d", r.i)
	}
	// The results may arrive in either order (each is sent after its
	// waiter's Unlock); the acquisitions were noted while holding the lock.
	orderMu.Lock()
	assert.Equal(t, []int{3, 4}, order, "order of acquisition")
	orderMu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// TestMutex_OneNotificationPerRelease queues ten waiters behind a holder,
// each with its own session, and counts the watch notifications every
// session receives. Each release must notify exactly one other session
// (the next waiter; none after the last release), whatever the number of
// waiters, besides the releaser's own guard; nothing else is notified.
func TestMutex_OneNotificationPerRelease(t *testing.T) {
	checkOneNotificationPerRelease(t, servertest.NewServer(t).ConnectString())
}

func checkOneNotificationPerRelease(t *testing.T, addr string) {
	path, ctx := uniquePath(t), testContext(t)
	observer := newSession(t, addr)
	const waiters = 10
	sessions := []*session{newSession(t, addr)}
	holder, err := lockrecipe.NewMutex(sessions[0].Conn, path).Acquire(ctx)
	require.NoError(t, err)
	nodes := make([]string, waiters+1) // the node of each session
	nodes[0] = holder.Node()
	var wg sync.WaitGroup
	for i := 1; i <= waiters; i++ {
		sessions = append(sessions, newSession(t, addr))
		m := lockrecipe.NewMutex(sessions[i].Conn, path)
		wg.Go(func() {
			lease, err := m.Acquire(ctx)
			if assert.NoError(t, err) {
				nodes[i] = lease.Node()
				assert.NoError(t, lease.Release())
			}
		})
		waitChildren(t, observer.Conn, path, i+1)
	}
	// A waiter's node is there before its watch on the node ahead: wait
	// until each node but the last is watched by its guard and by the
	// waiter behind it, or a release could pass a waiter not yet watching
	// and notify nobody.
	queue := children(t, observer.Conn, path)
	slices.SortFunc(queue, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	for _, name := range queue[:len(queue)-1] {
		waitWatchers(t, addr, path+"/"+name, 2)
	}
	require.NoError(t, holder.Release())
	wg.Wait()

	total := 0
	for i, node := range nodes {
		own, others := notified(t, sessions, i, node)
		wantOthers := 1
		if i == waiters {
			wantOthers = 0 // nobody waits behind the last one
		}
		assert.Equal(t, wantOthers, others, "sessions notified of the release of node %d, %s", i, node)
		assert.Equal(t, 1, own, "its owner's guard notified of node %d", i)
		total += own + others
	}
	got := 0
	for _, s := range sessions {
		got += len(s.notifications())
	}
	assert.Equal(t, total, got, "no notification for anything else")
}

// notified counts the deletion notifications for node that its owner
// (sessions[owner]) and the other sessions received.
func notified(t *testing.T, sessions []*session, owner int, node string) (own, others int) {
	for j, s := range sessions {
		for _, ev := range s.notifications() {
			if ev.Path != node {
				continue
			}
			assert.Equal(t, zk.EventNodeDeleted, ev.Type, "event on %s", node)
			if j == owner {
				own++
			} else {
				others++
			}
		}
	}
	return own, others
}

// TestMutex_ContextEndsWait ends a wait in each way a context can, and
// checks that the waiter's node is gone and the holder unaffected.
func TestMutex_ContextEndsWait(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	for _, tc := range []struct {
		name string
		try  func(t *testing.T, m *lockrecipe.Mutex, queued func()) error
		want error
	}{
		{"deadline", func(t *testing.T, m *lockrecipe.Mutex, _ func()) error {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			return m.Lock(ctx)
		}, context.DeadlineExceeded},
		{"cancel while queued", func(t *testing.T, m *lockrecipe.Mutex, queued func()) error {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- m.Lock(ctx) }()
			queued()
			cancel()
			return wait(t, done, "Lock returns after cancel")
		}, context.Canceled},
		{"cancelled before", func(t *testing.T, m *lockrecipe.Mutex, _ func()) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return m.Lock(ctx)
		}, context.Canceled},
		{"trylock", func(t *testing.T, m *lockrecipe.Mutex, _ func()) error {
			ok, err := m.TryLock(testContext(t))
			assert.False(t, ok, "TryLock of a held lock")
			return err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, observer := uniquePath(t), newSession(t, addr)
			holder := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
			lease, err := holder.Acquire(testContext(t))
			require.NoError(t, err)
			waiter := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
			err = tc.try(t, waiter, func() { waitChildren(t, observer.Conn, path, 2) })
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, []string{pathBase(lease.Node())}, children(t, observer.Conn, path), "only the holder's node is left")
			select {
			case <-lease.Lost():
				t.Error("the holder lost the lock")
			default:
			}
			require.NoError(t, holder.Unlock())
			ok, err := waiter.TryLock(testContext(t))
			require.NoError(t, err)
			assert.True(t, ok, "the waiter gets the free lock")
			require.NoError(t, waiter.Unlock())
		})
	}
}

// TestMutex_SharedByGoroutines shares one *Mutex among ten goroutines for
// 1000 rounds in all, while another session contends for the same path:
// it must behave like a sync.Mutex among them and never deadlock.
func TestMutex_SharedByGoroutines(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	shared := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	other := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	var counter int
	var wg sync.WaitGroup
	run := func(m *lockrecipe.Mutex, rounds int) {
		for range rounds {
			if !assert.NoError(t, m.Lock(ctx)) {
				return
			}
			v := counter
			runtime.Gosched()
			counter = v + 1
			if !assert.NoError(t, m.Unlock()) {
				return
			}
		}
	}
	for range 10 {
		wg.Go(func() { run(shared, 100) })
	}
	wg.Go(func() { run(other, 100) })
	wg.Wait()
	assert.Equal(t, 1100, counter)
	assert.ErrorIs(t, shared.Unlock(), lockrecipe.ErrNotLocked)
	assert.Empty(t, children(t, newSession(t, addr).Conn, path))
}

func TestMutex_TryLock(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	m := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	other := lockrecipe.NewMutex(newSession(t, addr).Conn, path)

	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "free lock")
	ok, err = m.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "held by this process")
	ok, err = other.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "held by another session")
	require.NoError(t, m.Unlock())
	ok, err = other.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "released")
	require.NoError(t, other.Unlock())
	assert.ErrorIs(t, other.Unlock(), lockrecipe.ErrNotLocked)
}

// TestMutex_Reentrancy nests holds on a Lease: the lock stays held until
// the last Release, and a Lock elsewhere waits meanwhile.
func TestMutex_Reentrancy(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, path, ctx := srv.ConnectString(), uniquePath(t), testContext(t)
	m := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	other := lockrecipe.NewMutex(newSession(t, addr).Conn, path)
	heldElsewhere := func() bool {
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		if ok {
			require.NoError(t, other.Unlock())
		}
		return !ok
	}

	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Acquire())
	require.NoError(t, lease.Acquire())
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, m.Lock(short), context.DeadlineExceeded, "Lock is not reentrant: it waits, like sync.Mutex")

	require.NoError(t, lease.Release())
	require.NoError(t, m.Unlock(), "Unlock releases one hold, as Release does")
	assert.True(t, heldElsewhere(), "one hold left")
	require.NoError(t, lease.Release())
	assert.False(t, heldElsewhere(), "last hold released")
	assert.ErrorIs(t, lease.Release(), lockrecipe.ErrReleased)
	assert.ErrorIs(t, lease.Acquire(), lockrecipe.ErrReleased)
	assert.ErrorIs(t, m.Unlock(), lockrecipe.ErrNotLocked)
}

func TestMutex_CreatesMissingParents(t *testing.T) {
	srv := servertest.NewServer(t)
	addr, ctx := srv.ConnectString(), testContext(t)
	path := uniquePath(t) + "/a/b/c"
	conn := newSession(t, addr).Conn
	m := lockrecipe.NewMutex(conn, path+"/") // a trailing slash is ignored
	require.NoError(t, m.Lock(ctx))
	assert.Len(t, children(t, conn, path), 1)
	require.NoError(t, m.Unlock())
	assert.Empty(t, children(t, conn, path))
}

func pathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
