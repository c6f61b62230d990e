package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterReconfig removes a member with an incremental reconfig and
// adds it back, as a super user, and checks what ZooKeeper 3.8 shows the
// same client (measured against realzk with reconfigEnabled): the new
// configuration in /zookeeper/config with "version=" the reconfig's zxid in
// hex, its mzxid that zxid and its version still -1, NodeDataChanged to a
// watcher, and the answers to requests ZooKeeper refuses. The member
// removed follows on and serves its clients, as ZooKeeper's does.
func TestClusterReconfig(t *testing.T) {
	c := servertest.NewCluster(t, 3, servertest.WithConfig(func(cfg *server.Config) {
		cfg.ReconfigEnabled, cfg.SuperDigest = true, superDigest
		// Out of reach of the test: the member removed must stop serving
		// because it was removed, not because it has no leader.
		cfg.SyncLimit = 10000
	}))
	l := c.Leader()
	gone, other := (l+1)%3, (l+2)%3
	admin := mustConnect(t, c.Addr(other))
	require.NoError(t, admin.AddAuth("digest", []byte("super:test")))
	plain := mustConnect(t, c.Addr(l))
	before, _, err := admin.Get("/zookeeper/config")
	require.NoError(t, err)
	line := configLine(t, string(before), c.Server(gone).ServerID())
	goneID := fmt.Sprint(c.Server(gone).ServerID())

	_, err = plain.IncrementalReconfig(nil, []string{goneID}, -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "only a super user may reconfig")
	_, err = admin.IncrementalReconfig(nil, []string{goneID}, 0x12345)
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	_, err = admin.IncrementalReconfig(nil, []string{"1", "2", "3"}, -1)
	assert.ErrorIs(t, err, zk.ErrBadArguments, "no configuration of fewer than two voters")
	_, err = admin.IncrementalReconfig([]string{"server.9=127.0.0.1:1:2"}, nil, -1)
	assert.ErrorIs(t, err, zk.ErrBadArguments, "a joining member must name its client port")
	_, err = admin.IncrementalReconfig(unreachable(t, 7, 8, 9), nil, -1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-13", "NEWCONFIGNOQUORUM: only three of six voters would be in touch")

	_, _, watch, err := plain.GetW("/zookeeper/config")
	require.NoError(t, err)
	onGone, _ := mustConnectInOrder(t, []string{c.Addr(gone)}, 10*time.Second)
	st, err := admin.IncrementalReconfig(nil, []string{goneID}, -1)
	require.NoError(t, err)
	data, got, err := admin.Get("/zookeeper/config")
	require.NoError(t, err)
	assert.Equal(t, st.Mzxid, got.Mzxid)
	assert.Equal(t, int32(-1), got.Version, "a reconfig leaves the config node's version at -1")
	assert.NotContains(t, string(data), line)
	assert.True(t, strings.HasSuffix(string(data), fmt.Sprintf("\nversion=%x", got.Mzxid)), "config %q", data)
	select {
	case ev := <-watch:
		assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("no NodeDataChanged for /zookeeper/config")
	}
	_, err = admin.IncrementalReconfig(nil, nil, got.Mzxid+1)
	assert.ErrorIs(t, err, zk.ErrBadVersion, "the version is the last reconfig's zxid")

	// The two members left commit writes on their own. The member removed
	// follows on without a vote and keeps its clients, as a ZooKeeper
	// follower that a reconfig removes stays connected to its leader as a
	// learner: its client sees the writes made since.
	_, err = admin.Create("/after-remove", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = onGone.Sync("/")
	require.NoError(t, err)
	ok, _, err := onGone.Exists("/after-remove")
	require.NoError(t, err)
	assert.True(t, ok, "the member removed follows the writes")
	assert.Contains(t, fourLetterWord(t, c.Addr(gone), "srvr"), "Mode: follower")

	// Back again, with its client port, from the version just read.
	_, err = admin.IncrementalReconfig([]string{line + ";" + hostPort(t, c.Addr(gone))}, nil, got.Mzxid)
	require.NoError(t, err)
	data, _, err = admin.Get("/zookeeper/config")
	require.NoError(t, err)
	assert.Contains(t, string(data), line+";")
	back := mustConnect(t, c.Addr(gone))
	_, err = back.Sync("/")
	require.NoError(t, err)
	ok, _, err = back.Exists("/after-remove")
	require.NoError(t, err)
	assert.True(t, ok, "the member added back caught up")
}

func TestReconfig_DisabledAndStandalone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members int
		enabled bool
		want    string
	}{
		{"disabled, cluster", 3, false, zk.ErrReconfigDisabled.Error()},
		{"disabled, standalone", 1, false, zk.ErrReconfigDisabled.Error()},
		{"enabled, standalone", 1, true, "-6"}, // UNIMPLEMENTED, as ZooKeeper's standalone server answers
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := servertest.WithConfig(func(cfg *server.Config) { cfg.ReconfigEnabled, cfg.SuperDigest = tc.enabled, superDigest })
			addr := ""
			if tc.members == 1 {
				addr = servertest.NewServer(t, opt).Addr().String()
			} else {
				addr = servertest.NewCluster(t, tc.members, opt).Addr(0)
			}
			cl := mustConnect(t, addr)
			require.NoError(t, cl.AddAuth("digest", []byte("super:test")))
			_, err := cl.IncrementalReconfig(nil, []string{"3"}, -1)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = cl.Create("/still-serving", nil, 0, zk.WorldACL(zk.PermAll))
			assert.NoError(t, err)
		})
	}
}

