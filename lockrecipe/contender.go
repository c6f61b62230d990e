package lockrecipe

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// contender is one attempt at a lock: the ephemeral sequential node it
// created in Curator's protected mode (_c_<uuid>-<lock name><sequence>), and
// the guard goroutine that watches that node until it is released.
type contender struct {
	conn    Conn
	opts    *options
	dir     string // the lock path
	prefix  string // _c_<uuid>-: starts every node this attempt may have created
	path    string // our node
	name    string // its last element
	session int64  // the client's session when the node was found made (whyDeleted)

	// uncertain is set when a create's outcome was unknown: a duplicate of
	// our node may exist, and listings and release delete it. It is written
	// while acquiring and read by release, which the lock's own mutex
	// orders after it.
	uncertain bool

	mu        sync.Mutex // guards releasing, cause
	releasing bool
	cause     error         // why the node is gone; set once
	gone      chan struct{} // closed when the node is known to be gone, for any reason
	lost      chan struct{} // closed when it went while not being released
	stop      chan struct{} // closed once released: the guard returns
	stopOnce  sync.Once
}

func newContender(q *queue) *contender {
	return &contender{
		conn: q.conn, opts: &q.opts, dir: q.dir,
		prefix: protectedNodePrefix(newProtectedID()),
		gone:   make(chan struct{}), lost: make(chan struct{}), stop: make(chan struct{}),
	}
}

func (c *contender) setPath(p string) {
	c.path, c.name = p, path.Base(p)
	c.session = c.conn.SessionID()
}

// create makes our node, creating missing parents, and when a connection
// loss leaves the outcome unknown, lists the lock path to find it by the
// attempt's id before creating again (go-zookeeper's own
// CreateProtectedEphemeralSequential gives up or panics in those cases).
func (c *contender) create(ctx context.Context, lockName string, data []byte) error {
	deadline := time.Now().Add(c.opts.retryTimeout)
	closing := closeDetector{conn: c.conn}
	for attempt := 0; ; attempt++ {
		p, err := c.conn.Create(childPath(c.dir, c.prefix+lockName), data, zk.FlagEphemeralSequential, c.opts.acl)
		clientClosed := closing.closed(err) // counts each failure once
		switch {
		case err == nil:
			c.setPath(p)
			return nil
		case clientClosed && c.uncertain:
			// A node an earlier try may have made went with the session.
			return lostError("create a node in "+c.dir, zk.ErrClosing)
		case clientClosed:
			return fmt.Errorf("create a node in %s: %w", c.dir, zk.ErrClosing)
		case transient(err):
			c.uncertain = true
			found, ferr := c.find(ctx, deadline)
			if found || ferr != nil {
				return ferr
			}
			// Not created: create again.
		case errors.Is(err, zk.ErrNoNode):
			if err := makeContainers(c.conn, c.dir, c.opts.acl); err != nil && !retryable(err) {
				return fmt.Errorf("create %s: %w", c.dir, err)
			}
		case !retryable(err):
			return fmt.Errorf("create a node in %s: %w", c.dir, err)
		}
		// A session that expired took whatever was created along;
		// go-zookeeper opens a new one, and the loop creates again.
		if err := backoff(ctx, deadline, attempt, nil, err); err != nil {
			return fmt.Errorf("create a node in %s: %w", c.dir, err)
		}
	}
}

// find looks for our node after a create whose outcome is unknown,
// retrying through connection losses, and adopts the first one found.
func (c *contender) find(ctx context.Context, deadline time.Time) (bool, error) {
	closing := closeDetector{conn: c.conn}
	for attempt := 0; ; attempt++ {
		children, _, err := c.conn.Children(c.dir)
		switch {
		case closing.closed(err):
			// Our node, if the create made it, went with the session.
			return false, lostError("look for our node in "+c.dir, zk.ErrClosing)
		case err == nil:
			if mine := c.mine(children); len(mine) > 0 {
				c.setPath(childPath(c.dir, mine[0]))
				return true, nil
			}
			return false, nil
		case errors.Is(err, zk.ErrNoNode):
			return false, nil
		case !retryable(err):
			return false, fmt.Errorf("look for our node in %s: %w", c.dir, err)
		}
		if err := backoff(ctx, deadline, attempt, nil, err); err != nil {
			return false, fmt.Errorf("look for our node in %s: %w", c.dir, err)
		}
	}
}

// mine returns the children this attempt created, lowest sequence first
// (their names differ only in the sequence).
func (c *contender) mine(children []string) []string {
	var mine []string
	for _, ch := range children {
		if strings.HasPrefix(ch, c.prefix) {
			mine = append(mine, ch)
		}
	}
	slices.Sort(mine)
	return mine
}

// dedupe drops, and deletes, any duplicate of our node that a create with
// an unknown outcome may have left (in a cluster such a create can still
// land after the listing that did not find it).
func (c *contender) dedupe(children []string) []string {
	if !c.uncertain {
		return children
	}
	out := children[:0:0]
	for _, ch := range children {
		if ch != c.name && strings.HasPrefix(ch, c.prefix) {
			c.conn.Delete(childPath(c.dir, ch), -1) // best effort; release tries again
			continue
		}
		out = append(out, ch)
	}
	return out
}

// makeContainers creates p and its missing ancestors as containers, as
// Curator's creatingParentContainersIfNeeded does (the server deletes them
// once empty), or as persistent nodes where containers are unknown.
func makeContainers(conn Conn, p string, acl []zk.ACL) error {
	if p == "/" || p == "" {
		return nil
	}
	_, err := conn.CreateContainer(p, nil, zk.FlagContainer, acl)
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists):
		return nil
	case errors.Is(err, zk.ErrNoNode):
		if err := makeContainers(conn, parentPath(p), acl); err != nil {
			return err
		}
		return makeContainers(conn, p, acl)
	case transient(err), sessionEnded(err), errors.Is(err, zk.ErrNoAuth):
		return err
	}
	// A server without containers (before ZooKeeper 3.5).
	if _, err := conn.Create(p, nil, zk.FlagPersistent, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}
