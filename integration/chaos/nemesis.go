package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Target is a cluster the nemesis can hurt. Members are numbered from 0.
type Target interface {
	Members() int
	Leader() int // the member that leads, or -1
	Kill(i int)
	Restart(i int)
	Partition(groups ...[]int)
	Heal()
	DropClientConnections(i int)
}

// Fault kinds, as counted in Result.Faults.
const (
	FaultKillLeader     = "kill-leader"
	FaultKillFollower   = "kill-follower"
	FaultIsolateLeader  = "isolate-leader"
	FaultPartition      = "partition-minority"
	FaultBridge         = "partition-bridge"
	FaultDropClientConn = "drop-client-connections"
)

// faultKinds are the faults the nemesis picks from, each equally likely.
var faultKinds = []string{FaultKillLeader, FaultKillFollower, FaultIsolateLeader, FaultPartition, FaultBridge,
	FaultDropClientConn}

// nemesis injects one fault at a time into a target, holds it a while,
// then undoes it, until ctx ends; everything is healed and restarted when
// it returns. Its choices come from rng alone, so a seed repeats them.
type nemesis struct {
	target   Target
	rng      *rand.Rand
	hold     [2]time.Duration // how long a fault lasts: uniform in [hold[0], hold[1])
	interval [2]time.Duration // the calm between faults
	log      func(format string, args ...any)

	mu     sync.Mutex
	counts map[string]int
}

func (n *nemesis) between(r [2]time.Duration) time.Duration {
	if r[1] <= r[0] {
		return r[0]
	}
	return r[0] + time.Duration(n.rng.Int64N(int64(r[1]-r[0])))
}

func (n *nemesis) run(ctx context.Context) {
	for {
		if !sleepCtx(ctx, n.between(n.interval)) {
			return
		}
		kind := faultKinds[n.rng.IntN(len(faultKinds))]
		undo := n.inject(kind)
		if undo == nil {
			continue
		}
		n.mu.Lock()
		n.counts[kind]++
		n.mu.Unlock()
		sleepCtx(ctx, n.between(n.hold))
		undo()
	}
}

// inject starts a fault of kind and returns what ends it (nil if it could
// not be injected, e.g. with no leader known).
func (n *nemesis) inject(kind string) func() {
	t := n.target
	members := t.Members()
	leader := t.Leader()
	switch kind {
	case FaultKillLeader, FaultKillFollower:
		victim := leader
		if kind == FaultKillFollower {
			victim = n.other(leader)
		}
		if victim < 0 {
			return nil
		}
		n.log("nemesis: kill member %d (%s)", victim, kind)
		t.Kill(victim)
		return func() { n.log("nemesis: restart member %d", victim); t.Restart(victim) }
	case FaultIsolateLeader:
		if leader < 0 {
			return nil
		}
		n.log("nemesis: isolate leader %d", leader)
		t.Partition([]int{leader}, n.except(leader))
		return n.heal
	case FaultPartition:
		perm := n.rng.Perm(members)
		minority := perm[:(members-1)/2]
		n.log("nemesis: partition %v from the rest", minority)
		t.Partition(minority, n.except(minority...))
		return n.heal
	case FaultBridge:
		if members < 3 {
			return nil
		}
		// Two sides that each reach the member between them, and not each other.
		perm := n.rng.Perm(members)
		bridge, rest := perm[0], perm[1:]
		a, b := append([]int{bridge}, rest[:len(rest)/2]...), append([]int{bridge}, rest[len(rest)/2:]...)
		n.log("nemesis: bridge %d between %v and %v", bridge, a[1:], b[1:])
		t.Partition(a, b)
		return n.heal
	case FaultDropClientConn:
		victim := n.rng.IntN(members)
		n.log("nemesis: drop the client connections of member %d", victim)
		t.DropClientConnections(victim)
		return func() {}
	}
	return nil
}

func (n *nemesis) heal() { n.log("nemesis: heal"); n.target.Heal() }

// other returns a member other than leader, at random.
func (n *nemesis) other(leader int) int {
	members := n.target.Members()
	if members < 2 {
		return -1
	}
	for {
		if i := n.rng.IntN(members); i != leader {
			return i
		}
	}
}

// except returns the members not in these.
func (n *nemesis) except(these ...int) []int {
	var out []int
	for i := range n.target.Members() {
		found := false
		for _, x := range these {
			found = found || x == i
		}
		if !found {
			out = append(out, i)
		}
	}
	return out
}

func (n *nemesis) faults() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]int, len(n.counts))
	for k, v := range n.counts {
		out[k] = v
	}
	return out
}

// sleepCtx waits d or until ctx ends, and reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
