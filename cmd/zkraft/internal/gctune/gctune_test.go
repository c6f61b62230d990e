package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicy_Percent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		live uint64
		want int
	}{
		{name: "nothing measured yet", live: 0, want: 400},
		{name: "small heap: the most", live: 4 * mib, want: 400},
		{name: "floor over the live heap", live: 64 * mib, want: 50},
		{name: "a million znodes", live: 165 * mib, want: 19},
		{name: "an eighth of a large heap", live: 1024 * mib, want: 12},
		{name: "never under the least", live: 64 * 1024 * mib, want: 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Default.Percent(tc.live))
		})
	}
}

// TestTuner_FollowsTheLiveHeap holds a heap large enough to move GOGC
// off its maximum and waits for collections to set it, then lets the heap
// go and waits for GOGC to come back up.
func TestTuner_FollowsTheLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	p := Policy{Floor: 8 << 20, Divisor: 4, MinPercent: 25, MaxPercent: 400}
	tu := Start(p)
	t.Cleanup(tu.Stop)

	held := make([][]byte, 0, 64)
	for range 64 {
		held = append(held, make([]byte, 1<<20)) // 64 MiB: the floor is an eighth
	}
	waitPercent(t, tu, func(pct int) bool { return pct <= 25 })
	runtime.KeepAlive(held)
	held = nil
	waitPercent(t, tu, func(pct int) bool { return pct == 400 })
	assert.Equal(t, 400, debug.SetGCPercent(400), "GOGC as the tuner set it")
}

// waitPercent runs collections until the tuner's GOGC satisfies ok; each
// collection is what the tuner waits on.
func waitPercent(t *testing.T, tu *Tuner, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(tu.Percent()) {
		require.True(t, time.Now().Before(deadline), "GOGC stays at %d", tu.Percent())
		runtime.GC()
		runtime.Gosched()
	}
}
