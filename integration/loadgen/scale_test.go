package loadgen_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestRunWorkloads runs each pipelined workload briefly and checks that it
// was answered, and that RemoveRoot leaves nothing behind, two levels deep.
func TestRunWorkloads(t *testing.T) {
	srv := servertest.NewServer(t)
	for _, cfg := range []loadgen.Config{
		{Op: loadgen.OpGetChildren, Children: 50},
		{Op: loadgen.OpMulti, MultiOps: 3},
		{Op: loadgen.OpMix, WritePercent: 10, Size: 64},
	} {
		t.Run(string(cfg.Op), func(t *testing.T) {
			root, err := loadgen.NewRoot(srv.ConnectString())
			require.NoError(t, err)
			cfg.Addr, cfg.Root = srv.ConnectString(), root
			cfg.Sessions, cfg.InFlight, cfg.Duration = 2, 4, 100*time.Millisecond
			res, err := loadgen.Run(cfg)
			require.NoError(t, err)
			assert.Positive(t, res.Ops)
			require.NoError(t, loadgen.RemoveRoot(srv.ConnectString(), root))
			assert.Nil(t, srv.Inspect().Tree(root))
		})
	}
}

// Window is called once as the measured time begins, and what it returns
// once as it ends, before Run returns, with the server's zxid (its
// writes) moving on in between.
func TestRun_Window(t *testing.T) {
	srv := servertest.NewServer(t)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	var begun, ended int
	var zxids [2]int64
	res, err := loadgen.Run(loadgen.Config{Addr: srv.ConnectString(), Root: root, Op: loadgen.OpSetData,
		Sessions: 1, InFlight: 4, Warmup: 20 * time.Millisecond, Duration: 300 * time.Millisecond,
		Window: func() func() {
			begun++
			zxids[0] = srv.FSM().LastZxid()
			return func() {
				ended++
				zxids[1] = srv.FSM().LastZxid()
			}
		}})
	require.NoError(t, err)
	assert.Equal(t, 1, begun)
	assert.Equal(t, 1, ended)
	assert.Positive(t, res.Ops)
	assert.Greater(t, zxids[1], zxids[0], "writes within the window")
	require.NoError(t, loadgen.RemoveRoot(srv.ConnectString(), root))
}

// A run whose sessions all fail ends then, not at the end of its measured
// time, and the window it began ends with it: every create under a root
// that does not exist is refused at once, and the minute is not waited out.
func TestRun_WindowEndsWithRun(t *testing.T) {
	srv := servertest.NewServer(t)
	var begun, ended int
	start := time.Now()
	_, err := loadgen.Run(loadgen.Config{Addr: srv.ConnectString(), Root: "/no-such-root", Op: loadgen.OpCreate,
		Sessions: 2, InFlight: 4, Duration: time.Minute,
		Window: func() func() {
			begun++
			return func() { ended++ }
		}})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 30*time.Second, "the run waited for its measured time")
	assert.LessOrEqual(t, begun, 1)
	assert.Equal(t, begun, ended, "a window begun is ended before Run returns")
}

// TestFanOut: every watcher is told of each round's change, and the
// delays are sorted.
func TestFanOut(t *testing.T) {
	srv := servertest.NewServer(t)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	rounds, err := loadgen.FanOut{Addr: srv.ConnectString(), Root: root, Watchers: 20, Rounds: 3}.Run()
	require.NoError(t, err)
	require.Len(t, rounds, 3)
	for _, d := range rounds {
		require.Len(t, d, 20)
		assert.LessOrEqual(t, d.First(), d.Median())
		assert.LessOrEqual(t, d.Median(), d.Last())
	}
}

// TestStorm: the expiring sessions' ephemerals are all gone once they
// expire, and every session the storm opened is closed afterwards.
func TestStorm(t *testing.T) {
	srv := servertest.NewServer(t)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	res, err := loadgen.Storm{Addr: srv.ConnectString(), Root: root, Sessions: 30, Expiring: 10,
		Timeout: 200 * time.Millisecond}.Run()
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, res.Granted)
	assert.GreaterOrEqual(t, res.LastGone, res.FirstGone)
	assert.Empty(t, srv.Inspect().Tree(root).Children)
	require.Eventually(t, func() bool { return len(srv.Inspect().Sessions()) == 0 }, 10*time.Second, 10*time.Millisecond)
}

// TestHandoffs: contenders pass the lock around.
func TestHandoffs(t *testing.T) {
	srv := servertest.NewServer(t)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	res, err := loadgen.Handoffs{Addr: srv.ConnectString(), Root: root, Contenders: 3,
		Duration: 200 * time.Millisecond}.Run()
	require.NoError(t, err)
	assert.Positive(t, res.Handoffs)
	assert.Len(t, res.Waits, res.Handoffs)
}

// TestHold: the watches and sessions held are there until released.
func TestHold(t *testing.T) {
	srv := servertest.NewServer(t)
	root, err := loadgen.NewRoot(srv.ConnectString())
	require.NoError(t, err)
	release, err := loadgen.HoldWatches(srv.ConnectString(), root, 50)
	require.NoError(t, err)
	assert.Len(t, srv.Inspect().Watches(), 50)
	release()
	require.Eventually(t, func() bool { return len(srv.Inspect().Watches()) == 0 }, 5*time.Second, 10*time.Millisecond)

	release, err = loadgen.HoldSessions(srv.ConnectString(), 20)
	require.NoError(t, err)
	assert.Len(t, srv.Inspect().Sessions(), 20)
	release()
	require.Eventually(t, func() bool { return len(srv.Inspect().Sessions()) == 0 }, 5*time.Second, 10*time.Millisecond)
}
