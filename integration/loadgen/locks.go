package loadgen

import (
	"context"
	"fmt"
	"io"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/lockrecipe"
)

// Handoffs measures how fast a lockrecipe.Mutex passes from holder to
// holder: Contenders sessions (go-zookeeper clients, each its own) loop on
// Lock and Unlock with nothing in between, for Warmup and then Duration.
// With one contender a handoff is an uncontended Lock and Unlock.
type Handoffs struct {
	Addr       string
	Root       string
	Contenders int
	Duration   time.Duration
	Warmup     time.Duration
}

// HandoffResult is what a run measured: handoffs in the measured time and
// how long each Lock waited, sorted.
type HandoffResult struct {
	Handoffs int
	Elapsed  time.Duration
	Waits    []time.Duration
}

// PerSec returns the handoff rate.
func (r HandoffResult) PerSec() float64 { return float64(r.Handoffs) / r.Elapsed.Seconds() }

// Run runs the contenders and closes their sessions.
func (h Handoffs) Run() (HandoffResult, error) {
	var res HandoffResult
	conns := make([]*zk.Conn, h.Contenders)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := connectZK(h.Addr)
		if err != nil {
			return res, err
		}
		conns[i] = c
	}
	path := h.Root + "/lock"
	ctx, cancel := context.WithTimeout(context.Background(), h.Warmup+h.Duration+time.Minute)
	defer cancel()
	measureFrom := time.Now().Add(h.Warmup)
	end := measureFrom.Add(h.Duration)
	waits := make([][]time.Duration, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, conn := range conns {
		m := lockrecipe.NewMutex(conn, path)
		wg.Go(func() {
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				if err := m.Lock(ctx); err != nil {
					errs[i] = err
					return
				}
				if t0.After(measureFrom) && time.Now().Before(end) {
					waits[i] = append(waits[i], time.Since(t0))
				}
				if err := m.Unlock(); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	res.Waits = slices.Concat(waits...)
	slices.Sort(res.Waits)
	res.Handoffs, res.Elapsed = len(res.Waits), h.Duration
	return res, nil
}

// connectZK opens a go-zookeeper session on the comma-separated addresses
// and waits until it has one.
func connectZK(addrs string) (*zk.Conn, error) {
	conn, events, err := zk.Connect(splitAddrs(addrs), 30*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return nil, err
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() { // the client blocks on an unread event channel
					for range events {
					}
				}()
				return conn, nil
			}
		case <-timeout:
			conn.Close()
			return nil, fmt.Errorf("connect to %s: no session in 30 s", addrs)
		}
	}
}
