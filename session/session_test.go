package session_test

import (
	"bytes"
	"crypto/rand"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/session"
)

func TestNegotiate(t *testing.T) {
	const tick = 500 * time.Millisecond
	tests := []struct {
		name      string
		requested time.Duration
		want      time.Duration
	}{
		{"below min", 500 * time.Millisecond, 2 * tick},
		{"at min", 2 * tick, 2 * tick},
		{"inside", 4 * time.Second, 4 * time.Second},
		{"above max", 15 * time.Second, 20 * tick},
		{"zero", 0, 2 * tick},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, session.Negotiate(tc.requested, 2*tick, 20*tick))
		})
	}
}

func TestPassword(t *testing.T) {
	p, err := session.NewPassword(rand.Reader)
	require.NoError(t, err)
	require.Len(t, p, session.PasswordLen)
	assert.True(t, session.PasswordMatches(p, bytes.Clone(p)))
	other := bytes.Clone(p)
	other[0] ^= 1
	assert.False(t, session.PasswordMatches(p, other))
	assert.False(t, session.PasswordMatches(p, p[:15]))
	assert.False(t, session.PasswordMatches(nil, nil))
	_, err = session.NewPassword(bytes.NewReader([]byte{1, 2, 3}))
	assert.Error(t, err)
}

func TestIDs_Layout(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	g := session.NewIDs(3, now)
	a, b := g.Next(), g.Next()
	assert.Equal(t, a+1, b)
	assert.Equal(t, int64(3), a>>56, "server id in the top byte")
	assert.Equal(t, (now.UnixMilli()<<24)>>8&(1<<56-1), a&(1<<56-1), "time below it")
}

func TestIDs_SkipsReservedValues(t *testing.T) {
	// A generator whose counter reaches math.MinInt64 must skip it: with
	// server id 0x80 and time 0 the first id is exactly MinInt64.
	g := session.NewIDs(-128, time.UnixMilli(0))
	id := g.Next()
	assert.NotEqual(t, int64(math.MinInt64), id)
	assert.Equal(t, int64(math.MinInt64)+1, id)
	g = session.NewIDs(0, time.UnixMilli(0))
	assert.Equal(t, int64(1), g.Next(), "0 is skipped")
}

func TestTracker_ExpiresAtTickBoundary(t *testing.T) {
	tick := 2 * time.Second
	tr := session.NewTracker(tick)
	start := 10_500 * time.Millisecond // between ticks 10s and 12s
	tr.Add(1, 6*time.Second, start)
	// 10.5 + 6 = 16.5 rounds up to the boundary 18.
	deadline, ok := tr.Deadline(1)
	require.True(t, ok)
	assert.Equal(t, 18_000*time.Millisecond, deadline)
	assert.Empty(t, tr.Expired(17_999*time.Millisecond))
	assert.Equal(t, []int64{1}, tr.Expired(18_000*time.Millisecond))
	assert.False(t, tr.Contains(1))
	assert.Empty(t, tr.Expired(30_000*time.Millisecond), "expired once")
}

func TestTracker_TouchExtends(t *testing.T) {
	tr := session.NewTracker(time.Second)
	tr.Add(7, 3*time.Second, 0*time.Millisecond)
	assert.True(t, tr.Touch(7, 2_500*time.Millisecond))
	assert.Empty(t, tr.Expired(5_000*time.Millisecond))
	assert.Equal(t, []int64{7}, tr.Expired(6_000*time.Millisecond))
	assert.False(t, tr.Touch(7, 6_000*time.Millisecond), "an expired session is gone")
}

func TestTracker_ManySessionsSortedAndRemoved(t *testing.T) {
	tr := session.NewTracker(time.Second)
	now := 0 * time.Millisecond
	for _, id := range []int64{5, 3, 9, 1} {
		tr.Add(id, 2*time.Second, now)
	}
	tr.Add(100, 10*time.Second, now)
	tr.Remove(9)
	assert.Equal(t, 4, tr.Len())
	next, ok := tr.Next()
	require.True(t, ok)
	assert.Equal(t, 3_000*time.Millisecond, next)
	assert.Equal(t, []int64{1, 3, 5}, tr.Expired(3_000*time.Millisecond))
	assert.Equal(t, 1, tr.Len())
	_, ok = tr.Deadline(9)
	assert.False(t, ok)
}

func TestTracker_AddResetsTimeout(t *testing.T) {
	tr := session.NewTracker(time.Second)
	tr.Add(1, 2*time.Second, 0*time.Millisecond)
	tr.Add(1, 10*time.Second, 0*time.Millisecond)
	assert.Empty(t, tr.Expired(5_000*time.Millisecond))
	assert.Equal(t, []int64{1}, tr.Expired(11_000*time.Millisecond))
}
