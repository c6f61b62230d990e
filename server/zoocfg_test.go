package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
)

func TestParseZooCfg(t *testing.T) {
	in := `# ZooKeeper's sample, more or less
tickTime=2000
initLimit=10
dataDir=/var/lib/zookeeper
clientPort = 2182
clientPortAddress: 0.0.0.0
maxClientCnxns 0
minSessionTimeout=-1
maxSessionTimeout=90000
4lw.commands.whitelist=srvr, ruok,\
  mntr
jute.maxbuffer=0x200000
extendedTypesEnabled=true
znode.container.checkIntervalMs=1500
zkraft.logStore=wal
zookeeper.nio.sessionlessCnxnTimeout=2500
clientTcpKeepAlive=true
fancyNewKey=1
! a comment too
`
	cfg, unknown, err := server.ParseZooCfg(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, cfg.TickTime)
	assert.Equal(t, "0.0.0.0:2182", cfg.ClientPortAddress)
	assert.Equal(t, -1, cfg.MaxClientCnxns, "0 in zoo.cfg means no limit")
	assert.Zero(t, cfg.MinSessionTimeout, "-1 means the default")
	assert.Equal(t, 90*time.Second, cfg.MaxSessionTimeout)
	assert.Equal(t, []string{"srvr", "ruok", "mntr"}, cfg.FourLetterWords)
	assert.Equal(t, 0x200000, cfg.JuteMaxBuffer)
	assert.True(t, cfg.ExtendedTypesEnabled)
	assert.Equal(t, 1500*time.Millisecond, cfg.ContainerCheckInterval)
	assert.Equal(t, 2500*time.Millisecond, cfg.SessionlessCnxnTimeout)
	assert.True(t, cfg.ClientTCPKeepAlive)
	assert.Equal(t, "/var/lib/zookeeper", cfg.DataDir)
	assert.Equal(t, server.LogStoreWAL, cfg.LogStore)
	assert.Equal(t, []string{"fancyNewKey"}, unknown, "initLimit and dataDir are known")
}

func TestParseZooCfg_Errors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"tick not a number", "tickTime=fast\n", "line 1: tickTime=fast"},
		{"negative tick", "tickTime=-5\n", "positive"},
		{"bad port", "clientPort=99999\n", "clientPort=99999"},
		{"bad bool", "extendedTypesEnabled=maybe\n", "extendedTypesEnabled"},
		{"two errors", "tickTime=x\nmaxClientCnxns=y\n", "maxClientCnxns=y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := server.ParseZooCfg(strings.NewReader(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseZooCfg_PropertiesSyntax(t *testing.T) {
	cfg, _, err := server.ParseZooCfg(strings.NewReader("clientPortAddress=127.0.0\\u002e1\n   tickTime   100\n"))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:2181", cfg.ClientPortAddress)
	assert.Equal(t, 100*time.Millisecond, cfg.TickTime)
}

func TestConfig_Defaults(t *testing.T) {
	cfg := server.DefaultConfig()
	assert.Equal(t, 2*time.Second, cfg.TickTime)
	assert.Equal(t, 4*time.Second, cfg.MinSessionTimeout)
	assert.Equal(t, 40*time.Second, cfg.MaxSessionTimeout)
	assert.Equal(t, "127.0.0.1:2181", cfg.ClientPortAddress)
	assert.Equal(t, 60, cfg.MaxClientCnxns)
	assert.Equal(t, []string{"srvr"}, cfg.FourLetterWords)
	assert.Equal(t, 0xfffff, cfg.JuteMaxBuffer)
	assert.NoError(t, cfg.Validate())
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"min above max", server.Config{MinSessionTimeout: time.Minute, MaxSessionTimeout: time.Second}, "minSessionTimeout"},
		{"bad address", server.Config{ClientPortAddress: "nope"}, "clientPortAddress"},
		{"tiny buffer", server.Config{JuteMaxBuffer: 10}, "jute.maxbuffer"},
		{"server id", server.Config{ServerID: 300}, "server id"},
		{"log store", server.Config{LogStore: "leveldb"}, `log store "leveldb"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = server.New(tc.cfg)
			assert.Error(t, err, "New validates too")
		})
	}
}

func TestParseZooCfg_Servers(t *testing.T) {
	in := `dataDir=/data
dataLogDir=/txlog
snapCount=5000
autopurge.snapRetainCount=5
server.1=10.0.0.1:2888:3888
server.2=zk2.example:2888:3888:participant;2181
server.3=[::1]:2889:3889:observer
`
	cfg, unknown, err := server.ParseZooCfg(strings.NewReader(in))
	require.NoError(t, err)
	assert.Empty(t, unknown)
	assert.Equal(t, []server.Peer{
		{ID: 1, RaftAddr: "10.0.0.1:2888", ForwardAddr: "10.0.0.1:3888"},
		{ID: 2, RaftAddr: "zk2.example:2888", ForwardAddr: "zk2.example:3888", Client: "0.0.0.0:2181"},
		{ID: 3, RaftAddr: "[::1]:2889", ForwardAddr: "[::1]:3889", Observer: true},
	}, cfg.Servers)
	assert.Equal(t, "/txlog", cfg.DataLogDir)
	assert.Equal(t, 5000, cfg.SnapCount)
	assert.Equal(t, 5, cfg.SnapRetainCount)

	for _, bad := range []string{"server.0=h:1:2", "server.x=h:1:2", "server.1=h:1", "server.1=h:1:2:king", "server.1=h:0:2", "server.1=:1:2"} {
		_, _, err := server.ParseZooCfg(strings.NewReader(bad + "\n"))
		assert.Error(t, err, bad)
	}
}

func TestReadMyID(t *testing.T) {
	dir := t.TempDir()
	_, err := server.ReadMyID(dir)
	assert.Error(t, err, "no myid file")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "myid"), []byte("3\n"), 0o600))
	id, err := server.ReadMyID(dir)
	require.NoError(t, err)
	assert.Equal(t, 3, id)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "myid"), []byte("300"), 0o600))
	_, err = server.ReadMyID(dir)
	assert.Error(t, err)
}

func TestConfig_ValidateServers(t *testing.T) {
	peers := []server.Peer{{ID: 1, RaftAddr: "h:1", ForwardAddr: "h:2"}, {ID: 2, RaftAddr: "h:3", ForwardAddr: "h:4"}}
	assert.NoError(t, server.Config{Servers: peers, ServerID: 2}.Validate())
	assert.ErrorContains(t, server.Config{Servers: peers, ServerID: 3}.Validate(), "not among the servers")
	dup := append(peers, server.Peer{ID: 2, RaftAddr: "h:5", ForwardAddr: "h:6"})
	assert.ErrorContains(t, server.Config{Servers: dup, ServerID: 1}.Validate(), "distinct")
	observers := []server.Peer{{ID: 1, RaftAddr: "h:1", ForwardAddr: "h:2", Observer: true}}
	assert.ErrorContains(t, server.Config{Servers: observers, ServerID: 1}.Validate(), "voting")
}
