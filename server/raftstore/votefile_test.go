package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onDisk reads the record's newer good copy as a restart after a crash
// would, while the record is open.
func onDisk(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	buf, err := os.ReadFile(filepath.Join(dir, VoteFile))
	require.NoError(t, err)
	require.Len(t, buf, 2*voteCopy)
	seq0, vals0, ok0 := decodeVoteCopy(buf[:voteCopy])
	seq1, vals1, ok1 := decodeVoteCopy(buf[voteCopy:])
	require.True(t, ok0 && ok1)
	if seq1 > seq0 {
		return vals1
	}
	return vals0
}

// TestVoteRecord_AVoteIsWrittenWhole: a vote's term waits in memory for
// the candidate, so that a crash between them finds the vote before; any
// other value is written at once, and writes a term waiting along with it;
// Close writes a term left waiting.
func TestVoteRecord_AVoteIsWrittenWhole(t *testing.T) {
	term, cand := []byte("LastVoteTerm"), []byte("LastVoteCand")
	dir := t.TempDir()
	r, _, err := OpenVoteRecord(dir, nil, false, nil)
	require.NoError(t, err)
	require.NoError(t, r.SetUint64([]byte("CurrentTerm"), 7))
	assert.Equal(t, u64(7), onDisk(t, dir)["CurrentTerm"], "the term is written at once")

	require.NoError(t, r.SetUint64(term, 7))
	assert.NotContains(t, onDisk(t, dir), string(term), "a vote's term waits for its candidate")
	got, err := r.GetUint64(term)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), got, "but Raft reads it")
	require.NoError(t, r.Set(cand, []byte("node-2")))
	vals := onDisk(t, dir)
	assert.Equal(t, u64(7), vals[string(term)])
	assert.Equal(t, []byte("node-2"), vals[string(cand)])

	// Another value written between the two halves (the high-water mark)
	// writes the term along; the candidate is still written after.
	require.NoError(t, r.SetUint64(term, 8))
	require.NoError(t, r.RaiseMark(func() (uint64, error) { return 100, nil }))
	vals = onDisk(t, dir)
	assert.Equal(t, u64(8), vals[string(term)])
	assert.Equal(t, []byte("node-2"), vals[string(cand)], "the old candidate, voted for in no term but its own")
	require.NoError(t, r.Set(cand, []byte("node-3")))
	assert.Equal(t, []byte("node-3"), onDisk(t, dir)[string(cand)])

	require.NoError(t, r.SetUint64(term, 9))
	require.NoError(t, r.Close())
	assert.Equal(t, u64(9), onDisk(t, dir)[string(term)], "Close writes a term left waiting")
}

// TestVoteRecord_RaftWritesAVoteWhole holds hashicorp/raft to what the
// record relies on: a vote sets its term, then its candidate, so that no
// term is left waiting in memory. Three members elect a leader; each member's record, read
// from disk as a crash would leave it, holds its vote in the leader's term.
func TestVoteRecord_RaftWritesAVoteWhole(t *testing.T) {
	const n = 3
	type node struct {
		dir  string
		rec  *VoteRecord
		raft *raft.Raft
	}
	nodes := make([]*node, n)
	transports := make([]*raft.InmemTransport, n)
	var servers []raft.Server
	for i := range nodes {
		addr, tr := raft.NewInmemTransport("")
		transports[i] = tr
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint(i + 1)), Address: addr})
	}
	for i := range transports {
		for j := range transports {
			if i != j {
				transports[i].Connect(transports[j].LocalAddr(), transports[j])
			}
		}
	}
	for i := range nodes {
		dir := t.TempDir()
		rec, _, err := OpenVoteRecord(dir, nil, false, nil)
		require.NoError(t, err)
		cfg := raft.DefaultConfig()
		cfg.LocalID = servers[i].ID
		cfg.Logger = hclog.NewNullLogger()
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
		logs := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		require.NoError(t, raft.BootstrapCluster(cfg, logs, rec, snaps, transports[i], raft.Configuration{Servers: servers}))
		r, err := raft.NewRaft(cfg, &raft.MockFSM{}, logs, rec, snaps, transports[i])
		require.NoError(t, err)
		nodes[i] = &node{dir: dir, rec: rec, raft: r}
		t.Cleanup(func() {
			require.NoError(t, r.Shutdown().Error())
			require.NoError(t, rec.Close())
		})
	}
	var leader raft.ServerAddress
	var term uint64
	require.Eventually(t, func() bool {
		leader, _ = nodes[0].raft.LeaderWithID()
		if leader == "" {
			return false
		}
		for _, nd := range nodes {
			if l, _ := nd.raft.LeaderWithID(); l != leader {
				return false
			}
		}
		term, _ = nodes[0].rec.GetUint64([]byte("CurrentTerm"))
		return true
	}, 10*time.Second, 5*time.Millisecond)

	voted := 0
	for _, nd := range nodes {
		vals := onDisk(t, nd.dir)
		if string(vals["LastVoteCand"]) == string(leader) && string(vals["LastVoteTerm"]) == string(u64(term)) {
			voted++
		}
		nd.rec.mu.Lock()
		assert.False(t, nd.rec.termPending, "no vote's term waits in memory: Raft set the candidate after it")
		nd.rec.mu.Unlock()
	}
	assert.GreaterOrEqual(t, voted, 2, "a majority's votes for the leader in its term are on disk")
}
