package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAddDescribed_AMovedClientIsWhereItConnectedLast: a session two
// members describe (its client moved, and the member it left has not said
// so yet) is placed where it connected last, whichever member is read
// first; the leader's deadline is kept either way.
func TestAddDescribed_AMovedClientIsWhereItConnectedLast(t *testing.T) {
	now := time.Now()
	old := description{Conns: []describedConn{{Session: 7, Client: "10.0.0.1:5000", Since: now.Add(-time.Minute).UnixMilli()}}}
	moved := description{Conns: []describedConn{{Session: 7, Client: "10.0.0.1:5001", Since: now.Add(-time.Second).UnixMilli(),
		Heard: now.UnixMilli()}}}
	leader := description{Expiries: []describedExpiry{{Session: 7, In: 4000}}}
	for _, tc := range []struct {
		name  string
		order []int // members, read in this order: 1 old, 2 moved, 3 leader
	}{
		{"the old member first", []int{1, 2, 3}},
		{"the new member first", []int{2, 1, 3}},
		{"the leader first", []int{3, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byID := map[int64]*SessionStatus{}
			for _, m := range tc.order {
				addDescribed(byID, m, []description{old, moved, leader}[m-1], now)
			}
			got := sortedSessions(byID)
			assert.Len(t, got, 1)
			assert.Equal(t, 2, got[0].Member)
			assert.Equal(t, "10.0.0.1:5001", got[0].Client)
			assert.Equal(t, now.UnixMilli(), got[0].Heard.UnixMilli())
			assert.InDelta(t, 4000, got[0].ExpiresIn.Milliseconds(), 100)
		})
	}
}
