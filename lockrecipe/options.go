package lockrecipe

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// The errors of this package. Errors that come from ZooKeeper are wrapped,
// so errors.Is also finds go-zookeeper's own (zk.ErrSessionExpired,
// zk.ErrClosing, zk.ErrNoAuth, ...) next to these.
var (
	// ErrLost means that a lock, lease or leadership that was held or
	// awaited is gone without the holder releasing it: the session that
	// owned its node expired or was closed, or someone deleted the node.
	// Whoever gets it must stop acting as the holder.
	ErrLost = errors.New("lockrecipe: lock lost")

	// ErrNotLocked is returned by Unlock, RUnlock and Resign when there is
	// nothing to release.
	ErrNotLocked = errors.New("lockrecipe: not locked")

	// ErrReleased is returned by Lease.Acquire and Lease.Release once the
	// lease has been released completely.
	ErrReleased = errors.New("lockrecipe: lease already released")

	// ErrNoLeader is returned by Election.Leader when nobody campaigns.
	ErrNoLeader = errors.New("lockrecipe: no leader")

	// errBusy is what an attempt that may not wait returns when it does
	// not get the lock at once (TryLock turns it into false).
	errBusy = errors.New("lockrecipe: busy")
)

// DefaultRetryTimeout is how long a recipe keeps retrying, by default,
// through connection losses: finding its node after a create whose reply
// was lost, and deleting its node on release.
const DefaultRetryTimeout = 10 * time.Second

// Option adjusts a recipe at construction.
type Option func(*options)

type options struct {
	acl          []zk.ACL
	data         []byte
	retryTimeout time.Duration
}

func newOptions(opts []Option) options {
	o := options{acl: zk.WorldACL(zk.PermAll), retryTimeout: DefaultRetryTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithACL sets the ACL of the nodes a recipe creates: its lock nodes and
// any missing parents. The default is world:anyone with every permission,
// as Curator's default.
func WithACL(acl ...zk.ACL) Option {
	return func(o *options) { o.acl = acl }
}

// WithData sets the data stored in each lock node, for example a host name
// that tells an operator who holds the lock (Curator stores the client's IP
// address). The default is no data. Election stores the candidate's id
// instead.
func WithData(data []byte) Option {
	return func(o *options) { o.data = data }
}

// WithRetryTimeout sets how long a recipe retries through connection losses
// whose outcome it must learn (DefaultRetryTimeout unless set): finding its
// own node after a create whose reply was lost, and deleting its node on
// release or cancellation. Waiting for a lock is bounded by the caller's
// context, not by this.
func WithRetryTimeout(d time.Duration) Option {
	return func(o *options) { o.retryTimeout = d }
}
