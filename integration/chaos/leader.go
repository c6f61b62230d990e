package chaos

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// leaderWatch notes when the leader last changed.
type leaderWatch struct {
	changed atomic.Int64 // UnixNano of the last change seen
}

// watchLeader polls target's leader until ctx ends; done is closed when
// it has stopped.
func watchLeader(ctx context.Context, target Target, tmu *sync.Mutex) (l *leaderWatch, done <-chan struct{}) {
	leader := func() int {
		tmu.Lock()
		defer tmu.Unlock()
		return target.Leader()
	}
	l = &leaderWatch{}
	l.changed.Store(time.Now().UnixNano())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		last := leader()
		for sleepCtx(ctx, 100*time.Millisecond) { // polling: nothing tells of a new leader
			if now := leader(); now != last {
				last = now
				l.changed.Store(time.Now().UnixNano())
			}
		}
	}()
	return l, stopped
}

// until returns when something that should be gone within d of since (and
// of the last change of leader) is overdue.
func (l *leaderWatch) until(since time.Time, d time.Duration) time.Time {
	if l == nil {
		return since.Add(d)
	}
	changed := time.Unix(0, l.changed.Load())
	if changed.After(since) {
		since = changed
	}
	return since.Add(d)
}

// waitOverdue waits on ch until the deadline (l.until(since, d)) passes,
// checking it again when it comes, and reports whether ch fired first.
func (l *leaderWatch) waitOverdue(ch <-chan zk.Event, since time.Time, d time.Duration) bool {
	for {
		left := time.Until(l.until(since, d))
		if left <= 0 {
			return false
		}
		timer := time.NewTimer(left)
		select {
		case <-ch:
			timer.Stop()
			return true
		case <-timer.C:
		}
	}
}
