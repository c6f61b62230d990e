package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// The queue workload: clients append to a queue with sequential creates.
// When the run is over the queue is read back and checked: every create a
// client saw succeed is there, no two creates were given the same name, and
// the sequence numbers run in the order of the creates' zxids. A create
// whose outcome the client never learned may or may not be there.

// queue records the creates clients made under one parent.
type queue struct {
	parent string

	mu      sync.Mutex
	acked   []string // names of the creates clients saw succeed
	unknown int      // creates whose outcome was never learned
}

// create appends to the queue through conn and records the outcome; it
// reports whether the outcome is known.
func (q *queue) create(conn *zk.Conn, client int) bool {
	path, err := conn.Create(q.parent+"/item-", []byte(strconv.Itoa(client)), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.unknown++
		return false
	}
	q.acked = append(q.acked, path[len(q.parent)+1:])
	return true
}

// check reads the queue back through conn and returns what is wrong.
func (q *queue) check(conn *zk.Conn) ([]string, error) {
	if _, err := conn.Sync(q.parent); err != nil {
		return nil, err
	}
	names, _, err := conn.Children(q.parent)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	acked := slices.Clone(q.acked)
	q.mu.Unlock()
	var problems []string
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	seen := map[string]bool{}
	for _, n := range acked {
		if seen[n] {
			problems = append(problems, fmt.Sprintf("queue: %s was given to two creates", n))
		}
		seen[n] = true
		if !present[n] {
			problems = append(problems, fmt.Sprintf("queue: acknowledged create %s is gone", n))
		}
	}
	// Sequence order is zxid order.
	type item struct {
		seq  int
		zxid int64
		name string
	}
	var items []item
	for _, n := range names {
		seq, err := strconv.Atoi(strings.TrimPrefix(n, "item-"))
		if err != nil {
			problems = append(problems, fmt.Sprintf("queue: unexpected child %s", n))
			continue
		}
		_, st, err := conn.Exists(q.parent + "/" + n)
		if err != nil {
			return nil, err
		}
		items = append(items, item{seq, st.Czxid, n})
	}
	slices.SortFunc(items, func(a, b item) int { return a.seq - b.seq })
	for i := 1; i < len(items); i++ {
		if items[i].zxid <= items[i-1].zxid {
			problems = append(problems, fmt.Sprintf("queue: %s (zxid %#x) follows %s (zxid %#x)",
				items[i].name, items[i].zxid, items[i-1].name, items[i-1].zxid))
		}
	}
	return problems, nil
}
