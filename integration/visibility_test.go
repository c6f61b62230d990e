package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/visibility"
	"github.com/zkraft/zkraft/server/servertest"
)

// The visibility tool finds the roles in a cluster through srvr and
// measures every try, leader to follower and follower to follower.
func TestVisibility_MeasuresACluster(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	addrs := strings.Split(c.ConnectString(), ",")
	leader, followers, err := visibility.Roles(addrs, 0)
	require.NoError(t, err)
	assert.Equal(t, c.Addr(c.Leader()), leader)
	require.Len(t, followers, 2)
	for _, pair := range [][2]string{{leader, followers[0]}, {followers[0], followers[1]}} {
		res, err := visibility.Measure(visibility.Config{Write: pair[0], Read: pair[1], Tries: 20, Path: "/vis"})
		require.NoError(t, err)
		assert.Equal(t, 20, res.Tries)
		assert.Len(t, res.Delays, 20, "every try ends with the write seen")
		assert.LessOrEqual(t, res.StaleFirst, 20)
		assert.LessOrEqual(t, res.Percentile(0.5), res.Max())
	}
}
