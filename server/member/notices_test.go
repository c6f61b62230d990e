package member

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
)

// nopHost is a Host for nodes without a client side.
type nopHost struct{}

func (nopHost) ProposalFailed(uint64, error)         {}
func (nopHost) Elected()                             {}
func (nopHost) ServingChanged(bool)                  {}
func (nopHost) TouchSessions([]int64)                {}
func (nopHost) Revalidate(int64, time.Duration) bool { return true }
func (nopHost) Prepare(cmd []byte) []byte            { return cmd }
func (nopHost) Awaited(uint64) bool                  { return true }
func quietLogger() *slog.Logger                      { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitFor(t, 10*time.Second, what, cond)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitUntil(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// waitUntil waits up to d for cond and reports whether it held.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// startNodes starts an n-member cluster of nodes on loopback, with cfg
// applied to each member's configuration.
func startNodes(t *testing.T, count int, cfg func(*Config)) []*Node {
	t.Helper()
	var peers []Peer
	var lns [][2]net.Listener
	for i := range count {
		var pair [2]net.Listener
		for j := range pair {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			pair[j] = ln
		}
		lns = append(lns, pair)
		peers = append(peers, Peer{ID: i + 1, RaftAddr: pair[0].Addr().String(), ForwardAddr: pair[1].Addr().String()})
	}
	nodes := make([]*Node, count)
	for i := range count {
		c := Config{ServerID: i + 1, Servers: peers, TickTime: 100 * time.Millisecond, RaftTimeout: 100 * time.Millisecond,
			SnapCount: 100000, SnapRetainCount: 3, RaftListener: lns[i][0], ForwardListener: lns[i][1], Logger: quietLogger()}
		if cfg != nil {
			cfg(&c)
		}
		nodes[i] = New(c, raftfsm.New(nil), nopHost{})
		t.Cleanup(func() { nodes[i].Stop(); nodes[i].Wait() })
	}
	for _, n := range nodes {
		require.NoError(t, n.Start())
	}
	eventually(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	return nodes
}

// followerOf returns a member of nodes other than leader.
func followerOf(nodes []*Node, leader *Node) *Node {
	for _, n := range nodes {
		if n != leader {
			return n
		}
	}
	return nil
}

func leaderOf(nodes []*Node) *Node {
	for _, n := range nodes {
		if n.IsLeader() {
			return n
		}
	}
	return nil
}

// TestCommitNotices_FollowersApplyWithoutFurtherTraffic shows that members
// learn of a commit from the leader's commit notice: with Raft's own idle
// AppendEntries an hour apart, nothing else would tell them.
func TestCommitNotices_FollowersApplyWithoutFurtherTraffic(t *testing.T) {
	nodes := startNodes(t, 3, func(c *Config) { c.commitTimeout = time.Hour })
	leader := leaderOf(nodes)
	for i := range 20 {
		cmd := &raftfsm.Command{Type: raftfsm.TypeCreateSession, Session: int64(i + 1), Timeout: 30000,
			Passwd: make([]byte, 16), Time: time.Now().UnixMilli()}
		leader.Propose(cmd.Encode(), 0)
		eventually(t, "the leader to apply session "+strconv.Itoa(i+1), func() bool {
			_, ok := leader.fsm.Session(int64(i + 1))
			return ok
		})
		want := leader.fsm.LastZxid()
		for _, n := range nodes {
			eventually(t, "every member to apply the commit", func() bool { return n.fsm.LastZxid() >= want })
		}
	}
}

// A commit notice for an entry not yet stored here waits for it; one whose
// entry never comes is declined after the transport's timeout; everything
// else passes through in order, and every notice is noted at once.
func TestPeerTransport_HoldsNoticesUntilTheEntryIsStored(t *testing.T) {
	quit := make(chan struct{})
	defer close(quit)
	pt := newPeerTransport(nil, nil, raft.RPCHeader{}, nil, quit, 50*time.Millisecond, quietLogger())
	in := make(chan raft.RPC)
	go pt.runFrom(in)
	notice := func(index uint64) (raft.RPC, chan raft.RPCResponse) {
		resp := make(chan raft.RPCResponse, 1)
		return raft.RPC{Command: &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: index, PrevLogTerm: 1,
			LeaderCommitIndex: index}, RespChan: resp}, resp
	}
	pt.storedUpTo(3, 3)
	n5, _ := notice(5)
	in <- n5
	// Noted by the transport's goroutine just after it takes the notice.
	eventually(t, "the notice to be noted as it arrives", func() bool { return pt.noticed.Load() == 5 })
	other := raft.RPC{Command: &raft.AppendEntriesRequest{Term: 1, Leader: []byte("x"), PrevLogEntry: 3}}
	in <- other
	got := <-pt.Consumer()
	require.Same(t, other.Command, got.Command, "other RPCs pass while a notice is held")
	pt.storedUpTo(5, 5)
	got = <-pt.Consumer()
	require.Same(t, n5.Command, got.Command, "the held notice passes once its entry is stored")

	n9, resp9 := notice(9)
	in <- n9
	select {
	case r := <-resp9:
		require.False(t, r.Response.(*raft.AppendEntriesResponse).Success, "declined")
	case <-time.After(10 * time.Second):
		t.Fatal("a notice for an entry that never comes was not declined")
	}
	n4, _ := notice(4)
	in <- n4
	got = <-pt.Consumer()
	require.Same(t, n4.Command, got.Command, "a notice for a stored entry passes at once")
}

// The leader's notice links follow the members: one per other member; a
// member that a reconfig removes keeps its link (it follows on without a
// vote); one that moves gets a link to its new address, and the old link's
// keeper ends.
func TestCommitNotices_LinksFollowTheMembers(t *testing.T) {
	nodes := startNodes(t, 3, nil)
	leader := leaderOf(nodes)
	linked := func() []string {
		var out []string
		for _, l := range leader.notices.current() {
			out = append(out, string(l.id)+"@"+string(l.addr))
		}
		slices.Sort(out)
		return out
	}
	keepers := func() int { return leader.Running(map[string]int{})["commit-notice-link"] }
	all := leader.Servers()
	var others []string
	for _, p := range all {
		if p.ID != leader.cfg.ServerID {
			others = append(others, strconv.Itoa(p.ID)+"@"+p.RaftAddr)
		}
	}
	slices.Sort(others)
	require.Equal(t, others, linked())
	require.Equal(t, 2, keepers())

	// As SetServers does, without changing Raft's own configuration: once
	// the new leader's own reconcile is over, nothing starts another.
	eventually(t, "the leader to settle in", func() bool { return leader.Leading() && !leader.reconciling.Load() })
	set := func(servers []Peer) {
		leader.members.Store(&servers)
		known := append(slices.Clone(*leader.known.Load()), servers...)
		leader.known.Store(&known)
		leader.notices.followMembers(leader)
	}
	gone := followerOf(nodes, leader).cfg.ServerID
	set(slices.DeleteFunc(slices.Clone(all), func(p Peer) bool { return p.ID == gone }))
	assert.Equal(t, others, linked(), "a member that left follows on and keeps its link")
	assert.Equal(t, 2, keepers())

	moved := slices.Clone(all)
	for i := range moved {
		if moved[i].ID == gone {
			moved[i].RaftAddr = "127.0.0.1:1"
		}
	}
	set(moved)
	assert.Contains(t, linked(), strconv.Itoa(gone)+"@127.0.0.1:1")
	assert.Len(t, linked(), 2)
	eventually(t, "the old address's keeper to end", func() bool { return keepers() == 2 })
}

// AppendEntries that come over Raft's network transport (from a member of
// an older zkraft) are answered as serveAppends answers its own: a durable
// member's answer that says entries were stored waits until they are on
// its disk, and says they were not if the write failed (Raft's leader
// reads a pipelined answer's response, not its error). One with no
// entries (a heartbeat, a commit notice) is not held.
func TestPeerTransport_AnswersOverRaftsTransportWaitForTheDisk(t *testing.T) {
	store := newHeldStore()
	log, err := newOverlapLog(store)
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	quit := make(chan struct{})
	defer close(quit)
	pt := newPeerTransport(nil, nil, raft.RPCHeader{}, nil, quit, time.Second, quietLogger())
	pt.hold = log
	in := make(chan raft.RPC)
	go pt.runFrom(in)
	toRaft := func() raft.RPC {
		t.Helper()
		select {
		case rpc := <-pt.Consumer():
			return rpc
		case <-time.After(10 * time.Second):
			t.Fatal("no request reached Raft")
			return raft.RPC{}
		}
	}
	answered := func(ch <-chan raft.RPCResponse) raft.RPCResponse {
		t.Helper()
		select {
		case a := <-ch:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return raft.RPCResponse{}
		}
	}
	// send hands the transport an AppendEntries with the entries from..to
	// (none if to < from), which Raft stores and says it succeeded.
	send := func(from, to uint64) <-chan raft.RPCResponse {
		t.Helper()
		answer := make(chan raft.RPCResponse, 1)
		req := &raft.AppendEntriesRequest{Term: 1, Leader: []byte("a"), PrevLogEntry: from - 1, PrevLogTerm: 1}
		if to >= from {
			req.Entries = entries(from, to)
		}
		in <- raft.RPC{Command: req, RespChan: answer}
		rpc := toRaft()
		require.NoError(t, log.StoreLogs(rpc.Command.(*raft.AppendEntriesRequest).Entries))
		rpc.Respond(&raft.AppendEntriesResponse{Term: 1, LastLog: to, Success: true}, nil)
		return answer
	}

	store.hold()
	t.Cleanup(store.release)
	answer := send(1, 2)
	empty := answered(send(3, 2))
	assert.True(t, empty.Response.(*raft.AppendEntriesResponse).Success, "an AppendEntries without entries is not held")
	store.awaitWriter(t)
	select {
	case a := <-answer:
		t.Fatalf("answered before the disk had the entries: %+v", a)
	case <-time.After(50 * time.Millisecond):
	}
	store.release()
	a := answered(answer)
	require.NoError(t, a.Error)
	assert.True(t, a.Response.(*raft.AppendEntriesResponse).Success)

	failure := errors.New("disk on fire")
	store.mu.Lock()
	store.fail = failure
	store.mu.Unlock()
	a = answered(send(3, 3))
	assert.ErrorIs(t, a.Error, failure)
	assert.False(t, a.Response.(*raft.AppendEntriesResponse).Success, "an answer must not say Success for a failed write")
}
