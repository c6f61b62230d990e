// Package session holds what ZooKeeper's session tracker decides: session ids,
// passwords, negotiated timeouts, and liveness deadlines kept in an expiry
// queue of tick buckets, as ZooKeeper's ExpiryQueue, so that a session
// expires at the first tick boundary after its timeout has run out.
//
// Time always comes in as an argument; the package starts no goroutine and
// reads no clock. It knows nothing of the znode tree or the wire.
package session
