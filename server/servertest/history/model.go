package history

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// znode is one znode's state in the sequential specification.
type znode struct {
	Known     bool // false: nothing is known of it yet (it may have been made before the history)
	Exists    bool
	DataKnown bool // an exists or a check shows the version, not the data
	Data      string
	Version   int32
	Vanish    bool // ephemeral, container or TTL: it may go with no delete in the history
}

var (
	unknown = znode{}
	absent  = znode{Known: true}
)

// step is one operation on one znode: an op, or one op of a multi.
type step struct {
	op   *Op
	path string
}

// mayVanish reports whether a node created with these flags may go without
// a delete: its session ends, or the server reaps it.
func mayVanish(flags int32) bool {
	return flags&zk.FlagEphemeral != 0 || flags == zk.FlagContainer || flags == zk.FlagTTL ||
		flags == zk.FlagPersistentSequentialWithTTL
}

// znodeModel is ZooKeeper's sequential specification of one znode, as
// writes and synced reads see it. It is nondeterministic where the history
// does not say: a write whose outcome is unknown may or may not have taken
// effect, and a node that may vanish may be gone before any step.
var znodeModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byPath := map[string][]porcupine.Operation{}
		for _, o := range history {
			p := o.Input.(step).path
			byPath[p] = append(byPath[p], o)
		}
		paths := make([]string, 0, len(byPath))
		for p := range byPath {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		out := make([][]porcupine.Operation, len(paths))
		for i, p := range paths {
			out[i] = byPath[p]
		}
		return out
	},
	Init: func() []any { return []any{unknown} },
	Step: func(state, input, _ any) []any {
		s, in := state.(znode), input.(step)
		pre := []znode{s}
		if s.Exists && s.Vanish {
			pre = append(pre, absent)
		}
		var out []any
		for _, p := range pre {
			for _, next := range apply(p, in.op) {
				if !slices.Contains(out, any(next)) {
					out = append(out, next)
				}
			}
		}
		return out
	},
	Equal: func(a, b any) bool { return a.(znode) == b.(znode) },
	DescribeOperation: func(input, _ any) string {
		in := input.(step)
		return describe(in.op)
	},
	DescribeState: func(state any) string {
		s := state.(znode)
		switch {
		case !s.Known:
			return "?"
		case !s.Exists:
			return "absent"
		case !s.DataKnown:
			return fmt.Sprintf("v%d", s.Version)
		}
		return fmt.Sprintf("%q v%d", truncate(s.Data, 32), s.Version)
	},
}

// apply returns the states op may leave s in; none if op cannot happen
// from s.
func apply(s znode, op *Op) []znode {
	if !s.Known {
		return applyUnknown(op)
	}
	code := op.Err
	switch op.Kind {
	case "create":
		created := znode{Known: true, Exists: true, DataKnown: true, Data: string(op.Data), Vanish: mayVanish(op.Flags)}
		switch {
		case op.Outcome == OK && !s.Exists:
			return []znode{created}
		case op.Outcome == Unknown && !s.Exists:
			return []znode{s, created}
		case op.Outcome == Unknown:
			return []znode{s}
		case is(code, zk.ErrNodeExists) && s.Exists,
			is(code, zk.ErrNoNode, zk.ErrNoChildrenForEphemerals) && !s.Exists: // the parent
			return []znode{s}
		}
	case "delete":
		can := s.Exists && (op.Version == -1 || op.Version == s.Version)
		switch {
		case op.Outcome == OK && can:
			return []znode{absent}
		case op.Outcome == Unknown && can:
			return []znode{s, absent}
		case op.Outcome == Unknown:
			return []znode{s}
		case is(code, zk.ErrNoNode) && !s.Exists,
			is(code, zk.ErrBadVersion) && s.Exists && !can,
			is(code, zk.ErrNotEmpty) && s.Exists:
			return []znode{s}
		}
	case "set":
		can := s.Exists && (op.Version == -1 || op.Version == s.Version)
		set := znode{Known: true, Exists: true, DataKnown: true, Data: string(op.Data), Version: s.Version + 1, Vanish: s.Vanish}
		switch {
		case op.Outcome == OK && can && (op.Stat == nil || op.Stat.Version == set.Version):
			return []znode{set}
		case op.Outcome == Unknown && can:
			return []znode{s, set}
		case op.Outcome == Unknown:
			return []znode{s}
		case is(code, zk.ErrNoNode) && !s.Exists,
			is(code, zk.ErrBadVersion) && s.Exists && !can:
			return []znode{s}
		}
	case "check":
		can := s.Exists && (op.Version == -1 || op.Version == s.Version)
		switch {
		case op.Outcome == OK && can, op.Outcome == Unknown:
			return []znode{s}
		}
	case "get":
		switch {
		case op.Outcome == OK && s.Exists && op.Stat.Version == s.Version && (!s.DataKnown || string(op.Result) == s.Data):
			s.DataKnown, s.Data = true, string(op.Result)
			return []znode{s}
		case is(code, zk.ErrNoNode) && !s.Exists:
			return []znode{s}
		}
	case "exists":
		switch {
		case op.Outcome == OK && op.Stat == nil && !s.Exists,
			op.Outcome == OK && op.Stat != nil && s.Exists && op.Stat.Version == s.Version:
			return []znode{s}
		}
	}
	return nil
}

