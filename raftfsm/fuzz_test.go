package raftfsm_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
)

// splitCommands reads data as commands, each after a two-byte length.
func splitCommands(data []byte) [][]byte {
	var out [][]byte
	for len(data) >= 2 {
		n := int(binary.BigEndian.Uint16(data))
		data = data[2:]
		n = min(n, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// knownType reports whether an FSM applies (or may skip) commands of typ.
func knownType(typ raftfsm.Type) bool {
	return typ&raftfsm.Ignorable != 0 || typ >= raftfsm.TypeRequest && typ <= raftfsm.TypeReconfig
}

// joinCommands is splitCommands' inverse, for the seeds.
func joinCommands(cmds []raftfsm.Command) []byte {
	var out []byte
	for _, c := range cmds {
		enc := c.Encode()
		out = binary.BigEndian.AppendUint16(out, uint16(len(enc)))
		out = append(out, enc...)
	}
	return out
}

// FuzzApply applies arbitrary commands to two replicas, one entry at a
// time and in one batch: neither panics, the two end with the same state,
// and the state keeps its invariants (FSM.Check). Entries that do not
// decode as a command of a known type are left out: a member stops on
// purpose at a committed entry it cannot apply rather than skip a write the
// others applied (TestFSM_UnknownCommandType).
func FuzzApply(f *testing.F) {
	f.Add(joinCommands(sampleHistory()))
	for _, tc := range sampleCommands() {
		f.Add(joinCommands([]raftfsm.Command{tc.cmd}))
	}
	f.Add([]byte{0, 1, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmds := splitCommands(data)
		one, batch := raftfsm.New(nil), raftfsm.New(nil)
		logs := make([]*raft.Log, len(cmds))
		logs = logs[:0]
		for _, c := range cmds {
			var cmd raftfsm.Command
			if cmd.Decode(c) != nil || !knownType(cmd.Type) {
				continue
			}
			l := &raft.Log{Index: uint64(len(logs) + 1), Term: 1, Type: raft.LogCommand, Data: c}
			logs = append(logs, l)
			one.Apply(l)
		}
		batch.ApplyBatch(logs)
		require.Equal(t, one.Digest(), batch.Digest(), "replicas applying the same log differ")
		require.Equal(t, one.LastZxid(), batch.LastZxid())
		require.NoError(t, one.Check(), "invariants")
	})
}

// FuzzRestore: a snapshot damaged anywhere (bytes flipped, cut, spliced):
// Restore never panics, and a state it accepts passes the FSM's own check.
// Raft's CRC keeps a damaged snapshot file from reaching Restore; this is
// the defence behind it.
func FuzzRestore(f *testing.F) {
	raw := mustSnapshot(f, newBusyApplier(f, nil).fsm)
	f.Add(raw, uint16(0), uint8(0))
	f.Add(raw, uint16(len(raw)/2), uint8(0xff))
	f.Add(raw[:len(raw)/2], uint16(0), uint8(0))
	f.Add(raw, uint16(20), uint8(0x80))
	f.Fuzz(func(t *testing.T, b []byte, at uint16, flip uint8) {
		if len(b) > 0 {
			b = bytes.Clone(b)
			b[int(at)%len(b)] ^= flip
		}
		fsm := raftfsm.New(nil)
		if err := fsm.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			return
		}
		if err := fsm.Check(); err != nil {
			t.Fatalf("a restored state fails its check: %v", err)
		}
	})
}
