package member

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A member's ping is answered while its process runs; once it is gone the
// ping fails at once with an error that is not a timeout, which is what
// lets a follower stand without waiting out Raft's timeout.
func TestPing_AnsweredWhileTheMemberRuns(t *testing.T) {
	nodes := startNodes(t, 3, nil)
	require.NoError(t, nodes[0].ping(2))
	nodes[1].Stop()
	nodes[1].Wait()
	err := nodes[0].ping(2)
	require.Error(t, err)
	assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "a definite failure, not a timeout: %v", err)
}

// When the leader's process goes, its connections break and the followers
// elect a new leader at once, long before Raft's heartbeat timeout (here
// ten seconds) would have let them stand, in one election round.
func TestFailover_AMajorityThatFindsTheLeaderGoneElectsAtOnce(t *testing.T) {
	nodes := startNodes(t, 3, func(c *Config) { c.RaftTimeout = 10 * time.Second })
	old := leaderOf(nodes)
	waitKnownLeader(t, nodes, old)
	term := old.raftNow().CurrentTerm()
	stopped := time.Now()
	old.Stop()
	old.Wait()
	var next *Node
	waitFor(t, 5*time.Second, "a new leader", func() bool {
		next = leaderOf(nodes)
		return next != nil
	})
	t.Logf("new leader after %v", time.Since(stopped))
	assert.Equal(t, term+1, next.raftNow().CurrentTerm(), "one election, no split vote")
}

// A member cut off from a leader the others still reach does not stand:
// it would raise its term and depose that leader once the link is back.
func TestFailover_AMemberCutOffAloneDoesNotStand(t *testing.T) {
	links := NewLinks()
	var logged syncBuffer
	nodes := startNodes(t, 3, func(c *Config) {
		c.RaftTimeout = 10 * time.Second
		c.Links = links
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	leader := leaderOf(nodes)
	waitKnownLeader(t, nodes, leader)
	cutOff := followerOf(nodes, leader)
	term := leader.raftNow().CurrentTerm()
	links.Cut(leader.cfg.ServerID, cutOff.cfg.ServerID)
	cutOff.leaderLinkBroken(leader.cfg.ServerID)
	eventually(t, "the probe to find the leader gone for a minority only", func() bool {
		return strings.Contains(logged.String(), "gone for a minority only")
	})
	assert.Same(t, leader, leaderOf(nodes))
	assert.Equal(t, raft.Follower, cutOff.raftNow().State())
	for _, n := range nodes {
		assert.Equal(t, term, n.raftNow().CurrentTerm(), "member %d's term", n.cfg.ServerID)
	}
}

// waitKnownLeader waits until every member knows leader leads: a member
// that has not heard from it yet has no link to it that could break.
func waitKnownLeader(t *testing.T, nodes []*Node, leader *Node) {
	t.Helper()
	eventually(t, "every member to know the leader", func() bool {
		for _, n := range nodes {
			if _, id := n.raftNow().LeaderWithID(); id != raft.ServerID(itoa(leader.cfg.ServerID)) {
				return false
			}
		}
		return true
	})
}

// syncBuffer is a bytes.Buffer that several goroutines may write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestQuorumReached(t *testing.T) {
	tests := []struct {
		name   string
		views  []goneView
		voters int
		want   bool
	}{
		{"itself and one other of three", []goneView{{id: 1, reached: true}, {id: 2, reached: true}, {id: 3}}, 3, true},
		{"itself alone of three", []goneView{{id: 1, reached: true}, {id: 2}, {id: 3}}, 3, false},
		{"two of four", []goneView{{id: 1, reached: true}, {id: 2, reached: true}, {id: 3}, {id: 4}}, 4, false},
		{"three of five", []goneView{{id: 1, reached: true}, {id: 2, reached: true}, {id: 5, reached: true}}, 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, quorumReached(tt.views, tt.voters))
		})
	}
}

func TestPickCandidate(t *testing.T) {
	at := func(term, index uint64) logEnd { return logEnd{term: term, index: index} }
	tests := []struct {
		name   string
		views  []goneView
		voters int
		want   int // 0: no candidate
	}{
		{"the most complete log wins", []goneView{{1, true, true, at(2, 10)}, {2, true, true, at(2, 12)}}, 3, 2},
		{"a later term beats a longer log", []goneView{{1, true, true, at(3, 5)}, {2, true, true, at(2, 12)}}, 3, 1},
		{"a tie goes to the lowest id", []goneView{{3, true, true, at(2, 12)}, {2, true, true, at(2, 12)}}, 3, 2},
		{"members that still reach the leader are not counted", []goneView{{1, true, true, at(2, 10)}, {2, true, false, at(2, 99)}}, 3, 0},
		{"a majority of five", []goneView{{1, true, true, at(2, 10)}, {2, true, true, at(2, 9)}, {4, true, true, at(2, 9)}, {5, true, false, at(2, 12)}}, 5, 1},
		{"two of five is no majority", []goneView{{1, true, true, at(2, 10)}, {2, true, true, at(2, 9)}, {4, true, false, at(2, 9)}}, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			best, ok := pickCandidate(tt.views, tt.voters)
			if tt.want == 0 {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, best.id)
		})
	}
}

