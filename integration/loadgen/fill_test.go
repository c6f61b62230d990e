package loadgen_test

import (
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestFill builds a small fill and checks the tree it leaves: every parent
// with its children, names and data of the asked sizes.
func TestFill(t *testing.T) {
	srv := servertest.NewServer(t)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	f := loadgen.Fill{Addr: srv.ConnectString(), Root: root, Parents: 3, Children: 7, NameLen: 16,
		DataLen: 32, Sessions: 2, InFlight: 4}
	_, err = f.Run()
	require.NoError(t, err)

	top := srv.Inspect().Tree(root)
	require.NotNil(t, top)
	require.Len(t, top.Children, 3)
	nodes := 0
	top.Walk(func(z *servertest.Znode) {
		if z == top {
			return
		}
		nodes++
		assert.Len(t, path.Base(z.Path), 16, z.Path)
		assert.Len(t, z.Data, 32, z.Path)
	})
	assert.Equal(t, f.Nodes(), nodes)
	for _, p := range top.Children {
		assert.Len(t, p.Children, 7, p.Path)
	}
}
