package member

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePipe stands for the network transport's pipeline: its answers come
// on an unbuffered channel, as its decoder hands them over.
type fakePipe struct {
	answers chan raft.AppendFuture
	closed  atomic.Bool
}

func (f *fakePipe) AppendEntries(*raft.AppendEntriesRequest, *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	return nil, nil
}
func (f *fakePipe) Consumer() <-chan raft.AppendFuture { return f.answers }
func (f *fakePipe) Close() error                       { f.closed.Store(true); return nil }

type fakeFuture struct{ raft.AppendFuture }

// The network pipeline's answers are taken even while Raft reads none (its
// decoder stopped at a failed answer), so the sender never waits on them;
// Raft gets them in order when it reads; the node stopping closes the
// pipeline.
func TestDrainedPipeline_AnswersAreTakenWhileRaftReadsNone(t *testing.T) {
	inner := &fakePipe{answers: make(chan raft.AppendFuture)}
	quit := make(chan struct{})
	d := &drainedPipeline{AppendPipeline: inner, out: make(chan raft.AppendFuture), done: make(chan struct{})}
	stopped := make(chan struct{})
	go func() { d.forward(quit); close(stopped) }()

	futures := make([]raft.AppendFuture, 300) // more than the 128 a pipeline holds in flight
	for i := range futures {
		futures[i] = &fakeFuture{}
		select {
		case inner.answers <- futures[i]:
		case <-time.After(10 * time.Second):
			t.Fatalf("answer %d was not taken while Raft read none", i)
		}
	}
	for i := range 3 {
		assert.Same(t, futures[i], <-d.Consumer(), "answer %d in order", i)
	}
	close(quit)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarder did not stop with the node")
	}
	require.True(t, inner.closed.Load(), "stopping closes the pipeline, freeing a sender that waits")
}
