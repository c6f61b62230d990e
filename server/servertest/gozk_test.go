package servertest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// Code written against go-zookeeper's test cluster runs on zkraft's with an
// import change: this is the shape of its own tests.
func TestStartTestCluster_GoZookeeperShape(t *testing.T) {
	for _, size := range []int{1, 3} {
		t.Run(map[int]string{1: "one server", 3: "three"}[size], func(t *testing.T) {
			ts, err := servertest.StartTestCluster(t, size, nil, nil)
			require.NoError(t, err)
			defer ts.Stop()
			zkConn, events, err := ts.ConnectWithOptions(15*time.Second, zk.WithLogInfo(false))
			require.NoError(t, err)
			defer zkConn.Close()
			waitState(t, events, zk.StateHasSession)
			_, err = zkConn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)

			if size > 1 {
				ts.StopServer(zkConn.Server()) // the client moves to another member
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					data, _, err := zkConn.Get("/kept")
					assert.NoError(c, err)
					assert.Equal(c, []byte("v"), data)
				}, 30*time.Second, 10*time.Millisecond)
			}
			require.NoError(t, ts.StopAllServers())
			require.NoError(t, ts.StartAllServers())
			c2, ev2, err := ts.Connect(0)
			require.NoError(t, err)
			defer c2.Close()
			waitState(t, ev2, zk.StateHasSession)
			data, _, err := c2.Get("/kept")
			require.NoError(t, err, "durable, as ZooKeeper's test servers are")
			assert.Equal(t, []byte("v"), data)
		})
	}
}
