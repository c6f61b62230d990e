package tree_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Sessions used by the tests.
const (
	sessA int64 = 0x1000000000000a
	sessB int64 = 0x1000000000000b
)

// Identities used by the tests.
var (
	aliceID = wire.Id{Scheme: tree.SchemeDigest, ID: "alice:aGFzaA=="}
	bobID   = wire.Id{Scheme: tree.SchemeDigest, ID: "bob:Ym9i"}
	superID = wire.Id{Scheme: tree.SchemeSuper, ID: ""}
	ipID    = wire.Id{Scheme: tree.SchemeIP, ID: "10.1.2.3"}
)

// newTree returns a fresh tree whose invariants are checked when the test ends.
func newTree(t testing.TB) *tree.Tree {
	t.Helper()
	tr := tree.New()
	mustCheckAtEnd(t, tr)
	return tr
}

// mustCheckAtEnd registers a cleanup asserting that tr.Check() is nil.
func mustCheckAtEnd(t testing.TB, tr *tree.Tree) {
	t.Helper()
	t.Cleanup(func() {
		assert.NoError(t, tr.Check(), "tree invariants at the end of the test")
	})
}

// newCtx returns a write context at zxid for session sessA, with a time
// distinct from the zxid so that the two cannot be confused.
func newCtx(zxid int64, ids ...wire.Id) *tree.Context {
	return &tree.Context{Zxid: zxid, Time: timeAt(zxid), Session: sessA, Auth: ids}
}

// timeAt is the wall clock the tests stamp on the write at zxid.
func timeAt(zxid int64) int64 { return 1_700_000_000_000 + 1000*zxid }

// newCreate returns the arguments of a plain create with an open ACL.
func newCreate(path string, flags int32) tree.CreateArgs {
	return tree.CreateArgs{Op: wire.OpCreate, Path: path, ACL: wire.OpenACLUnsafe, Flags: flags, TTL: -1}
}

// mustCreate runs a create that must succeed and returns the created path.
func mustCreate(t testing.TB, tr *tree.Tree, c *tree.Context, a tree.CreateArgs) string {
	t.Helper()
	p, _, code := tr.Create(c, a)
	require.Equal(t, wire.CodeOK, code, "create %s flags %d", a.Path, a.Flags)
	return p
}

// mustCreatePath creates a persistent node with an open ACL at zxid.
func mustCreatePath(t testing.TB, tr *tree.Tree, zxid int64, path string, data []byte) {
	t.Helper()
	a := newCreate(path, wire.FlagPersistent)
	a.Data = data
	mustCreate(t, tr, newCtx(zxid), a)
}

// mustStat returns the Stat of a node that must exist.
func mustStat(t testing.TB, tr *tree.Tree, path string) wire.Stat {
	t.Helper()
	st, ok := tr.Stat(path)
	require.True(t, ok, "node %s must exist", path)
	return st
}

// mustSetACL replaces a node's ACL as the super user.
func mustSetACL(t testing.TB, tr *tree.Tree, zxid int64, path string, acl []wire.ACL) {
	t.Helper()
	_, code := tr.SetACL(newCtx(zxid, superID), path, acl, -1)
	require.Equal(t, wire.CodeOK, code, "setACL %s", path)
}

// mustAllPaths walks the tree from the root through Children and returns every
// path, sorted.
func mustAllPaths(t testing.TB, tr *tree.Tree) []string {
	t.Helper()
	paths := treePaths(tr)
	require.NotEmpty(t, paths)
	return paths
}

// treePaths is mustAllPaths for callers without a testing.TB (rapid's T). A
// node whose children cannot be listed is left out, which the callers'
// comparisons then catch.
func treePaths(tr *tree.Tree) []string {
	var out []string
	var walk func(p string)
	walk = func(p string) {
		out = append(out, p)
		names, _, code := tr.Children(p, []wire.Id{superID})
		if code != wire.CodeOK {
			return
		}
		for _, name := range names {
			if p == "/" {
				walk("/" + name)
			} else {
				walk(p + "/" + name)
			}
		}
	}
	walk("/")
	slices.Sort(out)
	return out
}

// sorted returns a sorted copy of ss.
func sorted(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

// trig builds a trigger.
func trig(path string, ev wire.EventType) tree.Trigger { return tree.Trigger{Path: path, Event: ev} }

// isReapable reports whether path is among the nodes Reapable returns at now.
func isReapable(tr *tree.Tree, path string, now int64) bool {
	return slices.Contains(tr.Reapable(now, 1<<30), path)
}

// noACL returns triggers without their ACLs, to compare paths and events.
func noACL(ts []tree.Trigger) []tree.Trigger {
	out := make([]tree.Trigger, len(ts))
	for i, t := range ts {
		out[i] = tree.Trigger{Path: t.Path, Event: t.Event}
	}
	return out
}
