package integration

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

func TestSmoke(t *testing.T) {
	srv := servertest.NewServer(t)
	c := mustConnect(t, srv.ConnectString())
	p, err := c.Create("/a", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	assert.Equal(t, "/a", p)
	data, st, err := c.Get("/a")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	assert.Equal(t, int32(5), st.DataLength)
	_, _, ch, err := c.GetW("/a")
	require.NoError(t, err)
	_, err = c.Set("/a", []byte("x"), 0)
	require.NoError(t, err)
	assert.Equal(t, zk.EventNodeDataChanged, waitEvent(t, ch).Type)
	kids, _, err := c.Children("/")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "zookeeper"}, kids)
	_, err = c.Create("/a", nil, 0, zk.WorldACL(zk.PermAll))
	assert.ErrorIs(t, err, zk.ErrNodeExists)
}
