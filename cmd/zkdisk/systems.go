package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkraft/zkraft/integration/chaos"
	"github.com/zkraft/zkraft/integration/visibility"
	"github.com/zkraft/zkraft/server/raftstore/damage"
)

// system is a three-member cluster of separate processes whose stopped
// members' files a fault damages.
type system interface {
	Name() string
	Addrs() []string
	Kill(i int)
	Restart(i int) error
	Leader() int
	// Damage damages stopped member i's files with fault f and says what
	// it did.
	Damage(i int, f fault, r *rand.Rand) (string, error)
	// Log returns member i's server log.
	Log(i int) string
	Close()
}

// zkraftSystem is three zkraft processes (integration/chaos.Processes).
type zkraftSystem struct {
	p        *chaos.Processes
	logStore string
}

func startZkraft(bin, dir, logStore string, snapCount int) (*zkraftSystem, error) {
	p, err := chaos.StartProcessesConfig(bin, dir, 3, logStore, fmt.Sprintf("snapCount=%d\n", snapCount))
	if err != nil {
		return nil, err
	}
	return &zkraftSystem{p: p, logStore: logStore}, nil
}

func (s *zkraftSystem) Name() string {
	if s.logStore == "boltdb" {
		return "zkraft (raft-boltdb)"
	}
	return "zkraft"
}
func (s *zkraftSystem) Addrs() []string     { return s.p.Addrs() }
func (s *zkraftSystem) Kill(i int)          { s.p.Kill(i) }
func (s *zkraftSystem) Restart(i int) error { s.p.Restart(i); return nil }
func (s *zkraftSystem) Leader() int         { return s.p.Leader() }
func (s *zkraftSystem) Log(i int) string    { return s.p.LogFile(i) }
func (s *zkraftSystem) Close()              { s.p.Close() }

func (s *zkraftSystem) Damage(i int, f fault, r *rand.Rand) (string, error) {
	dir := s.p.DataDir(i)
	switch f {
	case faultFlip:
		return damage.Apply(dir, damage.FlipEntry, r)
	case faultZero:
		return damage.Apply(dir, damage.ZeroBlock, r)
	case faultTruncate:
		return damage.Apply(dir, damage.Truncate, r)
	case faultSnapshot:
		return damage.Apply(dir, damage.Snapshot, r)
	case faultTerm:
		return damage.Apply(dir, damage.Vote, r)
	case faultPower:
		return damage.Apply(dir, damage.TornWrite, r)
	case faultBoltPage:
		return damage.Apply(dir, damage.Meta, r)
	case faultBoltTruncate:
		path := filepath.Join(dir, "raft.db")
		st, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("cut %s from %d to %d bytes", path, st.Size(), st.Size()/2), os.Truncate(path, st.Size()/2)
	}
	return "", fmt.Errorf("zkdisk: zkraft has no fault %s", f)
}

// zkSystem is three Apache ZooKeeper 3.8 processes started by the realzk
// tool, with a zoo.cfg that takes snapshots as often as zkraft's.
type zkSystem struct {
	script string // the realzk copy that writes snapCount
	dir    string
	base   int
}

func startZK(realzk, dir string, snapCount int) (*zkSystem, error) {
	b, err := os.ReadFile(realzk)
	if err != nil {
		return nil, err
	}
	// realzk's zoo.cfg, with ZooKeeper's snapCount as zkraft's: each
	// member snapshots after snapCount/2 to snapCount transactions.
	text := strings.Replace(string(b), "4lw.commands.whitelist=*\n", fmt.Sprintf("4lw.commands.whitelist=*\nsnapCount=%d\n", snapCount), 1)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "realzk")
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		return nil, err
	}
	base, err := freeBase()
	if err != nil {
		return nil, err
	}
	s := &zkSystem{script: script, dir: filepath.Join(dir, "zk"), base: base}
	if out, err := exec.Command(script, "cluster", s.dir, strconv.Itoa(base)).CombinedOutput(); err != nil {
		s.Close()
		return nil, fmt.Errorf("realzk cluster: %v: %s", err, out)
	}
	return s, nil
}

// freeBase finds a base port for a realzk cluster: base..base+2 for
// clients, base+101..103 and base+201..203 between the members.
func freeBase() (int, error) {
	for range 50 {
		base := 20000 + rand.IntN(12000) // below the kernel's ephemeral ports
		free := true
		for _, off := range []int{0, 1, 2, 101, 102, 103, 201, 202, 203} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base, nil
		}
	}
	return 0, errors.New("zkdisk: no free ports for ZooKeeper")
}

func (s *zkSystem) Name() string { return "ZooKeeper 3.8" }

func (s *zkSystem) Addrs() []string {
	return []string{fmt.Sprintf("127.0.0.1:%d", s.base), fmt.Sprintf("127.0.0.1:%d", s.base+1), fmt.Sprintf("127.0.0.1:%d", s.base+2)}
}

func (s *zkSystem) member(i int) string { return filepath.Join(s.dir, fmt.Sprintf("n%d", i+1)) }

func (s *zkSystem) Kill(i int) {
	b, err := os.ReadFile(filepath.Join(s.member(i), "pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 100 { // until the process is gone
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *zkSystem) Restart(i int) error {
	if out, err := exec.Command(s.script, "start-member", s.dir, strconv.Itoa(i+1)).CombinedOutput(); err != nil {
		return fmt.Errorf("realzk start-member: %v: %s", err, out)
	}
	return nil
}

func (s *zkSystem) Leader() int {
	for i, addr := range s.Addrs() {
		if mode, _ := visibility.ModeWithin(addr, time.Second); mode == "leader" {
			return i
		}
	}
	return -1
}

func (s *zkSystem) Log(i int) string { return filepath.Join(s.member(i), "server.log") }

func (s *zkSystem) Close() {
	for i := range 3 {
		s.Kill(i)
	}
}

func (s *zkSystem) Damage(i int, f fault, r *rand.Rand) (string, error) {
	return damageZK(filepath.Join(s.member(i), "data", "version-2"), f, r)
}
