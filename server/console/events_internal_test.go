package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// observing reports whether the console observes its server now.
func (c *Console) observing() bool {
	c.hub.mu.Lock()
	defer c.hub.mu.Unlock()
	return c.hub.stop != nil
}

func TestHub_ObservesOnlyWhileStreamsAreOpen(t *testing.T) {
	srv := servertest.NewServer(t)
	c, err := New(FromServer(srv.Server), Options{})
	require.NoError(t, err)
	hs := httptest.NewServer(c)
	t.Cleanup(hs.Close)
	assert.False(t, c.observing(), "no stream: the server is not observed")

	open := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/api/events", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req) // returns once the hello is flushed
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return cancel
	}
	first, second := open(), open()
	assert.True(t, c.observing())
	first()
	second()
	assert.Eventually(t, func() bool { return !c.observing() }, 10*time.Second, time.Millisecond,
		"the last stream gone: the observation stopped")
}

func TestStream_MergesAndBounds(t *testing.T) {
	s := &stream{ready: make(chan struct{}, 1)}
	s.add(server.Change{Zxid: 5, Paths: []string{"/a", "/"}})
	s.add(server.Change{Zxid: 6, Paths: []string{"/a"}, Sessions: true})
	assert.Equal(t, Event{Zxid: 6, Paths: []string{"/a", "/"}, Sessions: true}, s.take())
	assert.Len(t, s.ready, 1, "one token for any number of changes")
	for i := range maxPending + 1 {
		s.add(server.Change{Zxid: int64(i), Paths: []string{"/n" + string(rune('a'+i%26)) + string(rune('a'+i/26))}})
	}
	e := s.take()
	assert.True(t, e.Resync, "more paths than kept: resync")
	assert.Empty(t, e.Paths)
	s.add(server.Change{Zxid: 9, Restored: true})
	assert.True(t, s.take().Resync)
	assert.Equal(t, Event{}, s.take())
}
