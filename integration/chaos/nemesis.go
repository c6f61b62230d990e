package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Target is a cluster the nemesis can hurt. Members are numbered from 0.
// A target may also be a Partitioner, a ConnDropper, a Pauser or a Wiper;
// the nemesis injects only the faults its target supports.
type Target interface {
	Members() int
	Leader() int // the member that leads, or -1
	Kill(i int)  // as a crash: SIGKILL
	Restart(i int)
}

// Partitioner cuts the links between members that share no group (two
// members named in no group keep theirs; a member in two groups bridges
// them), and heals them.
type Partitioner interface {
	Partition(groups ...[]int)
	Heal()
}

// Degrader makes the links between two members delay and lose messages
// (Heal restores them).
type Degrader interface {
	Degrade(i, j int, delay time.Duration, loss float64)
	Heal()
}

// ClockStepper steps a member's wall clock (back if d is negative), as an
// NTP step or an operator would.
type ClockStepper interface{ StepClock(i int, d time.Duration) }

// ConnDropper cuts a member's client connections; their sessions live on.
type ConnDropper interface{ DropClientConnections(i int) }

// Pauser stops a member's process (SIGSTOP) and lets it go on (SIGCONT).
type Pauser interface {
	Pause(i int)
	Resume(i int)
}

// Wiper deletes a killed member's data (its log and snapshots), so that
// it restarts empty.
type Wiper interface{ Wipe(i int) }

// Damager damages a killed durable member's files as a failing disk would
// (server/raftstore/damage: bytes flipped in an entry, a block zeroed, a
// file cut short, the last append torn, a snapshot, the term and vote record
// or the log's metadata damaged), choosing the kind and place with r, and
// says what it did. A Repairer tells whether such a member, restarted,
// serves again with what it lost back from the others.
type Damager interface {
	Damage(i int, r *rand.Rand) (string, error)
}

// Repairer reports whether member i serves and is no longer getting back
// entries it lost (mntr zk_repairing 0).
type Repairer interface{ Repaired(i int) bool }

// repairWithin is how long a damaged member has, from its restart, to
// serve again, repaired.
const repairWithin = 30 * time.Second

// Lagger tells how far each member's state is behind the furthest, in
// transactions (-1 for a member that is down or does not answer), and
// whether members keep their state on disk. A fault that destroys a
// member's state (a wipe, or a kill of an in-memory member) waits until
// every member is up and close behind: destroying a second copy before the
// first was rebuilt can destroy every copy of committed writes, which no
// replicated system survives (a campaign once wiped all three members of a
// cluster within seven seconds).
type Lagger interface {
	Lags() []int64
	Durable() bool
}

// LagsOf turns the members' last zxids (-1 for a member that is down or
// does not answer) into Lagger.Lags.
func LagsOf(zxids []int64) []int64 {
	top := int64(0)
	for _, z := range zxids {
		top = max(top, z)
	}
	lags := make([]int64, len(zxids))
	for i, z := range zxids {
		lags[i] = -1
		if z >= 0 {
			lags[i] = top - z
		}
	}
	return lags
}

// maxLag is how far behind a member may be when a destructive fault
// strikes.
const maxLag = 1000

// Fault kinds, as counted in Result.Faults.
const (
	FaultKillLeader     = "kill-leader"
	FaultKillFollower   = "kill-follower"
	FaultWipeRestart    = "kill-wipe-restart"
	FaultPause          = "pause"
	FaultIsolateLeader  = "isolate-leader"
	FaultPartition      = "partition-minority"
	FaultBridge         = "partition-bridge"
	FaultDropClientConn = "drop-client-connections"
	FaultLinkDelay      = "link-delay"           // a member's links to the others slow
	FaultLinkLoss       = "link-loss"            // a member's links lose messages
	FaultClockStep      = "clock-step"           // a member's wall clock stepped by minutes to hours
	FaultCorrupt        = "kill-corrupt-restart" // a member killed, its files damaged, restarted
)

// faultKinds are the faults the nemesis picks from.
var faultKinds = []string{FaultKillLeader, FaultKillFollower, FaultWipeRestart, FaultPause, FaultIsolateLeader,
	FaultPartition, FaultBridge, FaultDropClientConn, FaultLinkDelay, FaultLinkLoss, FaultClockStep, FaultCorrupt}

