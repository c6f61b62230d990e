package integration

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/steady"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestSteady_Servertest measures a servertest cluster as cmd/zksteady
// measures processes: one session sets a znode every 50 ms beside a CPU
// hog, and no write may fail, no leader change. It runs only when asked,
// since it takes as long as it is told:
//
//	ZKRAFT_STEADY=10m ZKRAFT_STEADY_HOG=8 go test ./integration -run TestSteady_Servertest -v
func TestSteady_Servertest(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("ZKRAFT_STEADY"))
	if err != nil {
		t.Skip("a measurement: set ZKRAFT_STEADY to how long (and ZKRAFT_STEADY_HOG to how many busy processes)")
	}
	hog := 2*runtime.NumCPU() + 4
	if n, err := strconv.Atoi(os.Getenv("ZKRAFT_STEADY_HOG")); err == nil {
		hog = n
	}
	c := servertest.NewCluster(t, 3)
	for range hog {
		p := exec.Command(os.Args[0], "-test.run=^TestSteady_Burn$")
		p.Env = append(os.Environ(), "ZKRAFT_STEADY_BURN=1")
		require.NoError(t, p.Start())
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	}
	res, err := steady.Run(context.Background(), steady.Config{Clients: []string{c.Addr(0), c.Addr(1), c.Addr(2)}, Duration: d})
	require.NoError(t, err)
	t.Logf("servertest, hog %d, %v: %s", hog, d, res)
	assert.Zero(t, res.Failed, "failed writes")
	assert.Zero(t, res.LeaderChanges, "leader changes")
}

// TestSteady_Burn keeps a core busy for TestSteady_Servertest, in a process
// of its own; otherwise it is skipped.
func TestSteady_Burn(t *testing.T) {
	if os.Getenv("ZKRAFT_STEADY_BURN") == "" {
		t.Skip("a CPU hog for TestSteady_Servertest")
	}
	runtime.GOMAXPROCS(1)
	for x := 0; ; x++ {
		_ = x
	}
}
