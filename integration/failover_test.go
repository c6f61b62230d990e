package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/failover"
	"github.com/zkraft/zkraft/server/servertest"
)

// inProcess adapts a servertest cluster to failover.Cluster.
type inProcess struct{ c *servertest.Cluster }

func (p inProcess) Addrs() []string     { return strings.Split(p.c.ConnectString(), ",") }
func (p inProcess) Kill(i int) error    { p.c.Kill(i); return nil }
func (p inProcess) Restart(i int) error { p.c.Restart(i); return nil }

// The failover measurement kills the leader under load, sees a write
// succeed afterwards, and brings the cluster back for the next trial.
func TestFailover_MeasuresLeaderKills(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	trials, err := failover.Run(inProcess{c}, failover.Config{Trials: 2, Sessions: 2}, nil)
	require.NoError(t, err)
	require.Len(t, trials, 2)
	for _, tr := range trials {
		assert.Positive(t, tr.FirstAck)
		assert.GreaterOrEqual(t, tr.Leader, 0)
	}
}