// configLine returns member id's line of a /zookeeper/config text.
func configLine(t *testing.T, config string, id int) string {
	t.Helper()
	for l := range strings.Lines(config) {
		if strings.HasPrefix(l, fmt.Sprintf("server.%d=", id)) {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no server.%d in %q", id, config)
	return ""
}

// unreachable returns server lines for members ids on distinct ports
// nothing listens on.
func unreachable(t *testing.T, ids ...int) []string {
	t.Helper()
	// Every port is held until all are chosen, so that the OS cannot hand
	// the same one out twice (a line with a repeated port is refused as
	// bad arguments, not for want of a quorum); then all are let go, so
	// that nothing answers on them.
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	port := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		return p
	}
	var lines []string
	for _, id := range ids {
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%s:%s;%s", id, port(), port(), port()))
	}
	return lines
}

func hostPort(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return "127.0.0.1:" + port
}

// TestClusterReconfig_LeaderRemovedThenBack removes the leader and at once
// adds it back, as go-zookeeper's own TestIntegration_Reconfig does: the
// second reconfig finds the first done (ZooKeeper answers it), although the
// member that now leads may not yet have brought Raft's configuration in
// line when it arrives. It once got RECONFIGINPROGRESS (-14).
func TestClusterReconfig_LeaderRemovedThenBack(t *testing.T) {
	c := servertest.NewCluster(t, 3, servertest.WithConfig(func(cfg *server.Config) {
		cfg.ReconfigEnabled, cfg.SuperDigest = true, superDigest
		cfg.SyncLimit = 10000
	}))
	for round := range 3 {
		l := c.Leader()
		// On a follower, which the handover may make the leader.
		admin := mustConnect(t, c.Addr((l+1+round%2)%3))
		require.NoError(t, admin.AddAuth("digest", []byte("super:test")))
		cfg, _, err := admin.Get("/zookeeper/config")
		require.NoError(t, err)
		id := c.Server(l).ServerID()
		line := configLine(t, string(cfg), id)
		_, err = admin.IncrementalReconfig(nil, []string{fmt.Sprint(id)}, -1)
		require.NoError(t, err, "round %d: remove the leader", round)
		_, err = admin.IncrementalReconfig([]string{line + ";" + hostPort(t, c.Addr(l))}, nil, -1)
		require.NoError(t, err, "round %d: add it back at once", round)
		_, err = c.WaitForLeader(t.Context())
		require.NoError(t, err)
		admin.Close()
	}
}