// A vote request that meets a connection a restarted member left in the
// pool is sent again; one refused outright is not.
func TestRetryStale(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		name  string
		errs  []error
		calls int
		fails bool
	}{
		{"first try", []error{nil}, 1, false},
		{"after stale connections", []error{io.EOF, reset, errors.New("msgpack decode error [pos 0]: read tcp: connection reset by peer"), nil}, 4, false},
		{"a refused dial is final", []error{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, 1, true},
		{"gives up after the pool", []error{io.EOF, io.EOF, io.EOF, io.EOF, io.EOF, io.EOF, io.EOF}, maxPooledConns + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := retryStale(func() error {
				calls++
				return tt.errs[calls-1]
			})
			assert.Equal(t, tt.calls, calls)
			assert.Equal(t, tt.fails, err != nil, "error: %v", err)
		})
	}
}

// A member cut off from the leader stops serving syncLimit ticks after its
// probe found the leader gone, not after Raft's heartbeat timeout on top
// (30 s here), as a ZooKeeper follower goes LOOKING when its connection to
// the leader breaks; once it hears from the leader again it serves again.
func TestQuorumLoss_CountsFromWhenTheLeaderWasFoundGone(t *testing.T) {
	links := NewLinks()
	nodes := startNodes(t, 3, func(c *Config) {
		c.RaftTimeout = 30 * time.Second
		c.TickTime, c.SyncLimit = 50*time.Millisecond, 2
		c.Links = links
	})
	leader := leaderOf(nodes)
	waitKnownLeader(t, nodes, leader)
	cutOff := followerOf(nodes, leader)
	eventually(t, "the member to serve", cutOff.Serving)
	for _, n := range nodes {
		if n != cutOff {
			links.Cut(n.cfg.ServerID, cutOff.cfg.ServerID)
		}
	}
	cutOff.leaderLinkBroken(leader.cfg.ServerID)
	eventually(t, "the member cut off to stop serving", func() bool { return !cutOff.Serving() })
	_, id := cutOff.raftNow().LeaderWithID()
	assert.Equal(t, raft.ServerID(itoa(leader.cfg.ServerID)), id, "Raft has not noticed yet")
	assert.Positive(t, cutOff.Looking(), "neither serving nor knowing a leader: looking, as ZooKeeper says")

	links.Heal()
	eventually(t, "the member to know its leader again", func() bool {
		cutOff.servingMu.Lock()
		defer cutOff.servingMu.Unlock()
		select {
		case <-cutOff.leaderCh:
			return true
		default:
			return false
		}
	})
	assert.Zero(t, cutOff.Looking(), "a member that knows its leader is not looking, even while it catches up")
	eventually(t, "the member to serve again once the leader reaches it", cutOff.Serving)
	assert.Zero(t, cutOff.Looking())
}

// A leader whose pings fail while Raft still hears from it (its forward
// port out of reach) is checked once more after it was found gone, and
// then taken as heard from: not lost and found again at every heartbeat.
func TestRecheckGone_OnceWhileRaftHearsTheLeader(t *testing.T) {
	nodes := startNodes(t, 3, func(c *Config) {
		// One leader throughout, on a loaded machine too: under 100 ms
		// timeouts an election could come between the steps below.
		c.RaftTimeout = time.Second
		c.PeerVia = map[string]string{}
		for _, p := range c.Servers {
			if p.ID != c.ServerID {
				c.PeerVia[p.ForwardAddr] = "127.0.0.1:1" // refused
			}
		}
	})
	leader := leaderOf(nodes)
	waitKnownLeader(t, nodes, leader)
	f := followerOf(nodes, leader)
	f.leaderLinkBroken(leader.cfg.ServerID)
	// The probe's stamp is replaced by the recheck's at the next contact,
	// which may come before this goroutine looks: wait for the recheck's.
	var again *goneLeader
	eventually(t, "the recheck to find the leader gone again", func() bool {
		again = f.goneLeader.Load()
		return again != nil && again.again
	})
	eventually(t, "Raft to hear from the leader after that", func() bool {
		return f.raftNow().LastContact().After(again.at)
	})
	id, _ := f.knownLeader()
	assert.Equal(t, raft.ServerID(itoa(leader.cfg.ServerID)), id, "heard from: known")
	// Heartbeats go on; none starts another recheck.
	for range 5 {
		seen := f.raftNow().LastContact()
		eventually(t, "the next heartbeat", func() bool { return f.raftNow().LastContact().After(seen) })
		require.Same(t, again, f.goneLeader.Load(), "no further recheck")
	}
	id, _ = f.knownLeader()
	assert.Equal(t, raft.ServerID(itoa(leader.cfg.ServerID)), id)
}
