package lockrecipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// guard watches our node from its creation until it is released, and
// closes gone (and lost, unless we are releasing it) when the node goes:
// deleted, or its session expired or was closed. The watch is a data watch
// on our own node, so a session expiry reaches it as go-zookeeper's
// EventNotWatching as soon as the client reconnects and learns of it, and
// a deletion as EventNodeDeleted. It runs until stop is closed or the node
// is gone; it never blocks anything but itself.
func (c *contender) guard() {
	closing := closeDetector{conn: c.conn}
	for attempt := 0; ; attempt++ {
		_, _, ch, err := c.conn.GetW(c.path)
		switch {
		case err == nil:
			attempt = -1
			if c.watchOwn(ch) {
				return
			}
			continue
		case errors.Is(err, zk.ErrNoNode):
			c.markGone(fmt.Errorf("node %s is gone", c.path))
			return
		case sessionEnded(err):
			c.markGone(err)
			return
		case closing.closed(err):
			c.markGone(zk.ErrClosing)
			return
		}
		if backoff(context.Background(), noDeadline(), attempt, c.stop, err) != nil || c.stopped() {
			return
		}
	}
}

// watchOwn waits for one event of the watch on our node and reports
// whether the guard is done.
func (c *contender) watchOwn(ch <-chan zk.Event) bool {
	select {
	case ev := <-ch:
		switch ev.Type {
		case zk.EventNodeDeleted:
			c.markGone(c.whyDeleted())
			return true
		case zk.EventNotWatching:
			c.markGone(ev.Err)
			return true
		}
		return false // its data changed: watch again
	case <-c.stop:
		return true
	}
}

// whyDeleted finds out why our node was deleted: its session ended (the
// server deletes a session's ephemerals as it ends it, and its client may
// hear of the deletion before it learns the session is over), or someone
// deleted it. It asks for the node: a live session is told it is gone, an
// ended one that it ended. A lost connection is asked through for a few
// seconds.
func (c *contender) whyDeleted() error {
	deadline := time.Now().Add(5 * time.Second)
	closing := closeDetector{conn: c.conn}
	for attempt := 0; ; attempt++ {
		_, _, err := c.conn.Get(c.path)
		switch {
		case errors.Is(err, zk.ErrClosing):
			return fmt.Errorf("node %s was deleted as its client was closed: %w", c.path, err)
		case sessionEnded(err) || c.conn.SessionID() != c.session:
			// Asked too late for the ended session to answer, the question
			// may have gone out on the client's next one.
			return fmt.Errorf("node %s was deleted as its session ended: %w", c.path, zk.ErrSessionExpired)
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("node %s was deleted by another client", c.path)
		case closing.closed(err):
			return fmt.Errorf("node %s was deleted as its client was closed: %w", c.path, zk.ErrClosing)
		}
		if backoff(context.Background(), deadline, attempt, c.stop, err) != nil || c.stopped() {
			return fmt.Errorf("node %s was deleted (whether its session ended is unknown: %w)", c.path, err)
		}
	}
}

func (c *contender) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *contender) stopGuard() { c.stopOnce.Do(func() { close(c.stop) }) }

// markGone records that our node is gone and why. Unless we are releasing
// it, that is a loss: Lost() channels close and later calls fail.
func (c *contender) markGone(cause error) {
	if cause == nil {
		cause = fmt.Errorf("watch on %s ended", c.path)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return
	}
	c.cause = cause
	close(c.gone)
	if !c.releasing {
		close(c.lost)
	}
}

// lostErr returns an ErrLost error if our node went without our release.
func (c *contender) lostErr() error {
	select {
	case <-c.lost: // closed after cause is set, under mu
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return lostError("lock node "+c.path, c.cause)
}

// release deletes our node (and any duplicate an uncertain create left),
// retrying through connection losses for the retry timeout, and stops the
// guard. It returns an ErrLost error if the node had gone before.
func (c *contender) release() error {
	c.mu.Lock()
	c.releasing = true
	gone := c.cause != nil
	c.mu.Unlock()
	defer c.stopGuard()
	var err error
	if !gone {
		err = c.deleteNode()
	}
	if c.uncertain { // a create whose reply was lost may have landed twice
		if children, _, err := c.conn.Children(c.dir); err == nil {
			c.dedupe(children)
		}
	}
	if lerr := c.lostErr(); lerr != nil {
		return lerr
	}
	return err
}

// deleteNode deletes our node. A node that is already gone is a loss,
// unless an earlier attempt of ours may have deleted it.
func (c *contender) deleteNode() error {
	deadline := time.Now().Add(c.opts.retryTimeout)
	closing := closeDetector{conn: c.conn}
	maybeDeleted := false
	for attempt := 0; ; attempt++ {
		err := c.conn.Delete(c.path, -1)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode) && maybeDeleted:
			return nil
		case errors.Is(err, zk.ErrNoNode), sessionEnded(err):
			return lostError("release "+c.path, err)
		case closing.closed(err):
			return lostError("release "+c.path, zk.ErrClosing)
		case !transient(err):
			return fmt.Errorf("release %s: %w", c.path, err)
		}
		maybeDeleted = true
		if berr := backoff(context.Background(), deadline, attempt, c.gone, err); berr != nil {
			return fmt.Errorf("release %s: %w", c.path, berr)
		}
		select {
		case <-c.gone: // deleted by us, or the session ended: either way released
			return nil
		default:
		}
	}
}
