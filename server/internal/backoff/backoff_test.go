package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAccept_DoublesUpToASecondAndStartsOver(t *testing.T) {
	ms := time.Millisecond
	var b Accept
	var got []time.Duration
	for range 10 {
		got = append(got, b.Failed())
	}
	assert.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got)
	b.Succeeded()
	assert.Equal(t, 5*ms, b.Failed(), "a success starts the pauses over")
}

func TestSleep_EndsEarlyWhenQuitCloses(t *testing.T) {
	quit := make(chan struct{})
	close(quit)
	assert.False(t, Sleep(time.Hour, quit))
	assert.True(t, Sleep(time.Microsecond, make(chan struct{})))
}
