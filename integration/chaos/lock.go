package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/lockrecipe"
)

// The lock workload: lockers take lockrecipe's Mutex in turn and, while
// holding it, write a fence znode with the version they read from it.
// Another write between the holder's read and its write (the write failing
// with a bad version) means two holders at once, unless the holder's lease
// was lost (its session expired) meanwhile: the check asks whether the
// holder's own lock node is still there, through its own session.

// lockWork is the shared record of the lock workload.
type lockWork struct {
	dir, fence string

	mu       sync.Mutex
	acquired int // holds taken
	fenced   int // fence writes acknowledged while holding
	lost     int // holds lost (session expired, node gone) while holding
	problems []string
}

func (l *lockWork) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf("lock: "+format, args...))
}

func (l *lockWork) count(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// run takes the lock again and again through conn until ctx ends.
func (l *lockWork) run(ctx context.Context, id int, conn *zk.Conn, rng *rand.Rand) {
	m := lockrecipe.NewMutex(conn, l.dir)
	for n := 1; ctx.Err() == nil; n++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lease, err := m.Acquire(actx)
		cancel()
		if err != nil {
			continue // timed out, lost while waiting, connection trouble: try again
		}
		l.count(func() { l.acquired++ })
		l.hold(ctx, id, n, conn, lease, time.Duration(rng.IntN(4))*time.Millisecond)
		_ = lease.Release() // an ErrLost here was counted by hold, or the session ended after the write
	}
}

// hold reads the fence, works a while, then writes the fence with the
// version it read, all while holding lease, and checks the outcome.
func (l *lockWork) hold(ctx context.Context, id, n int, conn *zk.Conn, lease *lockrecipe.Lease, work time.Duration) {
	_, st, err := conn.Get(l.fence)
	if err != nil {
		return
	}
	sleepCtx(ctx, work) // the holder's work, during which nobody else may write
	_, err = conn.Set(l.fence, fmt.Appendf(nil, "locker %d hold %d", id, n), st.Version)
	switch {
	case err == nil:
		l.count(func() { l.fenced++ })
		return
	case !errors.Is(err, zk.ErrBadVersion):
		return // the write's outcome is unknown; the next holder reads whatever it left
	}
	select {
	case <-lease.Lost():
		l.count(func() { l.lost++ })
		return
	default:
	}
	// Someone wrote the fence since this holder read it. That is only
	// allowed if this holder's node is gone (its session expired).
	ok, _, err := conn.Exists(lease.Node())
	switch {
	case err != nil:
		l.count(func() { l.lost++ }) // the session is in trouble; it cannot say
	case ok:
		data, _, _ := conn.Get(l.fence)
		l.problem("locker %d holds %s, yet the fence it read at version %d was written meanwhile (now %q)",
			id, lease.Node(), st.Version, data)
	default:
		l.count(func() { l.lost++ })
	}
}

// check runs when every locker's session is closed: within a session
// timeout (a close that did not reach the server leaves the session to
// expire) no lock node may be left, and the fence has at least as many
// versions as acknowledged writes.
func (l *lockWork) check(conn *zk.Conn, within time.Duration, lead *leaderWatch) error {
	children, err := childrenLeft(conn, l.dir, within, lead)
	if err != nil {
		return err
	}
	_, st, err := conn.Get(l.fence)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(children) > 0 {
		l.problems = append(l.problems, fmt.Sprintf("lock: %d lock nodes left %v after every locker's session closed: %v",
			len(children), within, children))
	}
	if int(st.Version) < l.fenced {
		l.problems = append(l.problems, fmt.Sprintf("lock: the fence is at version %d after %d acknowledged writes",
			st.Version, l.fenced))
	}
	return nil
}

// childrenLeft waits up to within (of now or the last change of leader)
// for dir to have no children, watching it, and returns those still there.
func childrenLeft(conn *zk.Conn, dir string, within time.Duration, lead *leaderWatch) ([]string, error) {
	start := time.Now()
	for {
		if _, err := conn.Sync(dir); err != nil {
			return nil, err
		}
		children, _, ch, err := conn.ChildrenW(dir)
		if err != nil || len(children) == 0 {
			return children, err
		}
		if !lead.waitOverdue(ch, start, within) {
			return children, nil
		}
	}
}
