package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The ephemeral workload: owners open a session, create an ephemeral
// znode, check now and then through that session that it is still there,
// and close the session. An ephemeral must disappear when and only when
// its session closes or expires: it must be there for as long as its
// session lives (a sync through the session after the node was found
// missing proves the session lived on), and gone within a session timeout
// of the close (the close itself may be lost with its connection, leaving
// the session to expire).

// ownerTimeout is the owners' session timeout: short, so that a session
// whose close was lost expires soon.
const ownerTimeout = 4 * time.Second

// goneWithin bounds how long a closed session's ephemerals may stay after
// the close or the last change of leader, whichever is later: a close lost
// with its connection leaves the session to expire, a session timeout after
// the leader last heard of it, and a new leader starts every session's
// timeout again, as ZooKeeper's does (on an overloaded machine leaders may
// change for as long as the load lasts).
const goneWithin = 30 * time.Second

// ephemeralWork is the shared record of the ephemeral workload.
type ephemeralWork struct {
	dir   string
	addrs []string
	check *zk.Conn // a session of the harness's own, to see owners' nodes go
	lead  *leaderWatch

	mu       sync.Mutex
	sessions int // owner sessions that created their node
	checks   int // times an owner found its node there
	problems []string
}

func (e *ephemeralWork) problem(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problems = append(e.problems, fmt.Sprintf("ephemeral: "+format, args...))
}

// run is owner id's loop, a new session each round, until ctx ends.
func (e *ephemeralWork) run(ctx context.Context, id int, rng *rand.Rand) {
	node := fmt.Sprintf("%s/owner-%d", e.dir, id)
	for ctx.Err() == nil {
		e.round(ctx, node, rng)
	}
}

// round is one owner session: create, check, close, see the node go.
func (e *ephemeralWork) round(ctx context.Context, node string, rng *rand.Rand) {
	var expired atomic.Bool
	conn, events, err := zk.Connect(e.addrs, ownerTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		sleepCtx(ctx, 100*time.Millisecond)
		return
	}
	go func() {
		for ev := range events {
			if ev.State == zk.StateExpired {
				expired.Store(true)
			}
		}
	}()
	defer conn.Close() // again after the close below: a no-op
	// The previous round's node may still be there if that close was lost.
	if left, err := e.gone(node, goneWithin); err != nil || left {
		if left {
			e.problem("%s still there %v after its session was closed", node, goneWithin)
		}
		sleepCtx(ctx, 100*time.Millisecond)
		return
	}
	if _, err := conn.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		return // with the outcome unknown, the next round sees the node go
	}
	session := conn.SessionID()
	e.mu.Lock()
	e.sessions++
	e.mu.Unlock()
	for range 1 + rng.IntN(20) {
		if !sleepCtx(ctx, time.Duration(5+rng.IntN(50))*time.Millisecond) {
			break
		}
		ok, st, err := conn.Exists(node)
		switch {
		case err != nil:
			continue // connection trouble; the session may live on
		case ok && st.EphemeralOwner != session:
			e.problem("%s is owned by session %#x while its creator %#x lives", node, st.EphemeralOwner, session)
			return
		case ok:
			e.mu.Lock()
			e.checks++
			e.mu.Unlock()
			continue
		}
		// Missing: allowed only if the session has ended. A sync answered
		// on the same session afterwards says it had not.
		if _, err := conn.Sync(node); err == nil && !expired.Load() && conn.SessionID() == session {
			e.problem("%s vanished while its session %#x lived", node, session)
		}
		return
	}
	conn.Close()
	if left, err := e.gone(node, goneWithin); err == nil && left {
		e.problem("%s of closed session %#x still there %v after the close", node, session, goneWithin)
	}
}

// gone waits up to within for node to be gone, seen through the harness's
// session, and reports whether it is still there. A deletion whose watch
// event never came is a problem of its own.
func (e *ephemeralWork) gone(node string, within time.Duration) (bool, error) {
	start := time.Now()
	for {
		if _, err := e.check.Sync(node); err != nil {
			return false, err
		}
		ok, st, ch, err := e.check.ExistsW(node)
		if err != nil || !ok {
			return false, err
		}
		if !e.lead.waitOverdue(ch, start, within) {
			if _, err := e.check.Sync(node); err != nil {
				return false, err
			}
			again, st2, err := e.check.Exists(node)
			switch {
			case err != nil:
				return false, err
			case !again || st2.EphemeralOwner != st.EphemeralOwner:
				e.problem("%s of session %#x went, but the watch on it never fired", node, st.EphemeralOwner)
				return false, nil
			}
			return true, nil
		}
	}
}
