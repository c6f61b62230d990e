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