// applyUnknown returns the states op may leave a node in of which nothing
// was known: what its outcome shows, or still nothing.
func applyUnknown(op *Op) []znode {
	code := op.Err
	// A node learned from a read may vanish: its Stat does not say whether
	// it is a container or a TTL node, which the server may reap.
	seen := func(st *zk.Stat) znode { return znode{Known: true, Exists: true, Version: st.Version, Vanish: true} }
	switch op.Kind {
	case "create":
		created := znode{Known: true, Exists: true, DataKnown: true, Data: string(op.Data), Vanish: mayVanish(op.Flags)}
		switch {
		case op.Outcome == OK:
			return []znode{created}
		case op.Outcome == Unknown:
			return []znode{unknown, created}
		case is(code, zk.ErrNoNode):
			return []znode{absent}
		}
	case "delete":
		switch {
		case op.Outcome == OK, is(code, zk.ErrNoNode):
			return []znode{absent}
		case op.Outcome == Unknown:
			return []znode{unknown, absent}
		}
	case "set":
		switch {
		case op.Outcome == OK && op.Stat != nil:
			s := seen(op.Stat)
			s.DataKnown, s.Data = true, string(op.Data)
			return []znode{s}
		case is(code, zk.ErrNoNode):
			return []znode{absent}
		}
	case "get":
		switch {
		case op.Outcome == OK:
			s := seen(op.Stat)
			s.DataKnown, s.Data = true, string(op.Result)
			return []znode{s}
		case is(code, zk.ErrNoNode):
			return []znode{absent}
		}
	case "exists":
		if op.Outcome == OK && op.Stat == nil {
			return []znode{absent}
		}
		if op.Outcome == OK {
			return []znode{seen(op.Stat)}
		}
	}
	return []znode{unknown}
}

// is reports whether err is one of targets.
func is(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// describe renders an op as the report and the visualisation show it.
func describe(op *Op) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s", op.Kind, op.Path)
	switch op.Kind {
	case "create":
		fmt.Fprintf(&b, ", %q", truncate(string(op.Data), 24))
		if op.Flags != 0 {
			fmt.Fprintf(&b, ", flags %d", op.Flags)
		}
	case "set":
		fmt.Fprintf(&b, ", %q, v%d", truncate(string(op.Data), 24), op.Version)
	case "delete", "check":
		fmt.Fprintf(&b, ", v%d", op.Version)
	}
	if op.Watch {
		b.WriteString(", watch")
	}
	b.WriteString(") -> ")
	switch {
	case op.Pending:
		b.WriteString("pending")
	case op.Outcome == Unknown:
		fmt.Fprintf(&b, "unknown (%v)", op.Err)
	case op.Outcome == Failed:
		fmt.Fprintf(&b, "%v", op.Err)
	case op.Kind == "create":
		b.WriteString(op.Created)
	case op.Kind == "get":
		fmt.Fprintf(&b, "%q v%d", truncate(string(op.Result), 24), op.Stat.Version)
	case op.Kind == "exists" && op.Stat == nil:
		b.WriteString("no node")
	case op.Kind == "children":
		fmt.Fprintf(&b, "%v", op.Names)
	case op.Stat != nil:
		fmt.Fprintf(&b, "v%d", op.Stat.Version)
	default:
		b.WriteString("ok")
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
