package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcess_DurableStandaloneKeepsWhatItAnsweredThroughSIGKILL kills a
// standalone server with a data dir (SIGKILL, no shutdown) while sixteen
// writers create znodes and a reader lists them, and starts it again on
// the same dir: every create it acknowledged is there, and so is every
// znode a reader was shown. (The kernel keeps what a killed process wrote:
// this is the restart with writes in flight, not a power loss.)
func TestProcess_DurableStandaloneKeepsWhatItAnsweredThroughSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, stderr := startZkraft(t, "-port", "0", "-data-dir", dir)
	addr := waitForAddr(t, stderr)

	const before = 2000 // creates acknowledged before the kill
	var (
		mu     sync.Mutex
		acked  []string
		seen   = map[string]bool{}
		wg     sync.WaitGroup
		enough = make(chan struct{}) // closed at the before-th acknowledgement
	)
	var conns []*zk.Conn
	for c := range 4 {
		conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
		require.NoError(t, err)
		conns = append(conns, conn)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					path := fmt.Sprintf("/w-%d-%d-%d", c, w, i)
					if _, err := conn.Create(path, []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
						return // the server is gone
					}
					mu.Lock()
					if acked = append(acked, path); len(acked) == before {
						close(enough)
					}
					mu.Unlock()
				}
			}()
		}
	}
	reader, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	conns = append(conns, reader)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			names, _, err := reader.Children("/")
			if err != nil {
				return
			}
			mu.Lock()
			for _, n := range names {
				seen["/"+n] = true
			}
			mu.Unlock()
		}
	}()

	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d creates not acknowledged within 30s", before)
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	for _, c := range conns {
		c.Close() // the clients' calls fail and their goroutines end
	}
	wg.Wait()

	_, stderr = startZkraft(t, "-port", "0", "-data-dir", dir)
	after, _, err := zk.Connect([]string{waitForAddr(t, stderr)}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer after.Close()
	names, _, err := after.Children("/")
	require.NoError(t, err)
	have := map[string]bool{}
	for _, n := range names {
		have["/"+n] = true
	}
	mu.Lock()
	defer mu.Unlock()
	var lost []string
	for _, p := range acked {
		if !have[p] {
			lost = append(lost, p)
		}
	}
	assert.Empty(t, lost, "acknowledged creates lost (of %d acknowledged)", len(acked))
	var unseen []string
	for p := range seen {
		if p != "/zookeeper" && !have[p] {
			unseen = append(unseen, p)
		}
	}
	assert.Empty(t, unseen, "znodes a reader was shown and the restarted server lacks")
	t.Logf("%d creates acknowledged before the kill, %d znodes after the restart", len(acked), len(names))
}