// faultClass groups the faults that act on the same thing: two faults at
// once are of different classes, so that undoing one leaves the other.
func faultClass(kind string) string {
	switch kind {
	case FaultKillLeader, FaultKillFollower, FaultWipeRestart, FaultPause, FaultCorrupt:
		return "process"
	case FaultDropClientConn:
		return "clients"
	case FaultClockStep:
		return "clock"
	}
	return "network"
}

// FaultKinds returns the faults a target supports.
func FaultKinds(t Target) []string {
	_, partitions := t.(Partitioner)
	_, drops := t.(ConnDropper)
	_, pauses := t.(Pauser)
	_, wipes := t.(Wiper)
	_, degrades := t.(Degrader)
	_, steps := t.(ClockStepper)
	_, damages := t.(Damager)
	var out []string
	for _, k := range faultKinds {
		switch k {
		case FaultIsolateLeader, FaultPartition, FaultBridge:
			if !partitions {
				continue
			}
		case FaultDropClientConn:
			if !drops {
				continue
			}
		case FaultPause:
			if !pauses {
				continue
			}
		case FaultWipeRestart:
			if !wipes {
				continue
			}
		case FaultLinkDelay, FaultLinkLoss:
			if !degrades {
				continue
			}
		case FaultClockStep:
			if !steps {
				continue
			}
		case FaultCorrupt:
			if !damages {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}

// nemesis injects a fault into a target, now and then a second one of
// another class on top of it (overlapping faults), holds them a while, then
// undoes them, last first, until ctx ends; everything is healed and
// restarted when it returns. Its choices come from rng alone, so a seed
// repeats them.
type nemesis struct {
	tmu      *sync.Mutex // serializes calls on target with the leader watcher
	target   Target
	kinds    []string // the faults to pick from, each equally likely
	rng      *rand.Rand
	hold     [2]time.Duration // how long a fault lasts: uniform in [hold[0], hold[1])
	interval [2]time.Duration // the calm between faults
	log      func(format string, args ...any)

	mu       sync.Mutex
	counts   map[string]int
	damaged  int      // members damaged and restarted
	repaired int      // of them, those that served again, repaired, in time
	problems []string // those that did not
	checks   sync.WaitGroup
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
		if len(n.kinds) == 0 {
			return
		}
		kind := n.kinds[n.rng.IntN(len(n.kinds))]
		undo := n.injectCounted(kind)
		if undo == nil {
			continue
		}
		if n.rng.IntN(3) == 0 {
			// A second fault, of another class, while the first holds.
			var others []string
			for _, k := range n.kinds {
				if faultClass(k) != faultClass(kind) {
					others = append(others, k)
				}
			}
			if len(others) > 0 && sleepCtx(ctx, n.between(n.hold)/2) {
				if undo2 := n.injectCounted(others[n.rng.IntN(len(others))]); undo2 != nil {
					n.mu.Lock()
					n.counts[FaultOverlap]++
					n.mu.Unlock()
					first := undo
					undo = func() { undo2(); first() }
				}
			}
		}
		sleepCtx(ctx, n.between(n.hold))
		n.tmu.Lock()
		undo()
		n.tmu.Unlock()
	}
}

// FaultOverlap counts the times a second fault was injected while one held.
const FaultOverlap = "overlapping"

func (n *nemesis) injectCounted(kind string) func() {
	n.tmu.Lock()
	undo := n.inject(kind)
	n.tmu.Unlock()
	if undo != nil {
		n.mu.Lock()
		n.counts[kind]++
		n.mu.Unlock()
	}
	return undo
}

// inject starts a fault of kind and returns what ends it (nil if it could
// not be injected, e.g. with no leader known).
func (n *nemesis) inject(kind string) func() {
	t := n.target
	members := t.Members()
	leader := t.Leader()
	if n.destructive(kind) && !n.allCaughtUp() {
		return nil
	}
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
	case FaultWipeRestart:
		victim := n.other(-1)
		n.log("nemesis: kill member %d and wipe its data", victim)
		t.Kill(victim)
		t.(Wiper).Wipe(victim)
		return func() { n.log("nemesis: restart member %d empty", victim); t.Restart(victim) }
	case FaultPause:
		victim := n.other(-1)
		n.log("nemesis: pause member %d", victim)
		t.(Pauser).Pause(victim)
		return func() { n.log("nemesis: resume member %d", victim); t.(Pauser).Resume(victim) }
	case FaultIsolateLeader:
		if leader < 0 {
			return nil
		}
		n.log("nemesis: isolate leader %d", leader)
		t.(Partitioner).Partition([]int{leader}, n.except(leader))
		return n.heal
	case FaultPartition:
		perm := n.rng.Perm(members)
		minority := perm[:(members-1)/2]
		n.log("nemesis: partition %v from the rest", minority)
		t.(Partitioner).Partition(minority, n.except(minority...))
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
		t.(Partitioner).Partition(a, b)
		return n.heal
	case FaultLinkDelay, FaultLinkLoss:
		victim := leader
		if victim < 0 || n.rng.IntN(2) == 0 {
			victim = n.rng.IntN(members)
		}
		delay := time.Duration(2+n.rng.IntN(40)) * time.Millisecond
		loss := 0.0
		if kind == FaultLinkLoss {
			delay, loss = time.Millisecond, 0.02+0.2*n.rng.Float64()
		}
		n.log("nemesis: degrade the links of member %d: delay up to %v, loss %.2f", victim, delay, loss)
		for _, j := range n.except(victim) {
			t.(Degrader).Degrade(victim, j, delay, loss)
		}
		return func() { n.log("nemesis: heal"); t.(Degrader).Heal() }
	case FaultClockStep:
		victim := leader
		if victim < 0 || n.rng.IntN(2) == 0 {
			victim = n.rng.IntN(members)
		}
		d := time.Duration(1+n.rng.IntN(120)) * time.Minute
		if n.rng.IntN(2) == 0 {
			d = -d
		}
		n.log("nemesis: step the clock of member %d by %v", victim, d)
		t.(ClockStepper).StepClock(victim, d)
		return func() {
			n.log("nemesis: step the clock of member %d back", victim)
			t.(ClockStepper).StepClock(victim, -d)
		}
	case FaultDropClientConn:
		victim := n.rng.IntN(members)
		n.log("nemesis: drop the client connections of member %d", victim)
		t.(ConnDropper).DropClientConnections(victim)
		return func() {}
	case FaultCorrupt:
		return n.damage(n.rng.IntN(members))
	}
	return nil
}

// damage kills member victim, damages its files and returns what restarts
// it and then checks that it serves again, repaired, within repairWithin.
func (n *nemesis) damage(victim int) func() {
	t := n.target
	t.Kill(victim)
	what, err := t.(Damager).Damage(victim, n.rng)
	if err != nil {
		n.log("nemesis: kill member %d; its files hold nothing to damage (%v)", victim, err)
		return func() { n.log("nemesis: restart member %d", victim); t.Restart(victim) }
	}
	n.log("nemesis: kill member %d and damage its files: %s", victim, what)
	return func() {
		n.log("nemesis: restart member %d, damaged", victim)
		t.Restart(victim)
		n.mu.Lock()
		n.damaged++
		n.mu.Unlock()
		r, ok := t.(Repairer)
		if !ok {
			return
		}
		n.checks.Go(func() {
			start := time.Now()
			for !r.Repaired(victim) {
				if time.Since(start) > repairWithin {
					n.mu.Lock()
					n.problems = append(n.problems, fmt.Sprintf("member %d did not serve again, repaired, within %v of its restart after: %s",
						victim, repairWithin, what))
					n.mu.Unlock()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			n.log("nemesis: member %d serves again, repaired, %v after its restart", victim, time.Since(start).Round(time.Millisecond))
			n.mu.Lock()
			n.repaired++
			n.mu.Unlock()
		})
	}
}

// destructive reports whether a fault of kind destroys a member's state.
func (n *nemesis) destructive(kind string) bool {
	switch kind {
	case FaultWipeRestart, FaultCorrupt:
		return true
	case FaultKillLeader, FaultKillFollower:
		l, ok := n.target.(Lagger)
		return !ok || !l.Durable()
	}
	return false
}

// allCaughtUp reports whether every member is up and close behind the
// furthest (always, for a target that cannot tell).
func (n *nemesis) allCaughtUp() bool {
	l, ok := n.target.(Lagger)
	if !ok {
		return true
	}
	for _, lag := range l.Lags() {
		if lag < 0 || lag > maxLag {
			return false
		}
	}
	return true
}

func (n *nemesis) heal() { n.log("nemesis: heal"); n.target.(Partitioner).Heal() }

// other returns a member other than leader (any, if -1), at random.
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
