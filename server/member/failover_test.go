package member

import (
	"errors"
	"os"
	"testing"

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
