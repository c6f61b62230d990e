package integration

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestClusterClockSteps: session deadlines run on the monotonic clock, as
// ZooKeeper's do, so stepping the leader's wall clock neither expires live
// sessions (a step forward) nor keeps abandoned ones alive (a step back).
// Before the fix the leader counted deadlines in wall time: an hour forward
// expired every session at the next tick, an hour back kept an abandoned
// session for an hour.
func TestClusterClockSteps(t *testing.T) {
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			c := servertest.NewCluster(t, 3, servertest.WithTickTime(100*time.Millisecond))
			live, _ := mustConnectEvents(t, c.ConnectString(), 2*time.Second)
			mustCreateRetried(t, live, "/parent", nil)
			_, err := live.Create("/parent/live", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)

			leader := c.Leader()
			require.GreaterOrEqual(t, leader, 0)

			// A session that is abandoned (its connection dropped, no
			// closeSession) just before the step.
			raw := dialRaw(t, c.Addr(leader))
			req := connectRequest()
			req.TimeOut = 1000
			resp, _ := raw.connect(req)
			require.NotZero(t, resp.SessionID)
			raw.sendFrame(func(b []byte) []byte {
				b = wire.RequestHeader{Xid: 1, OpCode: wire.OpCreate}.Append(b)
				return (&wire.CreateRequest{Path: "/parent/abandoned", ACL: wire.OpenACLUnsafe,
					Flags: int32(zk.FlagEphemeral)}).Append(b)
			})
			var h wire.ReplyHeader
			_, err = h.Decode(raw.readFrame())
			require.NoError(t, err)
			require.Equal(t, wire.CodeOK, h.Err)
			raw.nc.Close()
			c.StepClock(leader, step)

			// The abandoned session expires within its timeout and a tick
			// or two: its ephemeral goes, while the live one stays (a step
			// forward counted in wall time would have expired the live
			// session at the first tick, before the abandoned one's timeout).
			deadline := time.After(10 * time.Second)
			for {
				_, err := live.Sync("/parent")
				require.NoError(t, err)
				children, _, ch, err := live.ChildrenW("/parent")
				require.NoError(t, err)
				require.Contains(t, children, "live", "the live session's ephemeral went after a %v clock step", step)
				if len(children) == 1 {
					break
				}
				select {
				case <-ch:
				case <-deadline:
					t.Fatalf("the abandoned session's ephemeral is still there 10s after a %v clock step: %v", step, children)
				}
			}
		})
	}
}
