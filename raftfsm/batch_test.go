package raftfsm_test

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
)

// batchObserver records, at each BatchApplied, how many commands Applied
// had seen by then.
type batchObserver struct {
	recordingObserver
	batches []int
}

func (o *batchObserver) BatchApplied() { o.batches = append(o.batches, len(o.applied)) }

// TestFSM_BatchApplied checks that a BatchObserver hears the end of every
// batch Raft hands the FSM, after the batch's last Applied: once per
// ApplyBatch, and once per Apply.
func TestFSM_BatchApplied(t *testing.T) {
	obs := &batchObserver{}
	f := newFSM(t, obs)
	var logs []*raft.Log
	for i := range 3 {
		logs = append(logs, newLog(uint64(i+1), newCreateSession(sessA+int64(i), 30000, make([]byte, 16))))
	}
	f.ApplyBatch(logs)
	require.Equal(t, []int{3}, obs.batches)
	f.Apply(newLog(4, newCreateSession(sessB, 30000, make([]byte, 16))))
	require.Equal(t, []int{3, 4}, obs.batches)
	f.ApplyBatch([]*raft.Log{{Index: 5, Type: raft.LogNoop}})
	require.Equal(t, []int{3, 4, 4}, obs.batches, "a batch with no command still ends")
}

var _ raftfsm.BatchObserver = (*batchObserver)(nil)
