package lockrecipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// An Election elects one leader among the candidates that campaign on the
// same ZooKeeper path, with the nodes of Curator's LeaderLatch: each
// candidate creates _c_<uuid>-latch-<sequence> holding its id, the lowest
// sequence leads, and every other candidate watches only the node just
// before its own. It is a Mutex underneath: Campaign is Lock, Resign is
// Unlock, and leadership is lost as a lock is (Lost).
//
// An Election is safe for concurrent use; a second Campaign through the
// same Election waits until the first one's Resign.
type Election struct {
	m *Mutex
}

// NewElection returns an Election on path. Nothing is sent to the server
// until Campaign, Leader or Observe.
func NewElection(conn Conn, path string, opts ...Option) *Election {
	return &Election{m: &Mutex{q: newQueue(conn, path, latchKey, opts), name: latchName, gate: make(chan struct{}, 1)}}
}

// Campaign enters the election as id and waits until elected, or until ctx
// ends: then the candidacy is withdrawn and ctx's error returned.
func (e *Election) Campaign(ctx context.Context, id string) error {
	_, err := e.m.acquire(ctx, []byte(id))
	return err
}

// Resign gives up leadership (ErrNotLocked if not leading), so that the
// next candidate leads.
func (e *Election) Resign() error { return e.m.Unlock() }

// Lost returns a channel closed when leadership won by Campaign is lost
// (see Lease.Lost); a closed channel when not leading.
func (e *Election) Lost() <-chan struct{} { return e.m.Lost() }

// Leader returns the id of the current leader (the candidate with the
// lowest sequence, as LeaderLatch.getLeader reads it), or ErrNoLeader.
func (e *Election) Leader() (string, error) {
	for {
		id, _, err := e.leader(false)
		if !errors.Is(err, errBusy) {
			return id, err
		}
	}
}

// Observe returns a channel that receives the id of the leader now, if
// there is one, and then of each new leader, until ctx ends; then it is
// closed. It watches only the leader's node (and the path while nobody
// campaigns), so observers are not woken by other candidates. A leader
// that comes and goes while the receiver is not reading may be skipped.
func (e *Election) Observe(ctx context.Context) <-chan string {
	out := make(chan string)
	go e.observe(ctx, out)
	return out
}

func (e *Election) observe(ctx context.Context, out chan<- string) {
	defer close(out)
	last, sent := "", false
	closing := closeDetector{conn: e.m.q.conn}
	for attempt := 0; ctx.Err() == nil; attempt++ {
		id, watch, err := e.leader(true)
		clientClosed := closing.closed(err) // counts each failure once, and resets on anything else
		switch {
		case errors.Is(err, errBusy): // changed meanwhile: look again
			continue
		case errors.Is(err, ErrNoLeader):
		case clientClosed, errors.Is(err, zk.ErrClosing):
			return
		case err != nil:
			if backoff(ctx, noDeadline(), attempt, nil, err) != nil {
				return
			}
			continue
		case !sent || id != last:
			select {
			case out <- id:
				last, sent = id, true
			case <-ctx.Done():
				return
			}
		}
		attempt = -1
		select {
		case <-watch:
		case <-ctx.Done():
			return
		}
	}
}

// leader reads the leader's id, and with watch set, a watch that fires
// when it may have changed: on the leader's node, or while there is no
// leader, on the path's children (or its creation). errBusy means that
// the state changed under the reading: read again.
func (e *Election) leader(watch bool) (string, <-chan zk.Event, error) {
	q := &e.m.q
	children, _, err := q.conn.Children(q.dir)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(children) == 0) {
		return "", e.noLeaderWatch(watch), ErrNoLeader
	}
	if err != nil {
		return "", nil, fmt.Errorf("leader of %s: %w", q.dir, err)
	}
	o := newOrder(children, q.key)
	first := childPath(q.dir, o.names[o.first()])
	var data []byte
	var ch <-chan zk.Event
	if watch {
		data, _, ch, err = q.conn.GetW(first)
	} else {
		data, _, err = q.conn.Get(first)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil, errBusy
	}
	if err != nil {
		return "", nil, fmt.Errorf("leader of %s: %w", q.dir, err)
	}
	return string(data), ch, nil
}

// noLeaderWatch sets a watch that fires when a candidate may have come.
func (e *Election) noLeaderWatch(watch bool) <-chan zk.Event {
	if !watch {
		return nil
	}
	q := &e.m.q
	children, _, ch, err := q.conn.ChildrenW(q.dir)
	if errors.Is(err, zk.ErrNoNode) {
		_, _, ch, err = q.conn.ExistsW(q.dir)
	}
	if err != nil || len(children) > 0 {
		return closed[zk.Event]() // look again at once
	}
	return ch
}
