package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// TestLimits_IdleConnectionsKeepNoLargeBuffers has 32 sessions each send
// a request of almost jute.maxbuffer and read a reply of as much, then go
// idle. ZooKeeper drops its buffers once a request is read or a reply
// written (NIOServerCnxn's incomingBuffer goes back to the 4-byte length
// buffer; outgoingBuffers empties); zkraft keeps no more than a small
// buffer each way per connection either.
func TestLimits_IdleConnectionsKeepNoLargeBuffers(t *testing.T) {
	// Sessions of up to 20 s: the sessions wait their turn without a ping,
	// which under the race detector on a busy machine took longer than the
	// 2 s servertest's tick allows, and they expired.
	srv := servertest.NewServer(t, quiet, servertest.WithTickTime(time.Second))
	addr := srv.ConnectString()
	healthy := startHealthyClient(t, addr)
	owner := mustRawSession(t, addr)
	const big = "/big"
	create := &wire.CreateRequest{Path: big, ACL: wire.OpenACLUnsafe}
	create.Data = make([]byte, wire.MaxBuffer-wire.RequestHeaderSize-len(create.Append(nil)))
	owner.mustDo(wire.OpCreate, create)
	longPath := "/" + strings.Repeat("q", wire.MaxBuffer-wire.RequestHeaderSize-5-1)

	const sessions = 32
	ss := make([]*rawSession, sessions)
	for i := range ss {
		ss[i] = mustRawSession(t, addr)
	}
	before := liveMemory()
	for _, s := range ss {
		body := s.mustDo(wire.OpGetData, &wire.PathWatchRequest{Path: big})
		require.Len(t, body, 4+len(create.Data)+wire.StatSize)
		s.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: longPath})
		mustPing(t, s.rawConn)
	}
	healthy.mustProgress()
	grown := liveMemory() - before
	t.Logf("%d bytes of memory kept per idle connection after a large request and reply", grown/sessions)
	assert.Less(t, grown, int64(sessions*128<<10), "memory kept by idle connections")
	healthy.finish()
}
