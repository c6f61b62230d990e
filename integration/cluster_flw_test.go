package integration

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

func TestClusterFourLetterWords(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.Leader()
	stats, ok := zk.FLWSrvr(strings.Split(c.ConnectString(), ","), 5*time.Second)
	require.True(t, ok)
	modes := map[zk.Mode]int{}
	for i, st := range stats {
		modes[st.Mode]++
		if i == leader {
			assert.Equal(t, zk.ModeLeader, st.Mode)
		}
	}
	assert.Equal(t, map[zk.Mode]int{zk.ModeLeader: 1, zk.ModeFollower: 2}, modes)

	// The leader counts its followers as synced once they have reported.
	require.Eventually(t, func() bool {
		return strings.Contains(mntr(t, c.Addr(leader)), "zk_synced_followers\t2\n")
	}, 10*time.Second, 20*time.Millisecond)
	out := mntr(t, c.Addr(leader))
	assert.Contains(t, out, "zk_server_state\tleader\n")
	assert.Contains(t, out, "zk_peer_state\tleading - broadcast\n")
	assert.Contains(t, out, "zk_learners\t2\n")
	assert.Contains(t, mntr(t, c.Addr((leader+1)%3)), "zk_peer_state\tfollowing - broadcast\n")
}

func TestClusterObserver(t *testing.T) {
	c := servertest.NewCluster(t, 3, servertest.WithObservers(1))
	obs := c.Server(2)
	assert.Equal(t, "observer", obs.Mode())
	assert.NotEqual(t, 2, c.Leader(), "an observer never leads")
	cl := mustConnect(t, c.Addr(2))
	require.NoError(t, retryOnConnLoss(func() error { // a leader change under load costs a connection: retried
		_, err := cl.Create("/via-observer", []byte("o"), 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // a try whose connection was lost made it
		}
		return err
	}), "an observer forwards writes")
	other := mustConnect(t, c.Addr(0))
	_, err := other.Sync("/via-observer")
	require.NoError(t, err)
	data, _, err := other.Get("/via-observer")
	require.NoError(t, err)
	assert.Equal(t, "o", string(data))
}

// TestDurableConfAndDirs checks that conf names a durable server's
// directories and that dirs measures them, as ZooKeeper's do.
func TestDurableConfAndDirs(t *testing.T) {
	assert.Equal(t, "datadir_size: 0\nlogdir_size: 0\n", fourLetterWord(t, servertest.NewServer(t).ConnectString(), "dirs"),
		"in memory, nothing on disk")
	for _, store := range logStores {
		t.Run(store.name, func(t *testing.T) {
			srv := servertest.NewServer(t, servertest.WithDurable(), store.opt)
			conf := fourLetterWord(t, srv.ConnectString(), "conf")
			assert.Regexp(t, `(?m)^dataDir=/.+\ndataDirSize=\d+\ndataLogDir=/.+\ndataLogSize=[1-9]\d*\ntickTime=`, conf)
			dirs := fourLetterWord(t, srv.ConnectString(), "dirs")
			assert.Regexp(t, `^datadir_size: \d+\nlogdir_size: [1-9]\d*\n$`, dirs, "the Raft log has its files")
		})
	}
}

// mntr returns a server's mntr output.
func mntr(t testing.TB, addr string) string {
	t.Helper()
	return fourLetterWord(t, addr, "mntr")
}

// fourLetterWord sends word to a server and returns its answer.
func fourLetterWord(t testing.TB, addr, word string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(word))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	out, err := io.ReadAll(conn)
	require.NoError(t, err)
	return string(out)
}
