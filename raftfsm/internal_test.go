package raftfsm

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// TestFSM_CheckReportsOrphanEphemerals breaks the session table behind the
// FSM's back and checks that Check notices an ephemeral without a session.
func TestFSM_CheckReportsOrphanEphemerals(t *testing.T) {
	f := New(nil)
	apply := func(i uint64, c *Command) *Result {
		res, ok := f.Apply(&raft.Log{Index: i, Type: raft.LogCommand, Data: c.Encode()}).(*Result)
		require.True(t, ok)
		return res
	}
	apply(1, &Command{Type: TypeCreateSession, Session: 7, Timeout: 4000, Passwd: make([]byte, 16)})
	body := (&wire.CreateRequest{Path: "/e", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral}).Append(nil)
	require.Equal(t, wire.CodeOK, apply(2, &Command{Type: TypeRequest, Session: 7, Op: wire.OpCreate, Body: body}).Code)
	require.NoError(t, f.Check())
	delete(f.sessions, 7)
	assert.ErrorContains(t, f.Check(), "unknown session 0x7")
}

// TestCommand_DecodeSharesAuthLists checks that decoding through an
// authTable gives the same commands as Decode, with one list for each
// distinct encoding, and that the table stays bounded.
func TestCommand_DecodeSharesAuthLists(t *testing.T) {
	ip := []wire.Id{{Scheme: "ip", ID: "10.0.0.1"}}
	digest := []wire.Id{{Scheme: "ip", ID: "10.0.0.1"}, {Scheme: "digest", ID: "u:h"}}
	table := make(authTable)
	decode := func(auth []wire.Id) *Command {
		t.Helper()
		data := (&Command{Type: TypeRequest, Session: 7, Auth: auth, Op: wire.OpDelete, Body: []byte{1, 2}}).Encode()
		var plain, shared Command
		require.NoError(t, plain.Decode(data))
		require.NoError(t, shared.decode(data, table))
		require.Equal(t, plain, shared)
		return &shared
	}
	a, b := decode(ip), decode(ip)
	assert.Equal(t, ip, a.Auth)
	assert.Same(t, &a.Auth[0], &b.Auth[0], "one list for one encoding")
	c := decode(digest)
	assert.Equal(t, digest, c.Auth)
	assert.NotSame(t, &a.Auth[0], &c.Auth[0])
	assert.Equal(t, []wire.Id{}, decode(nil).Auth, "no ids: empty, as Decode gives")
	for i := range 2 * maxAuthLists {
		decode([]wire.Id{{Scheme: "ip", ID: fmt.Sprint(i)}})
	}
	assert.LessOrEqual(t, len(table), maxAuthLists)

	var bad Command
	data := (&Command{Type: TypeRequest, Auth: ip}).Encode()
	assert.ErrorIs(t, bad.decode(data[:45], table), ErrBadCommand, "ids cut short")
}
