package integration

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// superDigest is go-zookeeper's test harness superuser: "super" with password "test".
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

func TestSuperDigest_PassesEveryACL(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithConfig(func(c *server.Config) { c.SuperDigest = superDigest }))
	owner := mustConnect(t, srv.ConnectString())
	require.NoError(t, owner.AddAuth("digest", []byte("alice:secret")))
	_, err := owner.Create("/private", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	require.NoError(t, err)

	stranger := mustConnect(t, srv.ConnectString())
	_, _, err = stranger.Get("/private")
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	require.NoError(t, stranger.AddAuth("digest", []byte("super:wrong")))
	_, _, err = stranger.Get("/private")
	assert.ErrorIs(t, err, zk.ErrNoAuth, "a wrong super password is just another digest")

	admin := mustConnect(t, srv.ConnectString())
	require.NoError(t, admin.AddAuth("digest", []byte("super:test")))
	data, _, err := admin.Get("/private")
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))
	_, err = admin.Set("/private", []byte("y"), -1)
	assert.NoError(t, err)
	assert.NoError(t, admin.Delete("/private", -1))
}
