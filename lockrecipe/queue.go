package lockrecipe

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// queue is one lock path and the order of its children: the machinery that
// every recipe of this package shares.
type queue struct {
	conn Conn
	opts options
	dir  string
	key  keyFunc
}

func newQueue(conn Conn, dir string, key keyFunc, opts []Option) queue {
	return queue{conn: conn, opts: newOptions(opts), dir: cleanPath(dir), key: key}
}

// acquire runs one attempt: it creates a node named lockName and waits
// until r says the node holds the lock (or, unless wait, gives up with
// errBusy at once). On any failure the node is deleted before returning.
func (q *queue) acquire(ctx context.Context, lockName string, data []byte, r rule, wait bool) (*contender, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := newContender(q)
	if err := c.create(ctx, lockName, data); err != nil {
		return nil, fmt.Errorf("lock %s: %w", q.dir, err)
	}
	go c.guard() // owned by c: its release stops it
	if err := c.await(ctx, q.key, r, wait); err != nil {
		if rerr := c.release(); rerr != nil && !errors.Is(rerr, ErrLost) {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return c, nil
}

// await lists the lock path and decides, until our node holds the lock,
// retrying through connection losses. With wait false it returns errBusy
// instead of waiting.
func (c *contender) await(ctx context.Context, key keyFunc, r rule, wait bool) error {
	closing := closeDetector{conn: c.conn}
	watchList := false
	for attempt := 0; ; attempt++ {
		if err := c.lostErr(); err != nil {
			return err
		}
		holds, err := c.round(ctx, key, r, wait, &watchList)
		if closing.closed(err) {
			err = zk.ErrClosing
		}
		switch {
		case holds:
			return nil
		case err == nil:
			attempt = -1
			continue
		case errors.Is(err, errBusy):
			return err
		}
		if cerr := c.classify(err); cerr != nil {
			return cerr
		}
		if err := backoff(ctx, noDeadline(), attempt, c.gone, err); err != nil {
			return err
		}
	}
}

// round lists the children once and, unless our node holds the lock,
// waits once. When r names a child, it sets a data watch on that child
// alone, so a release wakes one waiter. When r names none (the semaphore,
// whose single waiter any release concerns), it lists again with a watch
// on the list (*watchList), then waits on that.
func (c *contender) round(ctx context.Context, key keyFunc, r rule, wait bool, watchList *bool) (bool, error) {
	var children []string
	var list <-chan zk.Event
	var err error
	if *watchList {
		children, _, list, err = c.conn.ChildrenW(c.dir)
	} else {
		children, _, err = c.conn.Children(c.dir)
	}
	if err != nil {
		return false, err
	}
	holds, watch, err := c.decide(children, key, r)
	switch {
	case err != nil || holds:
		return holds, err
	case !wait:
		return false, errBusy
	case watch != "":
		return false, c.waitGone(ctx, childPath(c.dir, watch))
	case !*watchList:
		*watchList = true
		return false, nil
	}
	*watchList = false
	return false, c.waitEvent(ctx, list)
}

// decide applies r to our node's place among the children.
func (c *contender) decide(children []string, key keyFunc, r rule) (bool, string, error) {
	children = c.dedupe(children)
	ours := slices.Index(children, c.name)
	if ours < 0 {
		c.markGone(fmt.Errorf("node %s is no longer listed", c.path))
		return false, "", c.lostErr()
	}
	holds, watch := r(newOrder(children, key), ours)
	return holds, watch, nil
}

// classify turns the error of one round of await into what await returns:
// nil to go round again (no error, or a connection loss to retry after a
// pause), or the error that ends the wait.
func (c *contender) classify(err error) error {
	switch {
	case transient(err):
		return nil
	case errors.Is(err, zk.ErrNoNode):
		c.markGone(fmt.Errorf("lock path %s is gone", c.dir))
		return c.lostErr()
	case sessionEnded(err):
		c.markGone(err)
		return c.lostErr()
	case errors.Is(err, ErrLost), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("wait in %s: %w", c.dir, err)
}

// waitGone waits until the child at p is deleted (or changed: the caller
// re-checks either way), ctx ends, or our own node is gone.
func (c *contender) waitGone(ctx context.Context, p string) error {
	_, _, ch, err := c.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // already gone: re-check
	}
	if err != nil {
		return err
	}
	return c.waitEvent(ctx, ch)
}

// waitEvent waits for one event on a watch.
func (c *contender) waitEvent(ctx context.Context, ch <-chan zk.Event) error {
	select {
	case ev := <-ch:
		if ev.Type == zk.EventNotWatching {
			return ev.Err
		}
		return nil
	case <-c.gone:
		return c.lostErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}
