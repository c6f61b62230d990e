package member

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

func threeMembers() []Peer {
	return []Peer{
		{ID: 1, RaftAddr: "127.0.0.1:14282", ForwardAddr: "127.0.0.1:14382"},
		{ID: 2, RaftAddr: "127.0.0.1:14283", ForwardAddr: "127.0.0.1:14383"},
		{ID: 3, RaftAddr: "127.0.0.1:14284", ForwardAddr: "127.0.0.1:14384"},
	}
}

func TestEnsemble_FormatAndParse(t *testing.T) {
	servers := append(threeMembers(), Peer{ID: 4, RaftAddr: "127.0.0.1:14999", ForwardAddr: "127.0.0.1:14998",
		Observer: true, Client: "127.0.0.1:14997"})
	text := FormatEnsemble(servers, 0x20000000b)
	assert.Equal(t, "server.1=127.0.0.1:14282:14382:participant\n"+
		"server.2=127.0.0.1:14283:14383:participant\n"+
		"server.3=127.0.0.1:14284:14384:participant\n"+
		"server.4=127.0.0.1:14999:14998:observer;127.0.0.1:14997\n"+
		"version=20000000b", string(text))
	got, version, err := ParseEnsemble(text)
	require.NoError(t, err)
	assert.Equal(t, servers, got)
	assert.Equal(t, int64(0x20000000b), version)
}

// TestNextEnsemble holds the answers ZooKeeper 3.8's leader gave to the
// same requests (realzk, three members, reconfigEnabled).
func TestNextEnsemble(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		joining, leaving, all string
		want                  wire.Code
		members               []int
		client                string // member 4's client address, when it joins
	}{
		{name: "leave one", leaving: "3", members: []int{1, 2}},
		{name: "leave an unknown id", leaving: "9", members: []int{1, 2, 3}},
		{name: "nothing", members: []int{1, 2, 3}},
		{name: "leave all", leaving: "1,2,3", want: wire.CodeBadArguments},
		{name: "leave an id that is no number", leaving: "x", want: wire.CodeMarshallingError},
		{name: "join with a client port", joining: "server.4=127.0.0.1:14999:14998;14997", members: []int{1, 2, 3, 4}, client: "0.0.0.0:14997"},
		{name: "join an observer", joining: "server.4=127.0.0.1:14999:14998:observer;127.0.0.1:14997", members: []int{1, 2, 3, 4}, client: "127.0.0.1:14997"},
		{name: "join without a client port", joining: "server.4=127.0.0.1:14999:14998:participant", want: wire.CodeBadArguments},
		{name: "join garbage", joining: "server.5=garbage", want: wire.CodeBadArguments},
		{name: "join on another member's address", joining: "server.4=127.0.0.1:14282:14998;14997", want: wire.CodeBadArguments},
		{name: "change a member's ports", joining: "server.2=127.0.0.1:14283:14393;14182", members: []int{1, 2, 3}},
		{name: "new members", all: "server.2=127.0.0.1:14283:14383;2181\n,server.3=127.0.0.1:14284:14384;2181\n", members: []int{2, 3}},
		{name: "new members: one only", all: "server.1=127.0.0.1:14282:14382;14181", want: wire.CodeBadArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, code := NextEnsemble(threeMembers(), tc.joining, tc.leaving, tc.all)
			require.Equal(t, tc.want, code)
			var ids []int
			for _, p := range next {
				ids = append(ids, p.ID)
				if p.ID == 4 {
					assert.Equal(t, tc.client, p.Client)
				}
			}
			assert.Equal(t, tc.members, ids)
		})
	}
}

func TestMembershipChanges(t *testing.T) {
	conf := raft.Configuration{Servers: []raft.Server{
		{ID: "1", Address: "127.0.0.1:14282", Suffrage: raft.Voter},
		{ID: "2", Address: "127.0.0.1:14283", Suffrage: raft.Voter},
		{ID: "3", Address: "127.0.0.1:14284", Suffrage: raft.Voter},
	}}
	servers := []Peer{
		{ID: 2, RaftAddr: "127.0.0.1:14283"},
		{ID: 3, RaftAddr: "127.0.0.1:14290"},                 // moved
		{ID: 4, RaftAddr: "127.0.0.1:14999", Observer: true}, // new
	}
	got := membershipChanges(conf, servers, 1)
	require.Len(t, got, 3)
	assert.Equal(t, raftChange{peer: servers[1]}, got[0])
	assert.Equal(t, raftChange{peer: servers[2]}, got[1])
	assert.Equal(t, raftChange{peer: Peer{ID: 1, RaftAddr: "127.0.0.1:14282"}, demote: true}, got[2],
		"a member that left follows on without a vote; the leader's own demotion comes last")
	assert.Empty(t, membershipChanges(conf, []Peer{
		{ID: 1, RaftAddr: "127.0.0.1:14282"}, {ID: 2, RaftAddr: "127.0.0.1:14283"}, {ID: 3, RaftAddr: "127.0.0.1:14284"},
	}, 1))
	conf.Servers[0].Suffrage = raft.Nonvoter
	assert.Len(t, membershipChanges(conf, servers, 1), 2, "a member that left and follows on without a vote stays")
}
