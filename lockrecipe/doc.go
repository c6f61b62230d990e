// Package lockrecipe implements ZooKeeper's lock recipes over a
// go-zookeeper client (a *zk.Conn, or anything with its methods: Conn): an
// exclusive Mutex, a reader/writer RWMutex, a
// Semaphore of n leases and a leader Election. It is a client library only:
// it talks to any ZooKeeper 3.5+ (zkraft or Apache ZooKeeper) through the
// connection it is given, and knows nothing of the server. It owns the
// nodes it creates under the lock paths; it never closes the connection.
//
//	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second)
//	m := lockrecipe.NewMutex(conn, "/locks/report")
//	if err := m.Lock(ctx); err != nil { ... }
//	defer m.Unlock()
//
// # The algorithm
//
// Every attempt at a lock creates one EPHEMERAL_SEQUENTIAL node under the
// lock path, lists the children, orders them by sequence number, and holds
// the lock if a rule says its node may (a mutex or a writer: first; a
// reader: no writer before it). Otherwise it sets a data watch on the one
// node it must outlast (the node just before it; for a reader, the last
// writer before it) and checks again when that node goes. So a release
// wakes exactly one waiter, whatever the number of contenders, and
// waiters get the lock in the order of their sequence numbers (FIFO).
// The lock path and its missing parents are created as containers, which
// the server deletes once they are empty.
//
// # Compatibility with Curator
//
// Node names, order and rules are Curator's (5.x), so Go and Java services
// can share one lock: Mutex nodes are InterProcessMutex's
// _c_<uuid>-lock-<sequence>, RWMutex nodes InterProcessReadWriteLock's
// _c_<uuid>-__READ__<sequence> and _c_<uuid>-__WRIT__<sequence>, Election
// nodes LeaderLatch's _c_<uuid>-latch-<sequence>, and Semaphore uses
// InterProcessSemaphoreV2's <path>/locks and <path>/leases. Every child of
// the lock path takes part, ordered by the text after the last lock name
// compared as strings (StandardLockInternalsDriver.fixForSorting), and the
// <uuid> is a 36-character UUID, so Curator recognises the nodes as its
// own protected nodes.
//
// # Failures
//
// Connection loss (recoverable). A create whose reply is lost may or may
// not have made the node. Each attempt carries its own UUID in its node's
// name (Curator's protected mode), so the recipe lists the lock path, finds
// its node by that id, and creates again only if there is none; if a
// duplicate ever appears (a create that landed late), it is deleted.
// Other requests are retried once the connection is back. Watches survive
// reconnection (go-zookeeper re-registers them). Releases and withdrawals
// are retried for WithRetryTimeout, so a node is not left behind to block
// everyone while the session lives.
//
// Session expiry (unrecoverable). When the session ends, the server
// deletes its nodes and someone else may take the lock. Each held (or
// awaited) node is watched by its own guard, so when go-zookeeper learns of
// the expiry (or the node is deleted by anyone else, or the connection is
// closed) the holding's Lost channel is closed at that moment, a waiting
// Lock returns an ErrLost error, and Unlock, Release and Lease.Acquire
// report ErrLost: the recipe never pretends to hold a lock it lost.
// go-zookeeper then opens a new session on the same *zk.Conn, and the next
// Lock works as usual.
//
// The limit is ZooKeeper's own: a client learns that its session expired
// only when it reaches a server again. While a client is cut off, its
// session may expire and another client may take the lock before Lost
// closes; a holder that must never overlap should stop acting as the holder
// once it has been disconnected for a good part of the session timeout
// (go-zookeeper reports StateDisconnected on its event channel, which the
// application owns). The guard's watch costs one notification at release:
// the releasing client is told of its own deletion besides the next waiter.
//
// # One lock object, many goroutines
//
// A Mutex behaves like a sync.Mutex among the goroutines that share it
// (and an RWMutex like a sync.RWMutex): one holds it from Lock to Unlock
// and the others wait in the process, without nodes of their own, so
// go-zookeeper's shared-lock-object failures cannot happen. Any goroutine
// may Unlock. Distinct Mutex values (or processes, or sessions) on the
// same path exclude each other through ZooKeeper.
//
// # Reentrancy
//
// Curator's InterProcessMutex is reentrant per thread: the thread that
// holds it may acquire it again, and must release it as many times. Go has
// no goroutine identity to key that on, and work moves between goroutines,
// so reentrancy here is tied to what a caller holds rather than to who
// runs: Acquire returns a *Lease, the holding itself, and whoever has the
// lease has the lock. Code that may be called with the lock held takes the
// lease as a parameter and nests on it:
//
//	func report(lease *lockrecipe.Lease) error {
//		if err := lease.Acquire(); err != nil { // at once, no round trip
//			return err // ErrLost: no longer ours
//		}
//		defer lease.Release()
//		...
//	}
//
// Lock and Unlock keep sync.Mutex's semantics, though not its signatures
// (Lock takes a context, and both return an error, since a lock can be
// lost): not reentrant, a second Lock waits, so a forgotten Unlock or a
// recursive call shows as a wait, not as a silent double hold. A Lease is an explicit, typed value in the call,
// unlike an owner carried in a context.Context, which callees cannot see in
// their signature and which outlives the holding in derived contexts.
//
// # Contexts
//
// Waiting ends with the caller's context: the attempt's node is deleted
// and ctx's error returned. A single request that go-zookeeper has sent
// cannot be interrupted; it ends when answered or when the connection
// fails.
package lockrecipe
