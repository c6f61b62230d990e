package raftfsm_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/wire"
)

// sampleCommands has one command of every type, with every field its type
// carries set to a non-zero value.
func sampleCommands() []struct {
	name string
	cmd  raftfsm.Command
} {
	auth := []wire.Id{{Scheme: "ip", ID: "10.0.0.1"}, aliceID, superID}
	body := (&wire.CreateRequest{Path: "/x", Data: []byte("d"), ACL: wire.OpenACLUnsafe}).Append(nil)
	return []struct {
		name string
		cmd  raftfsm.Command
	}{
		{name: "request", cmd: raftfsm.Command{
			Type: raftfsm.TypeRequest, Origin: 3, ReqID: 1 << 40, Session: sessA, Time: baseTime,
			ExtendedTypes: true, Auth: auth, Op: wire.OpCreate, Body: body,
		}},
		{name: "request without auth or body", cmd: raftfsm.Command{
			Type: raftfsm.TypeRequest, Origin: 1, ReqID: 2, Session: sessA, Time: -5, Op: wire.OpMulti,
			Auth: []wire.Id{}, Body: []byte{},
		}},
		{name: "request with max ids", cmd: raftfsm.Command{
			Type: raftfsm.TypeRequest, Origin: ^uint64(0), ReqID: ^uint64(0), Session: -1, Time: 1 << 62,
			Auth: []wire.Id{}, Op: wire.OpSetData, Body: []byte{1, 2, 3},
		}},
		{name: "create session", cmd: raftfsm.Command{
			Type: raftfsm.TypeCreateSession, Origin: 2, ReqID: 7, Session: sessB, Time: baseTime,
			Auth: []wire.Id{}, Timeout: 30000, Passwd: bytes.Repeat([]byte{0xab}, 16),
		}},
		{name: "create session nil passwd", cmd: raftfsm.Command{
			Type: raftfsm.TypeCreateSession, Session: sessB, Auth: []wire.Id{}, Timeout: 4000,
		}},
		{name: "create session empty passwd", cmd: raftfsm.Command{
			Type: raftfsm.TypeCreateSession, Session: sessB, Auth: []wire.Id{}, Timeout: 4000, Passwd: []byte{},
		}},
		{name: "close session", cmd: raftfsm.Command{
			Type: raftfsm.TypeCloseSession, Origin: 2, ReqID: 8, Session: sessA, Time: baseTime, Auth: auth,
		}},
		{name: "reap", cmd: raftfsm.Command{
			Type: raftfsm.TypeReap, Origin: 1, Time: baseTime, Auth: []wire.Id{}, Path: "/containers/c1",
		}},
		{name: "unknown ignorable type", cmd: raftfsm.Command{
			Type: raftfsm.Ignorable | 0x10, Origin: 1, Session: sessA, Time: baseTime, Auth: []wire.Id{},
		}},
		{name: "ignorable create session", cmd: raftfsm.Command{
			Type: raftfsm.Ignorable | raftfsm.TypeCreateSession, Session: sessB, Auth: []wire.Id{},
			Timeout: 9000, Passwd: []byte("pw"),
		}},
		{name: "ignorable request", cmd: raftfsm.Command{
			Type: raftfsm.Ignorable | raftfsm.TypeRequest, Session: sessB, Auth: []wire.Id{},
			Op: wire.OpDelete, Body: []byte{9, 9},
		}},
		{name: "ignorable reap", cmd: raftfsm.Command{
			Type: raftfsm.Ignorable | raftfsm.TypeReap, Auth: []wire.Id{}, Path: "/p",
		}},
	}
}

func TestCommand_RoundTrip(t *testing.T) {
	for _, tc := range sampleCommands() {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.cmd.Encode()
			assert.Equal(t, enc, tc.cmd.Append(nil), "Encode is Append(nil)")
			prefix := []byte("prefix")
			assert.Equal(t, append(prefix, enc...), tc.cmd.Append(bytes.Clone(prefix)), "Append appends")

			var got raftfsm.Command
			require.NoError(t, got.Decode(enc))
			assert.Equal(t, tc.cmd, got)
			assert.Equal(t, enc, got.Encode(), "re-encoding is stable")
		})
	}
}

func TestCommand_DecodeTruncated(t *testing.T) {
	for _, tc := range sampleCommands() {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.cmd.Encode()
			// A request's body is the rest of the entry, so a cut inside it
			// cannot be seen; every other cut can.
			end := len(enc)
			if tc.cmd.Type&^raftfsm.Ignorable == raftfsm.TypeRequest {
				end -= len(tc.cmd.Body)
			}
			for cut := 0; cut < end; cut++ {
				var c raftfsm.Command
				err := c.Decode(enc[:cut])
				assert.ErrorIs(t, err, raftfsm.ErrBadCommand, "cut at %d of %d", cut, len(enc))
			}
		})
	}
}

func TestCommand_DecodeGarbage(t *testing.T) {
	header := func(typ raftfsm.Type, authCount int32) []byte {
		b := []byte{byte(typ)}
		for range 4 {
			b = wire.AppendLong(b, 1)
		}
		b = wire.AppendInt(b, 0)
		return wire.AppendInt(b, authCount)
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{name: "nil", in: nil},
		{name: "empty", in: []byte{}},
		{name: "type byte only", in: []byte{byte(raftfsm.TypeRequest)}},
		{name: "negative auth count", in: header(raftfsm.TypeCloseSession, -2)},
		{name: "huge auth count", in: header(raftfsm.TypeCloseSession, 1<<30)},
		{name: "auth count beyond input", in: append(header(raftfsm.TypeCloseSession, 2), wire.Id{Scheme: "a", ID: "b"}.Append(nil)...)},
		{name: "negative scheme length", in: append(header(raftfsm.TypeCloseSession, 1), 0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0)},
		{name: "request without op", in: header(raftfsm.TypeRequest, 0)},
		{name: "session without timeout", in: header(raftfsm.TypeCreateSession, 0)},
		{name: "passwd length -2", in: wire.AppendInt(wire.AppendInt(header(raftfsm.TypeCreateSession, 0), 5), -2)},
		{name: "passwd too long", in: wire.AppendInt(wire.AppendInt(header(raftfsm.TypeCreateSession, 0), 5), 100)},
		{name: "reap without path", in: header(raftfsm.TypeReap, 0)},
		{name: "reap path too long", in: wire.AppendInt(header(raftfsm.TypeReap, 0), 1000)},
		{name: "text", in: []byte("hello, world")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c raftfsm.Command
			assert.NotPanics(t, func() {
				err := c.Decode(tc.in)
				assert.ErrorIs(t, err, raftfsm.ErrBadCommand)
			})
		})
	}
}

// FuzzCommandDecode checks that Decode never panics, that its errors wrap
// ErrBadCommand, and that what it accepts re-encodes stably.
func FuzzCommandDecode(f *testing.F) {
	for _, tc := range sampleCommands() {
		f.Add(tc.cmd.Encode())
	}
	f.Add([]byte{})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var c raftfsm.Command
		if err := c.Decode(data); err != nil {
			require.ErrorIs(t, err, raftfsm.ErrBadCommand)
			return
		}
		enc := c.Encode()
		var again raftfsm.Command
		require.NoError(t, again.Decode(enc), "re-decoding an accepted command")
		require.Equal(t, enc, again.Encode(), "decode -> encode -> decode is stable")
	})
}
