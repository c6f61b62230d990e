package main

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/visibility"
)

// result is what one row did on one system.
type result struct {
	sys      string
	err      error           // the row could not be run
	damage   []string        // what was done to each victim's files
	served   []time.Duration // per victim, from its restart to serving; -1 if it did not
	lost     int             // acknowledged writes missing on some member, or older there
	corrupt  int             // values no one wrote, served by some member
	checked  int             // acknowledged writes checked, on each member that serves
	members  int             // members that serve, checked
	maxPause time.Duration   // the longest wait between two writes acknowledged through the others
	writes   int             // writes acknowledged through the others meanwhile
	evidence []string        // what the victims logged of it
}

// String is the table's cell.
func (r result) String() string {
	if r.err != nil {
		return "harness error: " + r.err.Error()
	}
	var b strings.Builder
	slowest, never := time.Duration(0), 0
	for _, d := range r.served {
		if d < 0 {
			never++
		}
		slowest = max(slowest, d)
	}
	if never > 0 {
		fmt.Fprintf(&b, "**%d of %d restarted members never serve**", never, len(r.served))
	} else {
		fmt.Fprintf(&b, "serves again %.1f s after its restart", slowest.Seconds())
	}
	loss := fmt.Sprintf("%d lost", r.lost)
	if r.lost > 0 {
		loss = "**" + loss + "**"
	}
	bad := fmt.Sprintf("%d corrupt served", r.corrupt)
	if r.corrupt > 0 {
		bad = "**" + bad + "**"
	}
	fmt.Fprintf(&b, "; %s, %s (%d writes, %d members)", loss, bad, r.checked, r.members)
	if r.writes > 0 || r.maxPause > 0 {
		fmt.Fprintf(&b, "; writes through the others paused ≤ %.1f s", r.maxPause.Seconds())
	}
	if len(r.evidence) > 0 {
		fmt.Fprintf(&b, "; logs `%s`", r.evidence[0])
	}
	return b.String()
}

func (r result) detail() string {
	return r.String() + "\n    damage: " + strings.Join(r.damage, "\n    damage: ") +
		"\n    logged: " + strings.Join(r.evidence, "\n    logged: ")
}

// acked holds the writes acknowledged, by path: the value last
// acknowledged, and the values acknowledged before it.
type acked struct {
	mu      sync.Mutex
	value   map[string]string
	earlier map[string][]string
}

func (a *acked) set(path, v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.value[path]; ok {
		a.earlier[path] = append(a.earlier[path], old)
	}
	a.value[path] = v
}

// measure runs row r on system sys.
func measure(o options, r row, sys string, rng *rand.Rand) (res result) {
	res.sys = sys
	dir := filepath.Join(o.dir, r.id+"-"+sys)
	var s system
	var err error
	if sys == "zkraft" {
		store := "wal"
		if r.bolt {
			store = "boltdb"
		}
		s, err = startZkraft(o.bin, dir, store, o.snaps)
	} else {
		s, err = startZK(o.realzk, dir, o.snaps)
	}
	if err != nil {
		res.err = err
		return res
	}
	defer s.Close()
	a := &acked{value: map[string]string{}, earlier: map[string][]string{}}
	if err := fill(o, s, a, rng); err != nil {
		res.err = err
		return res
	}
	victims := pickVictims(s, r.victims)
	logFrom := make([]int64, len(victims))
	for k, v := range victims {
		s.Kill(v)
		what, err := s.Damage(v, r.fault, rng)
		if err != nil {
			res.err = fmt.Errorf("damage member %d: %w", v, err)
			return res
		}
		res.damage = append(res.damage, fmt.Sprintf("member %d: %s", v, what))
		fmt.Fprintf(o.log, "%s/%s: member %d: %s\n", r.id, sys, v, what)
		if st, err := os.Stat(s.Log(v)); err == nil {
			logFrom[k] = st.Size()
		}
	}
	w := startWriter(s, victims, a)
	for _, v := range victims {
		if err := s.Restart(v); err != nil {
			res.err = err
			w.stop()
			return res
		}
	}
	for _, v := range victims {
		res.served = append(res.served, waitServing(s.Addrs()[v], o.serveWithin))
	}
	time.Sleep(time.Second) // a second more of writes, once every victim serves or gave up
	res.maxPause, res.writes = w.stop()
	for k, v := range victims {
		res.evidence = append(res.evidence, evidence(s.Log(v), logFrom[k], sys)...)
	}
	verify(s, a, &res)
	return res
}

