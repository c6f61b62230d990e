package lockrecipe

import (
	"crypto/rand"
	"fmt"
	"path"
	"strings"
)

// Lock names: the part of a node's name before the sequence number that the
// server appends. They are Curator's, so that Go and Java contenders share
// one queue.
const (
	mutexName = "lock-"    // InterProcessMutex
	readName  = "__READ__" // InterProcessReadWriteLock, readers
	writeName = "__WRIT__" // InterProcessReadWriteLock, writers
	latchName = "latch-"   // LeaderLatch
	leaseName = "lease-"   // InterProcessSemaphoreV2, under <path>/leases

	// protectedPrefix starts the name of a node created in Curator's
	// protected mode: _c_<uuid>-<lock name><sequence>.
	protectedPrefix = "_c_"
)

// newProtectedID returns a random (version 4) UUID in the 36-character form
// of Java's UUID.toString, which Curator's ProtectedUtils.isProtectedZNode
// checks.
func newProtectedID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// protectedNodePrefix is what every node of one attempt starts with.
func protectedNodePrefix(id string) string { return protectedPrefix + id + "-" }

// sortKey is Curator's StandardLockInternalsDriver.fixForSorting: the text
// after the last occurrence of the lock name (the sequence number), or the
// whole name when the lock name does not occur.
func sortKey(name, lockName string) string {
	if i := strings.LastIndex(name, lockName); i >= 0 {
		return name[i+len(lockName):]
	}
	return name
}

// keyFunc maps a child's name to the string it is ordered by.
type keyFunc func(name string) string

// mutexKey orders the children of an InterProcessMutex path.
func mutexKey(name string) string { return sortKey(name, mutexName) }

// latchKey orders the children of a LeaderLatch path.
func latchKey(name string) string { return sortKey(name, latchName) }

// rwKey is InterProcessReadWriteLock's SortingLockInternalsDriver: the
// sequence after __READ__, then after __WRIT__.
func rwKey(name string) string { return sortKey(sortKey(name, readName), writeName) }

// order is the children of a lock path in Curator's order
// (LockInternals.getSortedChildren): every child takes part, compared by its
// key as strings, equal keys in the server's order (Java's Collections.sort
// is stable). It answers the rules' questions in one pass, without sorting.
type order struct {
	names []string
	keys  []string
}

func newOrder(children []string, key keyFunc) order {
	keys := make([]string, len(children))
	for i, name := range children {
		keys[i] = key(name)
	}
	return order{names: children, keys: keys}
}

// less reports whether child i comes before child j.
func (o order) less(i, j int) bool {
	if c := strings.Compare(o.keys[i], o.keys[j]); c != 0 {
		return c < 0
	}
	return i < j
}

// lastBefore returns the last child before child ours that match accepts,
// or -1.
func (o order) lastBefore(ours int, match func(name string) bool) int {
	last := -1
	for i, name := range o.names {
		if i != ours && o.less(i, ours) && match(name) && (last < 0 || o.less(last, i)) {
			last = i
		}
	}
	return last
}

// first returns the first child, or -1 if there is none.
func (o order) first() int {
	first := -1
	for i := range o.names {
		if first < 0 || o.less(i, first) {
			first = i
		}
	}
	return first
}

// rule decides, from the order of the children and the index of ours,
// whether we hold the lock, and if not, which child to wait for.
type rule func(o order, ours int) (holds bool, watch string)

// exclusive is the rule of a mutex and of a writer (Curator's
// StandardLockInternalsDriver with one lease): hold when first, otherwise
// wait for the child just before ours.
func exclusive(o order, ours int) (bool, string) {
	if p := o.lastBefore(ours, func(string) bool { return true }); p >= 0 {
		return false, o.names[p]
	}
	return true, ""
}

// shared is the rule of a reader: hold when no writer node comes before
// ours (Curator's readLockPredicate: readers pass readers), otherwise wait
// for the last writer before ours. Curator's readers wait for the first
// writer instead; both re-check when woken, so they agree on who holds.
func shared(o order, ours int) (bool, string) {
	if p := o.lastBefore(ours, isWriter); p >= 0 {
		return false, o.names[p]
	}
	return true, ""
}

// isWriter is Curator's test for a writer's node.
func isWriter(name string) bool { return strings.Contains(name, writeName) }

// childPath joins a lock path and a child name.
func childPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// cleanPath removes a trailing slash (but keeps "/").
func cleanPath(p string) string {
	if p == "" || p == "/" {
		return p
	}
	return strings.TrimSuffix(p, "/")
}

// parentPath returns the parent of a path, "" for "/".
func parentPath(p string) string {
	if p == "/" || p == "" {
		return ""
	}
	return path.Dir(p)
}
