package raftfsm

import (
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
