package chaos

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The versioned register workload: every key is a znode whose data is a
// register and whose Stat version counts its writes. A read is a sync and
// a getData; a write is a setData with the version the writer last read,
// a compare-and-set. The model is the sequential specification of one such
// register; porcupine checks each key's history separately.

// regOp is a register operation's kind.
type regOp uint8

const (
	regRead regOp = iota
	regWrite
)

// regInput is what a client asked.
type regInput struct {
	Key     string
	Op      regOp
	Value   string // write: the new value
	Version int32  // write: the version it expects
}

// regOutcome is how an operation ended.
type regOutcome uint8

const (
	regOK            regOutcome = iota
	regBadVersion               // a write refused: the version had moved on
	regIndeterminate            // a write whose outcome the client never learned
)

// regOutput is what the client saw.
type regOutput struct {
	Outcome regOutcome
	Value   string // read: the value seen
	Version int32  // read: the version seen; write: the new version
}

// regState is one register: its value and version.
type regState struct {
	Value   string
	Version int32
}

// registerModel is the sequential specification of a versioned register,
// nondeterministic only where an indeterminate write may or may not have
// taken effect.
var registerModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(regInput).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		applied := regState{Value: in.Value, Version: s.Version + 1}
		switch {
		case in.Op == regRead:
			if out.Value == s.Value && out.Version == s.Version {
				return []interface{}{s}
			}
		case out.Outcome == regOK:
			if s.Version == in.Version && out.Version == in.Version+1 {
				return []interface{}{applied}
			}
		case out.Outcome == regBadVersion:
			if s.Version != in.Version {
				return []interface{}{s}
			}
		case out.Outcome == regIndeterminate:
			if s.Version == in.Version {
				return []interface{}{s, applied}
			}
			return []interface{}{s}
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		if in.Op == regRead {
			return fmt.Sprintf("read(%s) -> %q v%d", in.Key, out.Value, out.Version)
		}
		result := map[regOutcome]string{regOK: fmt.Sprintf("ok v%d", out.Version), regBadVersion: "BADVERSION",
			regIndeterminate: "unknown"}[out.Outcome]
		return fmt.Sprintf("set(%s, %q, v%d) -> %s", in.Key, in.Value, in.Version, result)
	},
	DescribeState: func(state interface{}) string {
		s := state.(regState)
		return fmt.Sprintf("%q v%d", s.Value, s.Version)
	},
}
