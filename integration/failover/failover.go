// Package failover measures what a leader's death costs clients: sessions
// write in a loop through an ensemble's whole connect string while the
// leader is killed, and each trial reports the time from the kill to the
// first write issued after it that succeeds. The same code measures zkraft
// and ZooKeeper, in process or as separate processes (killed with SIGKILL).
package failover

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/visibility"
)

// Cluster is an ensemble whose members can be killed and started again.
// Members are numbered from 0 in the order of Addrs.
type Cluster interface {
	Addrs() []string
	Kill(i int) error
	Restart(i int) error
}

// Config is a measurement.
type Config struct {
	Sessions int           // writing sessions (default 4)
	Trials   int           // leader kills (default 5)
	Timeout  time.Duration // how long a trial may wait for a write to succeed (default 30s)
	Path     string        // znode under which the sessions write (default /zkfailover)
	Numbered int           // trials run before, for the numbers in progress lines
}

// Trial is one leader kill.
type Trial struct {
	Leader int       // the member killed
	Killed time.Time // when
	// Closed is from the kill to when a session on the killed member saw
	// its connection close: the operating system's part, which no server
	// can shorten (a busy machine schedules the dying process's exit late).
	Closed   time.Duration
	FirstAck time.Duration // from the kill to the first write issued after it that succeeded
	Failed   int           // writes that failed meanwhile (connection loss and the like)
}

