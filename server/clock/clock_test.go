package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/server/clock"
)

func TestSteppable_MovesWallTimeOnly(t *testing.T) {
	c := clock.NewSteppable(clock.NewReal())
	wall, elapsed := c.Now(), c.Elapsed()
	c.Step(time.Hour)
	assert.GreaterOrEqual(t, c.Now().Sub(wall), time.Hour, "the wall time moved")
	assert.Less(t, c.Elapsed()-elapsed, time.Hour, "the elapsed time did not")
	assert.GreaterOrEqual(t, c.Elapsed(), elapsed, "and never goes back")
	c.Step(-2 * time.Hour)
	assert.Less(t, c.Now().Sub(wall), -30*time.Minute)
	assert.GreaterOrEqual(t, c.Elapsed(), elapsed)
	assert.Equal(t, -time.Hour, c.Offset())
}

func TestFake_StandsStillUntilAdvanced(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := clock.NewFake(start)
	var seen []time.Duration
	stop := f.OnAdvance(func() { seen = append(seen, f.Elapsed()) })
	assert.Equal(t, start, f.Now())
	assert.Zero(t, f.Elapsed())
	f.Advance(time.Minute)
	assert.Equal(t, start.Add(time.Minute), f.Now(), "wall and elapsed time move together")
	assert.Equal(t, time.Minute, f.Elapsed())
	assert.Equal(t, []time.Duration{time.Minute}, seen, "the hook ran, after the move, before Advance returned")
	stop()
	f.Advance(time.Second)
	assert.Len(t, seen, 1, "a stopped hook runs no more")
	assert.Panics(t, func() { f.Advance(-time.Second) }, "time does not go back")
}

func TestSteppable_AdvancedWithTheClockBeneath(t *testing.T) {
	f := clock.NewFake(time.Unix(0, 0))
	s := clock.NewSteppable(f)
	ran := 0
	s.OnAdvance(func() { ran++ })
	s.Step(time.Hour)
	f.Advance(time.Second)
	assert.Equal(t, 1, ran)
	assert.Equal(t, time.Unix(0, 0).Add(time.Hour+time.Second), s.Now())
	var real clock.Advancer = clock.NewSteppable(clock.NewReal())
	real.OnAdvance(func() { t.Error("a real clock is never advanced") })()
}