// fill writes o.nodes znodes under /t, then sets o.late of them again.
func fill(o options, s system, a *acked, rng *rand.Rand) error {
	c, _, err := zk.Connect(s.Addrs(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := retry(func() (string, error) { return c.Create("/t", nil, 0, zk.WorldACL(zk.PermAll)) }); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create /t: %w", err)
	}
	for i := range o.nodes {
		path, v := fmt.Sprintf("/t/k-%05d", i), fmt.Sprintf("v-%05d-%08x", i, rng.Uint32())
		_, err := retry(func() (string, error) { return c.Create(path, []byte(v), 0, zk.WorldACL(zk.PermAll)) })
		if errors.Is(err, zk.ErrNodeExists) { // made by a try whose answer a lost connection took
			if got, _, gerr := c.Get(path); gerr == nil && string(got) == v {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		a.set(path, v)
	}
	for _, i := range rng.Perm(o.nodes)[:min(o.late, o.nodes)] {
		path, v := fmt.Sprintf("/t/k-%05d", i), fmt.Sprintf("late-%05d-%016x", i, rng.Uint64())
		if _, err := retry(func() (string, error) { _, err := c.Set(path, []byte(v), -1); return "", err }); err != nil {
			return fmt.Errorf("set %s: %w", path, err)
		}
		a.set(path, v)
	}
	// The last append spans sectors, so that a power cut can tear it.
	big := strings.Repeat("b", 16<<10)
	if _, err := retry(func() (string, error) { return c.Create("/t/big", []byte(big), 0, zk.WorldACL(zk.PermAll)) }); err != nil {
		return fmt.Errorf("create /t/big: %w", err)
	}
	a.set("/t/big", big)
	// Every member holds it all before the damage.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		zxids := map[string]bool{}
		for _, addr := range s.Addrs() {
			zxids[srvrZxid(addr)] = true
		}
		if len(zxids) == 1 && !zxids[""] {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the members did not all apply the writes")
}

// retry calls f again after a lost connection, for up to 20 s.
func retry(f func() (string, error)) (string, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := f()
		if err == nil || !(errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)) || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func srvrZxid(addr string) string {
	out, err := visibility.FourLetterWord(addr, "srvr", time.Second)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Zxid: "); ok {
			return v
		}
	}
	return ""
}

// pickVictims returns the members row r damages.
func pickVictims(s system, which string) []int {
	leader := s.Leader()
	if leader < 0 {
		leader = 0
	}
	var followers []int
	for i := range 3 {
		if i != leader {
			followers = append(followers, i)
		}
	}
	switch which {
	case "leader":
		return []int{leader}
	case "followers":
		return followers
	case "all":
		return []int{0, 1, 2}
	}
	return followers[:1]
}

// waitServing returns how long the member at addr took to serve (srvr
// says leader or follower), -1 if it did not within limit.
func waitServing(addr string, limit time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < limit {
		if mode, _ := visibility.ModeWithin(addr, time.Second); mode == "leader" || mode == "follower" {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// writer writes new znodes through the members that were not damaged (all
// of them once restarted, if every one was), and measures the longest wait
// between two acknowledged writes.
type writer struct {
	done    chan struct{}
	wg      sync.WaitGroup
	longest time.Duration
	count   int
}

func startWriter(s system, victims []int, a *acked) *writer {
	var addrs []string
	for i, addr := range s.Addrs() {
		if !contains(victims, i) || len(victims) == 3 {
			addrs = append(addrs, addr)
		}
	}
	w := &writer{done: make(chan struct{})}
	w.wg.Go(func() {
		c, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			return
		}
		defer c.Close()
		last := time.Now()
		for n := 0; ; n++ {
			select {
			case <-w.done:
				w.longest = max(w.longest, time.Since(last))
				return
			case <-time.After(20 * time.Millisecond):
			}
			path, v := fmt.Sprintf("/t/w-%05d", n), fmt.Sprintf("w-%05d", n)
			if _, err := c.Create(path, []byte(v), 0, zk.WorldACL(zk.PermAll)); err == nil {
				a.set(path, v)
				w.longest = max(w.longest, time.Since(last))
				last = time.Now()
				w.count++
			}
		}
	})
	return w
}

func (w *writer) stop() (time.Duration, int) {
	close(w.done)
	w.wg.Wait()
	return w.longest, w.count
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// verify reads every acknowledged write through every member that serves,
// after a sync.
func verify(s system, a *acked, res *result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	res.checked = len(a.value)
	lost, corrupt := map[string]bool{}, map[string]bool{}
	for _, addr := range s.Addrs() {
		if mode, _ := visibility.ModeWithin(addr, time.Second); mode != "leader" && mode != "follower" {
			continue
		}
		c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			continue
		}
		if _, err := c.Sync("/t"); err != nil {
			c.Close()
			continue
		}
		res.members++
		for path, want := range a.value {
			got, _, err := c.Get(path)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				lost[path] = true
			case err != nil:
			case string(got) == want:
			case contains2(a.earlier[path], string(got)):
				lost[path] = true // an older value: the newer, acknowledged, is gone
			default:
				corrupt[path] = true
			}
		}
		c.Close()
	}
	res.lost, res.corrupt = len(lost), len(corrupt)
}

func contains2(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// evidence returns the lines a victim logged after its restart that speak
// of the damage.
var evidencePattern = map[string]*regexp.Regexp{
	"zkraft": regexp.MustCompile(`corruption detected|torn write|repaired|level=ERROR|panic|fatal`),
	"realzk": regexp.MustCompile(`CRC|[Pp]artial|[Cc]orrupt|Exception|ERROR|Unable to load|Unexpected`),
}

var primaryPattern = map[string]*regexp.Regexp{
	"zkraft": regexp.MustCompile(`corruption detected|torn write`),
	"realzk": regexp.MustCompile(`CRC|[Pp]artial|[Cc]orrupt|Unable to load`),
}

func evidence(path string, from int64, sys string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		return nil
	}
	var first, rest []string // the system's own words for damage first
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(first)+len(rest) < 4 {
		line := sc.Text()
		switch {
		case primaryPattern[sys].MatchString(line):
			first = append(first, shorten(line))
		case evidencePattern[sys].MatchString(line):
			rest = append(rest, shorten(line))
		}
	}
	return append(first, rest...)
}

// shorten keeps a log line's message and its most telling fields.
func shorten(line string) string {
	if i := strings.Index(line, "msg="); i >= 0 {
		line = line[i:]
	} else if i := strings.Index(line, " - "); i >= 0 { // ZooKeeper's: time [thread] LEVEL class - message
		line = line[i+3:]
	}
	line = strings.ReplaceAll(line, "|", "/")
	if len(line) > 160 {
		line = line[:160] + "…"
	}
	return line
}
