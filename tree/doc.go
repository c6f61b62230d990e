// Package tree is the znode tree with Apache ZooKeeper 3.8's semantics:
// persistent, ephemeral, sequential, container and TTL nodes, every Stat
// field (including the hidden child-create counter behind the visible
// cversion), server-side path validation, ACL checks, and writes that check
// their preconditions in the order ZooKeeper does and report which watches
// they trigger.
//
// A Tree is a deterministic value: it reads no clock (time comes in through
// Context), starts no goroutine and does no I/O except to the writers and
// readers handed to its snapshot functions. It is not safe for concurrent
// use; its owner (raftfsm) serialises writes and guards reads, and passes
// that guard to Snapshot: an open snapshot reads the tree under its read
// lock while the tree keeps, copy on write, the nodes it changes meanwhile
// (view.go).
//
// Its layout is made for a million znodes and more: there is no index of
// paths. A node holds neither its path nor its name; it is found from the
// root through its ancestors' child sets, each a table of names and node
// ids of its own (javaSet) that also lists them in ZooKeeper's (Java
// HashSet) order. Only nodes that have had a child have a child set, and a
// node's ACL is an index into the tree's table of interned ACL lists
// (aclTable).
//
// Nothing per znode is an object of its own for the garbage collector
// (store.go): nodes live in chunks of 4096 by id and hold no pointer, a
// child set's names live in one byte array of its own and its table holds
// offsets and ids, and data lives in an arena of byte chunks, appended and
// never overwritten, a chunk's live items copied out once it is half dead.
// A million znodes are a few thousand objects the collector marks without
// scanning.
//
// It knows nothing of sockets, of whether sessions are alive, or of Raft.
package tree
