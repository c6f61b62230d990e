// Package steady measures how steady a cluster is for a client: one session
// sets a znode at a fixed interval for a while, and each member's srvr is
// polled for who leads. It reports the writes that failed and the leader
// changes seen. cmd/zksteady runs it against zkraft and ZooKeeper, with a
// CPU hog beside them.
package steady

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/visibility"
)

// Config is one measurement.
type Config struct {
	Clients  []string      // the members' client addresses
	Duration time.Duration // how long the session writes
	Every    time.Duration // between two writes (default 50ms)
	Poll     time.Duration // between two polls of srvr (default 100ms)
	Path     string        // the znode set (default /steady)
}

// Result is what a measurement saw.
type Result struct {
	Writes, Failed int
	Errors         map[string]int // failed writes by error
	LeaderChanges  int            // the leader srvr names changed (a member took over from another)
	Leaderless     time.Duration  // time no member answered "leader"
	Leaders        []int          // the leaders seen, in order (member index)
	MaxWrite, P99  time.Duration  // write latencies
	Started        time.Time
}

// String is the result in one line.
func (r Result) String() string {
	return fmt.Sprintf("%d writes, %d failed %v, %d leader changes (leaders %v), %.1fs without a leader, write p99 %v max %v",
		r.Writes, r.Failed, r.Errors, r.LeaderChanges, r.Leaders, r.Leaderless.Seconds(),
		r.P99.Round(time.Millisecond), r.MaxWrite.Round(time.Millisecond))
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Run measures until cfg.Duration has passed or ctx ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Every == 0 {
		cfg.Every = 50 * time.Millisecond
	}
	if cfg.Poll == 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.Path == "" {
		cfg.Path = "/steady"
	}
	conn, events, err := zk.Connect(cfg.Clients, 30*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	go func() {
		for range events {
		}
	}()
	if _, err := conn.Create(cfg.Path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		return Result{}, fmt.Errorf("create %s: %w", cfg.Path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	res := Result{Errors: map[string]int{}, Started: time.Now()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		leaders, changes, leaderless := pollLeaders(ctx, cfg)
		mu.Lock()
		res.Leaders, res.LeaderChanges, res.Leaderless = leaders, changes, leaderless
		mu.Unlock()
	}()
	var lat []time.Duration
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			slices.Sort(lat)
			if len(lat) > 0 {
				res.P99, res.MaxWrite = lat[len(lat)*99/100], lat[len(lat)-1]
			}
			return res, nil
		case <-tick.C:
		}
		start := time.Now()
		_, err := conn.Set(cfg.Path, []byte(strconv.Itoa(i)), -1)
		lat = append(lat, time.Since(start))
		res.Writes++
		if err != nil {
			res.Failed++
			res.Errors[err.Error()]++
		}
	}
}

// pollLeaders asks each member's srvr for its mode every cfg.Poll and
// counts the changes of the member that leads.
func pollLeaders(ctx context.Context, cfg Config) (leaders []int, changes int, leaderless time.Duration) {
	last := -1
	var since time.Time
	t := time.NewTicker(cfg.Poll)
	defer t.Stop()
	for {
		leader := -1
		for i, addr := range cfg.Clients {
			if mode, err := visibility.ModeWithin(addr, cfg.Poll*5); err == nil && mode == "leader" {
				leader = i
				break
			}
		}
		now := time.Now()
		switch {
		case leader < 0 && since.IsZero():
			since = now
		case leader >= 0:
			if !since.IsZero() {
				leaderless += now.Sub(since)
				since = time.Time{}
			}
			if leader != last {
				if last >= 0 {
					changes++
				}
				leaders = append(leaders, leader)
				last = leader
			}
		}
		select {
		case <-ctx.Done():
			if !since.IsZero() {
				leaderless += time.Since(since)
			}
			return leaders, changes, leaderless
		case <-t.C:
		}
	}
}
