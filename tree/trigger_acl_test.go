package tree_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Each trigger carries the ACL that decides who may hear of it, as
// ZooKeeper 3.8 (with the fix for CVE-2024-23944) checks it at delivery:
// the created, changed or deleted node's own ACL (a deleted node's as it
// was), and the parent's for NodeChildrenChanged; an ACL changed by setACL
// counts from then on.
func TestTree_TriggersCarryTheACLToCheck(t *testing.T) {
	tr := newTree(t)
	owner := wire.Id{Scheme: tree.SchemeDigest, ID: "o:secret"}
	ownerOnly := []wire.ACL{{Perms: wire.PermAll, ID: owner}}
	readable := []wire.ACL{{Perms: wire.PermRead, ID: wire.Id{Scheme: tree.SchemeWorld, ID: "anyone"}},
		{Perms: wire.PermAll, ID: owner}}
	parent := tree.CreateArgs{Op: wire.OpCreate, Path: "/p", ACL: ownerOnly, TTL: -1}
	mustCreate(t, tr, newCtx(1, owner), parent)

	c := newCtx(2, owner)
	mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreate, Path: "/p/x", ACL: readable, TTL: -1})
	require.Len(t, c.Triggers, 2)
	assert.Equal(t, readable, c.Triggers[0].ACL, "NodeCreated: the new node's ACL")
	assert.Equal(t, ownerOnly, c.Triggers[1].ACL, "NodeChildrenChanged: the parent's ACL")

	c = newCtx(3, owner)
	_, code := tr.SetACL(c, "/p/x", ownerOnly, -1)
	require.Equal(t, wire.CodeOK, code)
	assert.Empty(t, c.Triggers, "setACL fires nothing")

	c = newCtx(4, owner)
	_, code = tr.SetData(c, "/p/x", []byte("d"), -1)
	require.Equal(t, wire.CodeOK, code)
	require.Len(t, c.Triggers, 1)
	assert.Equal(t, ownerOnly, c.Triggers[0].ACL, "NodeDataChanged: the node's ACL now")

	c = newCtx(5, owner)
	require.Equal(t, wire.CodeOK, tr.Delete(c, "/p/x", -1))
	require.Len(t, c.Triggers, 2)
	assert.Equal(t, ownerOnly, c.Triggers[0].ACL, "NodeDeleted: the deleted node's ACL")
	assert.Equal(t, ownerOnly, c.Triggers[1].ACL, "NodeChildrenChanged: the parent's ACL")

	// An ephemeral deleted with its session: its own ACL.
	c = newCtx(6, owner)
	mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreate, Path: "/e", ACL: readable, Flags: wire.FlagEphemeral, TTL: -1})
	c = newCtx(7)
	tr.CloseSession(c, sessA)
	require.Len(t, c.Triggers, 2)
	assert.Equal(t, readable, c.Triggers[0].ACL)
	assert.Equal(t, wire.OpenACLUnsafe, c.Triggers[1].ACL, "the root's ACL")
}
