// Package visibility measures how soon a write acknowledged through one
// member of an ensemble can be read through another: a session writes a
// znode through the first address and, as soon as it has the reply, a
// second session reads it through the second address, again and again
// until it sees the write. It reports the share of first reads that were
// stale and the visibility delay, from the writer's reply to the first read
// that shows the write. The same code measures zkraft and ZooKeeper.
package visibility

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Config is one measurement.
type Config struct {
	Write, Read string        // host:port of the member written through and read through
	Tries       int           // writes measured
	Path        string        // the znode written (created if missing)
	Timeout     time.Duration // how long a try may wait for the write to show (default 5s)
}

// Result is a measurement.
type Result struct {
	Tries      int
	StaleFirst int             // tries whose first read did not show the write
	Delays     []time.Duration // per try, from the write's reply to the read that showed it, sorted
}

// StaleShare returns the share of stale first reads, 0..1.
func (r Result) StaleShare() float64 {
	if r.Tries == 0 {
		return 0
	}
	return float64(r.StaleFirst) / float64(r.Tries)
}

// Percentile returns the delay at quantile q (0..1).
func (r Result) Percentile(q float64) time.Duration {
	if len(r.Delays) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.Delays))), len(r.Delays)-1)
	return r.Delays[i]
}

// Max returns the longest delay.
func (r Result) Max() time.Duration {
	if len(r.Delays) == 0 {
		return 0
	}
	return r.Delays[len(r.Delays)-1]
}

// Connect opens a session through servers (one server pins it there) and
// waits, until timeout, until it has one. go-zookeeper's logging is
// discarded: connection errors are expected where members are killed.
func Connect(servers []string, timeout time.Duration) (*zk.Conn, error) {
	conn, events, err := ConnectEvents(servers, timeout)
	if err != nil {
		return nil, err
	}
	go func() {
		for range events {
		}
	}()
	return conn, nil
}

// ConnectEvents is Connect for a caller that reads the session's later
// events (it must, until the channel closes).
func ConnectEvents(servers []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event, error) {
	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, nil, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn, events, nil
			}
		case <-deadline:
			conn.Close()
			return nil, nil, fmt.Errorf("no session with %v within %v", servers, timeout)
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Measure runs one measurement.
func Measure(cfg Config) (Result, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Path == "" {
		cfg.Path = "/zkvis"
	}
	w, err := Connect([]string{cfg.Write}, cfg.Timeout)
	if err != nil {
		return Result{}, err
	}
	defer w.Close()
	r, err := Connect([]string{cfg.Read}, cfg.Timeout)
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	if _, err := w.Create(cfg.Path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return Result{}, fmt.Errorf("create %s: %w", cfg.Path, err)
	}
	// The reader must know the node before the first try.
	if _, err := r.Sync(cfg.Path); err != nil {
		return Result{}, fmt.Errorf("sync: %w", err)
	}
	// Tries cut short by a lost connection (a leader change) are made
	// again, within a bound.
	deadline := time.Now().Add(time.Duration(cfg.Tries) * cfg.Timeout)
	res := Result{Tries: cfg.Tries}
	for i := 0; i < cfg.Tries; i++ {
		want := []byte(strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36))
		if _, err := w.Set(cfg.Path, want, -1); err != nil {
			if Lost(err) && time.Now().Before(deadline) {
				i-- // a leader change cut the connection: the try is made again
				continue
			}
			return res, fmt.Errorf("set: %w", err)
		}
		acked := time.Now()
		for first := true; ; first = false {
			got, _, err := r.Get(cfg.Path)
			if Lost(err) && time.Since(acked) <= cfg.Timeout {
				continue // the reader reconnects; the try goes on
			}
			if err != nil {
				return res, fmt.Errorf("get: %w", err)
			}
			if slices.Equal(got, want) {
				res.Delays = append(res.Delays, time.Since(acked))
				break
			}
			if first {
				res.StaleFirst++
			}
			if time.Since(acked) > cfg.Timeout {
				return res, fmt.Errorf("try %d: write not visible through %s after %v", i, cfg.Read, cfg.Timeout)
			}
		}
	}
	slices.Sort(res.Delays)
	return res, nil
}

// Lost reports whether err is a connection lost under a request, which
// leaves the request's outcome unknown.
func Lost(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing)
}

// Roles finds the leader and the followers among an ensemble's addresses
// with the srvr four-letter word (which every ZooKeeper allows), waiting up
// to timeout for the ensemble to have a leader and every member to serve.
func Roles(addrs []string, timeout time.Duration) (leader string, followers []string, err error) {
	deadline := time.Now().Add(timeout)
	for {
		leader, followers, err = roles(addrs)
		if err == nil || time.Now().After(deadline) {
			return leader, followers, err
		}
		time.Sleep(100 * time.Millisecond) // polling servers that are still electing
	}
}

func roles(addrs []string) (leader string, followers []string, err error) {
	for _, addr := range addrs {
		mode, err := Mode(addr)
		if err != nil {
			return "", nil, err
		}
		switch mode {
		case "leader":
			leader = addr
		case "follower":
			followers = append(followers, addr)
		}
	}
	if leader == "" {
		return "", nil, errors.New("no leader among " + strings.Join(addrs, ","))
	}
	return leader, followers, nil
}

// Mode returns the Mode line of a server's srvr answer (leader, follower,
// observer, standalone). go-zookeeper's FLWSrvr cannot parse the build
// date ZooKeeper 3.7 and later print.
func Mode(addr string) (string, error) { return ModeWithin(addr, 5*time.Second) }

// ModeWithin is Mode with its own limit on the whole exchange: a stopped
// (SIGSTOP) member accepts the connection in the kernel but never answers.
func ModeWithin(addr string, limit time.Duration) (string, error) {
	out, err := FourLetterWord(addr, "srvr", limit)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(out) {
		if mode, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode: "); ok {
			return mode, nil
		}
	}
	return "", fmt.Errorf("srvr %s: no mode in %q", addr, out)
}

// FourLetterWord sends a four-letter word to addr and returns the answer,
// all within limit.
func FourLetterWord(addr, word string, limit time.Duration) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, limit)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(limit))
	if _, err := nc.Write([]byte(word)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(nc)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", word, addr, err)
	}
	return string(out), nil
}
