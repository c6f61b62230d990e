package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zkraft/zkraft/tree"
)

// writeWatches writes the data-table watches by connection (wchc: session
// id, then its paths) or by path (wchp: path, then the session ids).
func (s *Server) writeWatches(b *strings.Builder, byPath bool) {
	w := s.watches
	w.mu.Lock()
	if byPath {
		for _, p := range sortedKeys(w.tables[tableData]) {
			fmt.Fprintf(b, "%s\n", p)
			for c := range w.tables[tableData][p] {
				fmt.Fprintf(b, "\t%s\n", hexID(c.session))
			}
		}
	} else {
		byConn := make(map[*conn][]string)
		for p, watchers := range w.tables[tableData] {
			for c := range watchers {
				byConn[c] = append(byConn[c], p)
			}
		}
		for c, paths := range byConn {
			slices.Sort(paths)
			fmt.Fprintf(b, "%s\n", hexID(c.session))
			for _, p := range paths {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
	}
	w.mu.Unlock()
	b.WriteString("\n")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeDump writes the session expiry sets, each session's ephemerals and
// the connections, in ZooKeeper's dump format.
func (s *Server) writeDump(b *strings.Builder) {
	type set struct {
		at  time.Time
		ids []int64
	}
	sessions := s.fsm.Sessions() // before s.mu: the FSM lock comes first
	// Deadlines are on the monotonic clock; shown as wall times.
	wall, elapsed := s.clock.Now(), s.clock.Elapsed()
	s.mu.Lock()
	sets := make(map[int64]*set)
	total := 0
	for _, sess := range sessions {
		deadline, ok := s.tracker.Deadline(sess.ID)
		if !ok {
			continue
		}
		at := wall.Add(deadline - elapsed).Truncate(time.Millisecond)
		total++
		if sets[at.UnixMilli()] == nil {
			sets[at.UnixMilli()] = &set{at: at}
		}
		sets[at.UnixMilli()].ids = append(sets[at.UnixMilli()].ids, sess.ID)
	}
	s.mu.Unlock()
	fmt.Fprintf(b, "SessionTracker dump:\nSession Sets (%d)/(%d):\n", len(sets), total)
	for _, k := range slices.Sorted(maps.Keys(sets)) {
		fmt.Fprintf(b, "%d expire at %s:\n", len(sets[k].ids), sets[k].at.UTC().Format(javaDate))
		for _, id := range sets[k].ids {
			fmt.Fprintf(b, "\t%s\n", hexID(id))
		}
	}
	b.WriteString("ephemeral nodes dump:\n")
	s.fsm.Read(func(t *tree.Tree) {
		owners := t.Owners()
		slices.Sort(owners)
		fmt.Fprintf(b, "Sessions with Ephemerals (%d):\n", len(owners))
		for _, id := range owners {
			paths := t.Ephemerals(id, "")
			slices.Sort(paths)
			fmt.Fprintf(b, "%s:\n", hexID(id))
			for _, p := range paths {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
	})
	conns := s.connList()
	fmt.Fprintf(b, "Connections dump:\nConnections Sets (%d)/(%d):\n", len(conns), len(conns))
	for _, c := range conns {
		fmt.Fprintf(b, "1 expire at %s:\n\tip: /%s sessionId: %s\n",
			time.Now().Add(c.timeout).UTC().Format(javaDate), c.remote, hexID(c.session))
	}
}

// javaDate is java.util.Date.toString's layout.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"
