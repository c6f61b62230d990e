package integration

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestFourLetterWords reads ruok, srvr and cons through go-zookeeper's
// parsers, which are strict about the format.
func TestFourLetterWords(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	servers := []string{addr}
	clients := make([]*zk.Conn, 3)
	for i := range clients {
		clients[i], _ = mustConnectRecorded(t, addr, time.Duration(4+i)*time.Second)
	}
	mustCreate(t, clients[0], "/flw", []byte("x"))
	mustCreate(t, clients[0], "/flw/a", nil)
	_, err := clients[1].Create("/flw/e", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	_, _, err = clients[2].Get("/flw")
	require.NoError(t, err)
	lastZxid := mustStat(t, clients[1], "/flw/e").Czxid

	t.Run("ruok", func(t *testing.T) {
		assert.Equal(t, []bool{true}, zk.FLWRuok(servers, waitTimeout))
	})

	t.Run("srvr", func(t *testing.T) {
		stats, ok := zk.FLWSrvr(servers, waitTimeout)
		require.True(t, ok, "srvr did not parse: %+v", stats)
		require.Len(t, stats, 1)
		s := stats[0]
		require.NoError(t, s.Error)
		assert.Equal(t, zk.ModeStandalone, s.Mode)
		assert.Equal(t, int64(5+3), s.NodeCount, "5 nodes in a fresh tree (the root counted twice) and 3 created")
		assert.GreaterOrEqual(t, s.Connections, int64(len(clients)))
		assert.Zero(t, s.Outstanding)
		assert.Positive(t, s.Received)
		assert.Positive(t, s.Sent)
		assert.True(t, strings.HasPrefix(s.Version, "3.8"), "version %q", s.Version)
		assert.False(t, s.BuildTime.IsZero())
		assert.LessOrEqual(t, s.MinLatency, s.MaxLatency)
		zxid := int64(s.Epoch)<<32 | int64(uint32(s.Counter))
		assert.GreaterOrEqual(t, zxid, lastZxid, "srvr's zxid is the last applied one")
	})

	t.Run("cons", func(t *testing.T) {
		cons, ok := zk.FLWCons(servers, waitTimeout)
		require.True(t, ok, "cons did not parse: %+v", cons)
		require.Len(t, cons, 1)
		require.NoError(t, cons[0].Error)
		bySession := make(map[int64]*zk.ServerClient)
		for _, cl := range cons[0].Clients {
			bySession[cl.SessionID] = cl
		}
		require.Len(t, bySession, len(clients), "one line per session: %+v", cons[0].Clients)
		for i, c := range clients {
			cl := bySession[c.SessionID()]
			if !assert.NotNil(t, cl, "session %#x of client %d not listed", c.SessionID(), i) {
				continue
			}
			assert.Equal(t, int32(4000+1000*i), cl.Timeout, "negotiated timeout of client %d", i)
			host, _, err := net.SplitHostPort(cl.Addr)
			assert.NoError(t, err)
			assert.Equal(t, "127.0.0.1", host)
			assert.Positive(t, cl.Received)
			assert.Positive(t, cl.Sent)
			assert.Zero(t, cl.Queued)
			assert.NotEmpty(t, cl.LastOperation)
			assert.Positive(t, cl.Lzxid)
			assert.LessOrEqual(t, cl.MinLatency, cl.MaxLatency)
		}
	})

	t.Run("cons after a client closes", func(t *testing.T) {
		gone := clients[0].SessionID()
		clients[0].Close()
		waitCondition(t, "closed session dropped from cons", func() error {
			cons, ok := zk.FLWCons(servers, waitTimeout)
			if !ok {
				return fmt.Errorf("cons did not parse: %+v", cons)
			}
			for _, cl := range cons[0].Clients {
				if cl.SessionID == gone {
					return fmt.Errorf("session %#x still listed", gone)
				}
			}
			if len(cons[0].Clients) != len(clients)-1 {
				return fmt.Errorf("%d sessions listed, want %d", len(cons[0].Clients), len(clients)-1)
			}
			return nil
		})
	})
}

// TestLockMutualExclusion runs go-zookeeper's lock recipe (ephemeral
// sequential nodes, each waiter watching only its predecessor) on 10
// sessions at once. The counter is protected by nothing but the lock, so
// the race detector sees any overlap; the in-section flag catches it
// without the race detector.
func TestLockMutualExclusion(t *testing.T) {
	const sessions, rounds = 10, 20
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	conns := make([]*zk.Conn, sessions)
	for i := range conns {
		conns[i], _ = mustConnectRecorded(t, addr, 10*time.Second)
	}

	var (
		counter   int // guarded by the ZooKeeper lock only
		inSection atomic.Bool
		overlaps  atomic.Int32
		holders   = make([]int, 0, sessions*rounds) // guarded by the ZooKeeper lock only
		wg        sync.WaitGroup
		errs      = make(chan error, sessions)
	)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := zk.NewLock(c, "/locks/mutex", openACL)
			for r := 0; r < rounds; r++ {
				if err := l.Lock(); err != nil {
					errs <- fmt.Errorf("session %d round %d: lock: %w", i, r, err)
					return
				}
				if !inSection.CompareAndSwap(false, true) {
					overlaps.Add(1)
				}
				v := counter
				holders = append(holders, i)
				counter = v + 1
				inSection.Store(false)
				if err := l.Unlock(); err != nil {
					errs <- fmt.Errorf("session %d round %d: unlock: %w", i, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, overlaps.Load(), "two sessions held the lock at once")
	assert.Equal(t, sessions*rounds, counter)
	perSession := make(map[int]int)
	for _, h := range holders {
		perSession[h]++
	}
	for i := 0; i < sessions; i++ {
		assert.Equal(t, rounds, perSession[i], "acquisitions by session %d", i)
	}
	kids, st, err := conns[0].Children("/locks/mutex")
	require.NoError(t, err)
	assert.Empty(t, kids, "every lock node was deleted")
	assert.Equal(t, int32(2*sessions*rounds), st.Cversion, "one create and one delete per acquisition")
}
