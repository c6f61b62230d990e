package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestDurableSnapshotFollowsSnapCount: a durable server snapshots soon
// after every SnapCount writes, as ZooKeeper does, so that a restart
// replays no more than about that many. Raft looked every 10 to 20 s
// before, so a server restarted after a burst of a million writes
// replayed the whole burst (BenchmarkDurableRestart: 6.7 to 9.2 s at a
// million znodes, 2.6 s once snapshots followed).
func TestDurableSnapshotFollowsSnapCount(t *testing.T) {
	for _, store := range []string{server.LogStoreBolt, server.LogStoreWAL} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			srv := startServer(t, server.Config{ClientPortAddress: "127.0.0.1:0", DataDir: dir, LogStore: store, SnapCount: 100})
			t.Cleanup(func() { srv.Close() })
			root, err := loadgen.NewRoot(srv.ConnectString())
			require.NoError(t, err)
			f := loadgen.Fill{Addr: srv.ConnectString(), Root: root, Parents: 3, Children: 100, NameLen: 8,
				Sessions: 2, InFlight: 16}
			_, err = f.Run()
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				snaps, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
				return len(snaps) > 0
			}, 5*time.Second, 10*time.Millisecond, "no snapshot after %d writes with snapCount 100", f.Nodes())
			srv.Close()

			again := servertest.NewServer(t, servertest.WithConfig(func(c *server.Config) {
				c.DataDir, c.LogStore, c.SnapCount = dir, store, 100
			}))
			top := again.Inspect().Tree(root)
			require.NotNil(t, top)
			n := 0
			top.Walk(func(*servertest.Znode) { n++ })
			assert.Equal(t, f.Nodes()+1, n, "every node back after the restart")
		})
	}
}
