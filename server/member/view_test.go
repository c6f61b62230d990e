package member

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestView_RoundTrip: the leader's view decodes as it was encoded, times
// as offsets from the moment each side reads its clock.
func TestView_RoundTrip(t *testing.T) {
	now := time.Now()
	in := []MemberView{
		{ID: 1, Applied: 0x100000042, Heard: now, Presence: []byte(`{"console":"http://a/console/"}`)},
		{ID: 2, Applied: 7, Heard: now.Add(-1500 * time.Millisecond)},
		{ID: 254, Applied: -1, Heard: time.Time{}, Presence: []byte{0, 1, 2}},
	}
	out, err := decodeView(appendView(nil, in, now), now)
	require.NoError(t, err)
	sameViews(t, in, out)
	assert.Equal(t, now, out[0].Heard)
	assert.Equal(t, now.Add(-1500*time.Millisecond), out[1].Heard)
	assert.True(t, out[2].Heard.Before(now.Add(-24*time.Hour)), "never heard: long ago")

	for _, bad := range [][]byte{nil, {0, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0}, append(appendView(nil, in, now), 0)} {
		_, err := decodeView(bad, now)
		assert.ErrorIs(t, err, errBadView, "%x", bad)
	}
}

// FuzzDecodeView: a leader's reply, whatever its bytes, decodes or is
// refused without a panic, and what decodes encodes back the same.
func FuzzDecodeView(f *testing.F) {
	now := time.Unix(1700000000, 0)
	f.Add(appendView(nil, []MemberView{{ID: 1, Applied: 5, Heard: now, Presence: []byte("x")}}, now))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 9, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		views, err := decodeView(b, now)
		if err != nil {
			return
		}
		again, err := decodeView(appendView(nil, views, now), now)
		require.NoError(t, err)
		sameViews(t, views, again)
	})
}

// sameViews checks that got holds want's members, times aside.
func sameViews(t *testing.T, want, got []MemberView) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].ID, got[i].ID)
		assert.Equal(t, want[i].Applied, got[i].Applied)
		assert.Equal(t, want[i].Presence, got[i].Presence)
	}
}