// Run kills the leader Trials times under a write load, starting the killed
// member again after each trial and waiting until every member serves.
// progress, if not nil, gets a line per trial.
func Run(c Cluster, cfg Config, progress io.Writer) ([]Trial, error) {
	if cfg.Sessions == 0 {
		cfg.Sessions = 4
	}
	if cfg.Trials == 0 {
		cfg.Trials = 5
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Path == "" {
		cfg.Path = "/zkfailover"
	}
	var trials []Trial
	for n := range cfg.Trials {
		t, err := trial(c, cfg)
		if err != nil {
			return trials, fmt.Errorf("trial %d: %w", cfg.Numbered+n+1, err)
		}
		trials = append(trials, t)
		if progress != nil {
			fmt.Fprintf(progress, "trial %d: killed member %d at %s, its connections closed after %v, first write after %v (%d writes failed)\n",
				cfg.Numbered+n+1, t.Leader+1, t.Killed.Format("15:04:05.000"), t.Closed.Round(time.Millisecond),
				t.FirstAck.Round(time.Millisecond), t.Failed)
		}
	}
	return trials, nil
}

// write is one write's times.
type write struct {
	issued, done time.Time
	err          error
}

func trial(c Cluster, cfg Config) (Trial, error) {
	addrs := c.Addrs()
	leader, _, err := visibility.Roles(addrs, cfg.Timeout)
	if err != nil {
		return Trial{}, err
	}
	killed := -1
	for i, a := range addrs {
		if a == leader {
			killed = i
		}
	}
	conns := make([]*zk.Conn, cfg.Sessions)
	for i := range conns {
		conn, err := visibility.Connect(addrs, cfg.Timeout)
		if err != nil {
			return Trial{}, err
		}
		defer conn.Close()
		conns[i] = conn
	}
	// Setup, not measured: a connection lost meanwhile is tried again.
	for deadline := time.Now().Add(cfg.Timeout); ; {
		_, err := conns[0].Create(cfg.Path, nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrSessionMoved) || time.Now().After(deadline) {
			return Trial{}, fmt.Errorf("create %s: %w", cfg.Path, err)
		}
	}
	var (
		mu     sync.Mutex
		writes []write
		wg     sync.WaitGroup
	)
	stop := make(chan struct{})
	for i, conn := range conns {
		path := cfg.Path + "/s" + strconv.Itoa(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				w := write{issued: time.Now()}
				_, w.err = conn.Create(path, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
				w.done = time.Now()
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
				if w.err != nil {
					time.Sleep(time.Millisecond) // a failed write returns at once: do not spin
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	closed, err := watchClose(leader, cfg.Timeout)
	if err != nil {
		return Trial{}, err
	}
	// Let the load run before the kill, so that writes are in flight.
	time.Sleep(500 * time.Millisecond) // load before the fault, not synchronisation
	kill := time.Now()
	if err := c.Kill(killed); err != nil {
		return Trial{}, fmt.Errorf("kill member %d: %w", killed+1, err)
	}
	t := Trial{Leader: killed, Killed: kill}
	deadline := kill.Add(cfg.Timeout)
	for t.FirstAck == 0 {
		if time.Now().After(deadline) {
			return t, fmt.Errorf("no write succeeded within %v of killing member %d", cfg.Timeout, killed+1)
		}
		time.Sleep(5 * time.Millisecond) // polling the writers' record
		mu.Lock()
		for _, w := range writes {
			if w.issued.After(kill) && w.err == nil && (t.FirstAck == 0 || w.done.Sub(kill) < t.FirstAck) {
				t.FirstAck = w.done.Sub(kill)
			}
		}
		mu.Unlock()
	}
	select {
	case at := <-closed:
		t.Closed = at.Sub(kill)
	case <-time.After(cfg.Timeout):
		return t, fmt.Errorf("the session on member %d saw no close within %v of its kill", killed+1, cfg.Timeout)
	}
	mu.Lock()
	for _, w := range writes {
		if w.done.After(kill) && w.err != nil {
			t.Failed++
		}
	}
	mu.Unlock()
	if err := c.Restart(killed); err != nil {
		return t, fmt.Errorf("restart member %d: %w", killed+1, err)
	}
	// The next trial starts once every member serves again.
	deadline = time.Now().Add(cfg.Timeout)
	for {
		ok := true
		for _, a := range addrs {
			if mode, err := visibility.Mode(a); err != nil || (mode != "leader" && mode != "follower") {
				ok = false
			}
		}
		if ok {
			return t, nil
		}
		if time.Now().After(deadline) {
			return t, fmt.Errorf("member %d did not serve again within %v", killed+1, cfg.Timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling the members
	}
}

// Script is a cluster of processes run by a script with realzk's verbs
// and layout (../shared/tools/realzk, integration/scripts/zkraft-cluster):
// member i keeps its zoo.cfg and pid in DIR/n<i+1>, and `TOOL start-member
// DIR <i+1>` starts it again.
type Script struct {
	Tool, Dir string
	addrs     []string
}

// NewScript reads the members' client addresses from their zoo.cfg.
func NewScript(tool, dir string) (*Script, error) {
	s := &Script{Tool: tool, Dir: dir}
	for i := 1; ; i++ {
		f, err := os.Open(filepath.Join(dir, "n"+strconv.Itoa(i), "zoo.cfg"))
		if errors.Is(err, os.ErrNotExist) && i > 1 {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		host, port := "127.0.0.1", ""
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(strings.TrimSpace(sc.Text()), "=")
			switch k {
			case "clientPort":
				port = v
			case "clientPortAddress":
				host = v
			}
		}
		f.Close()
		if port == "" {
			return nil, fmt.Errorf("%s: member %d's zoo.cfg has no clientPort", dir, i)
		}
		s.addrs = append(s.addrs, host+":"+port)
	}
}

// Addrs implements Cluster.
func (s *Script) Addrs() []string { return s.addrs }

// Kill implements Cluster: SIGKILL, as kill -9.
func (s *Script) Kill(i int) error {
	pid, err := os.ReadFile(filepath.Join(s.Dir, "n"+strconv.Itoa(i+1), "pid"))
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		return err
	}
	proc, err := os.FindProcess(p)
	if err != nil {
		return err
	}
	return proc.Kill()
}

// Restart implements Cluster.
func (s *Script) Restart(i int) error {
	out, err := exec.Command(s.Tool, "start-member", s.Dir, strconv.Itoa(i+1)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s start-member: %w: %s", s.Tool, err, out)
	}
	return nil
}

// watchClose opens a session on addr alone and returns a channel that gets
// the time its connection is lost.
func watchClose(addr string, timeout time.Duration) (<-chan time.Time, error) {
	conn, events, err := visibility.ConnectEvents([]string{addr}, timeout)
	if err != nil {
		return nil, err
	}
	closed := make(chan time.Time, 1)
	go func() {
		defer conn.Close()
		for ev := range events {
			if ev.State == zk.StateDisconnected {
				closed <- time.Now()
				return
			}
		}
	}()
	return closed, nil
}
