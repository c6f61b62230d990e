package chaos_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/chaos"
)

// TestProcesses_FaultsBetweenProcesses starts three zkraft processes as
// zkchaos does, isolates the leader through the proxies on its links and
// waits for the other two to elect one of themselves, writes through it,
// heals, and reads the write on the old leader: partitions between
// processes are real partitions, and heal. Then it steps the new leader's
// clock back two hours, which the nodes it creates show.
func TestProcesses_FaultsBetweenProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zkraft and starts three processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "zkraft")
	build := exec.Command("go", "build", "-o", bin, "github.com/zkraft/zkraft/cmd/zkraft")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	p, err := chaos.StartProcesses(bin, filepath.Join(dir, "cluster"), 3, "")
	require.NoError(t, err)
	t.Cleanup(p.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(p.Describe())
		}
	})

	old := p.Leader()
	require.GreaterOrEqual(t, old, 0)
	p.Partition([]int{old}, others(old, 3))
	var leader int
	require.Eventually(t, func() bool {
		leader = p.Leader()
		return leader >= 0 && leader != old
	}, time.Minute, 50*time.Millisecond, "a new leader among the majority")

	c, _, err := zk.Connect([]string{p.Addrs()[leader]}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.Create("/written-apart", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	p.Heal()
	c2, _, err := zk.Connect([]string{p.Addrs()[old]}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c2.Close)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := c2.Sync("/")
		if !assert.NoError(ct, err) {
			return
		}
		data, _, err := c2.Get("/written-apart")
		assert.NoError(ct, err)
		assert.Equal(ct, []byte("x"), data)
	}, time.Minute, 100*time.Millisecond, "the old leader, healed, has the write")

	p.StepClock(leader, -2*time.Hour)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		path, err := c.Create("/stepped-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if !assert.NoError(ct, err) {
			return
		}
		_, st, err := c.Get(path)
		if assert.NoError(ct, err) {
			assert.WithinDuration(ct, time.Now().Add(-2*time.Hour), time.UnixMilli(st.Ctime), time.Minute)
		}
	}, time.Minute, 20*time.Millisecond, "nodes created by the leader after its clock was stepped")
}

func others(i, n int) []int {
	var out []int
	for j := range n {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}
