// Package chaos runs client workloads against a zkraft cluster while a
// nemesis injects faults, records every operation's call and completion,
// and checks the history for linearizability with porcupine.
//
// Workloads: versioned compare-and-set registers (register.go), checked
// with porcupine; a queue of sequential creates (queue.go), checked for
// lost, repeated and misordered sequence numbers; lockrecipe's Mutex with
// a fencing write (lock.go), checked for two holders at once; ephemeral
// owners (ephemeral.go), checked for ephemerals that go while their
// session lives or stay after it ends; watchers of the registers
// (watch.go), checked for events that come after a reply showing their
// change, or twice.
// Nemeses: killing and restarting the leader or a follower (with its data
// wiped, too), pausing a member, isolating the leader, partitioning a
// minority, a bridge partition, delaying and losing messages on a member's
// links, dropping a member's client connections, stepping a member's wall
// clock, and two of these at once (nemesis.go), against any Target that
// supports them; servertest's in-process cluster supports all but pauses,
// member processes (processes.go, their links through proxy.go) all but
// dropped client connections.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/integration/visibility"
)

// Config is one campaign.
type Config struct {
	Addrs    []string      // the members' client addresses
	Seed     uint64        // seeds the nemesis and the workers' choices
	Duration time.Duration // how long workers and nemesis run
	Clients  int           // concurrent client sessions (default 5)
	Keys     int           // registers (default 3)
	Lockers  int           // sessions taking the lock in turn (default 2; -1 for none)
	Owners   int           // sessions owning an ephemeral each (default 2; -1 for none)
	Watchers int           // sessions watching the registers (default 2; -1 for none)
	// FaultHold and FaultInterval bound how long a fault lasts and the calm
	// between faults (defaults 0.3-1.5 s and 0.2-1 s).
	FaultHold, FaultInterval [2]time.Duration
	// Faults are the fault kinds to inject (default: all the target
	// supports, FaultKinds); an empty, non-nil list injects none.
	Faults []string
	// CheckTimeout bounds porcupine's search (default one minute).
	CheckTimeout time.Duration
	Log          func(format string, args ...any) // progress; may be nil
}

// Result is what a campaign did and what the checker found.
type Result struct {
	Seed          uint64
	Ops           int            // operations checked
	Indeterminate int            // writes whose outcome the client never learned
	Failed        int            // reads that failed (not checked)
	Faults        map[string]int // faults injected, by kind
	Verdict       porcupine.CheckResult
	QueueCreates  int      // sequential creates acknowledged
	QueueProblems []string // what the queue check found
	// The lock workload: holds taken, fence writes acknowledged while
	// holding, holds lost (session expired) while holding, and problems.
	LockHolds, LockFenced, LockLost int
	LockProblems                    []string
	// The ephemeral workload: owner sessions that created their node,
	// times an owner found it there, and problems.
	EphemeralSessions, EphemeralChecks int
	EphemeralProblems                  []string
	// The watch workload: watches set, data events received, reads that
	// showed a change with its event received first, and problems.
	WatchesSet, WatchEvents, WatchOrdered int
	WatchProblems                         []string
	// Damaged members: restarted after their files were damaged, those of
	// them that served again, repaired, within repairWithin, and what the
	// others did not.
	Damaged, Repaired int
	DamageProblems    []string
	info              porcupine.LinearizationInfo
	model             porcupine.Model
}

// Linearizable reports whether the checker accepted the history.
func (r *Result) Linearizable() bool { return r.Verdict == porcupine.Ok }

// OK reports whether every check passed: the registers' history is
// linearizable, the queue lost, repeated and misordered nothing, no two
// lockers held the lock at once, every ephemeral lived exactly as long as
// its session, and every watch fired once, before a reply showed its change.
func (r *Result) OK() bool {
	return r.Linearizable() && len(r.QueueProblems) == 0 && len(r.LockProblems) == 0 &&
		len(r.EphemeralProblems) == 0 && len(r.WatchProblems) == 0 && len(r.DamageProblems) == 0
}

// Visualize writes porcupine's HTML view of the history to path.
func (r *Result) Visualize(path string) error { return porcupine.VisualizePath(r.model, r.info, path) }

// Run runs a campaign against target, whose members serve cfg.Addrs.
func Run(ctx context.Context, target Target, cfg Config) (*Result, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 5
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 3
	}
	if cfg.Lockers == 0 {
		cfg.Lockers = 2
	}
	if cfg.Owners == 0 {
		cfg.Owners = 2
	}
	if cfg.Watchers == 0 {
		cfg.Watchers = 2
	}
	if cfg.FaultHold == [2]time.Duration{} {
		cfg.FaultHold = [2]time.Duration{300 * time.Millisecond, 1500 * time.Millisecond}
	}
	if cfg.FaultInterval == [2]time.Duration{} {
		cfg.FaultInterval = [2]time.Duration{200 * time.Millisecond, time.Second}
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = time.Minute
	}
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	root := fmt.Sprintf("/chaos-%x", cfg.Seed)
	keys, err := setUp(cfg.Addrs, root, cfg.Keys)
	if err != nil {
		return nil, err
	}
	q := &queue{parent: root + "/q"}
	lw := &lockWork{dir: root + "/lock", fence: root + "/fence"}
	checkConn, err := connect(cfg.Addrs)
	if err != nil {
		return nil, err
	}
	defer checkConn.Close()
	watchCtx, stopWatch := context.WithCancel(ctx)
	var tmu sync.Mutex // the target's methods are called from one goroutine at a time
	lead, watchDone := watchLeader(watchCtx, target, &tmu)
	defer func() { stopWatch(); <-watchDone }()
	ew := &ephemeralWork{dir: root + "/eph", addrs: cfg.Addrs, check: checkConn, lead: lead}
	ww := &watchWork{keys: keys, addrs: cfg.Addrs}

	h := newHistory()
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	failed := make([]int, cfg.Clients) // reads each worker could not check
	for c := range cfg.Clients {
		conn, err := connect(cfg.Addrs)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		w := &worker{id: c, conn: conn, keys: keys, q: q, h: h, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(c)+1))}
		wg.Go(func() { failed[c] = w.run(runCtx) })
	}
	var lockers []*zk.Conn
	for i := range max(cfg.Lockers, 0) {
		conn, err := connect(cfg.Addrs)
		if err != nil {
			return nil, err
		}
		lockers = append(lockers, conn)
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(1000+i)))
		wg.Go(func() { lw.run(runCtx, i, conn, rng) })
	}
	for i := range max(cfg.Owners, 0) {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(2000+i)))
		wg.Go(func() { ew.run(runCtx, i, rng) })
	}
	for i := range max(cfg.Watchers, 0) {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(3000+i)))
		wg.Go(func() { ww.run(runCtx, i, rng) })
	}
	kinds := cfg.Faults
	if kinds == nil {
		kinds = FaultKinds(target)
	}
	nem := &nemesis{tmu: &tmu, target: target, kinds: kinds, rng: rand.New(rand.NewPCG(cfg.Seed, 0)), hold: cfg.FaultHold,
		interval: cfg.FaultInterval, log: logf, counts: map[string]int{}}
	wg.Go(func() {
		nem.run(runCtx)
		if p, ok := target.(Partitioner); ok {
			p.Heal()
		}
	})
	wg.Wait()
	nem.checks.Wait()

	res := &Result{Seed: cfg.Seed, Faults: nem.faults(), model: registerModel.ToModel()}
	res.Damaged, res.Repaired, res.DamageProblems = nem.damaged, nem.repaired, nem.problems
	for _, n := range failed {
		res.Failed += n
	}
	ops := h.operations()
	res.Ops = len(ops)
	for _, op := range ops {
		if op.Output.(regOutput).Outcome == regIndeterminate {
			res.Indeterminate++
		}
	}
	logf("checking %d operations (%d indeterminate)", res.Ops, res.Indeterminate)
	res.Verdict, res.info = porcupine.CheckOperationsVerbose(res.model, ops, cfg.CheckTimeout)
	conn := checkConn
	for _, l := range lockers {
		l.Close()
	}
	// The last fault was just undone: a restarted member may still be
	// joining, and the session moving. Reading back is retried a while.
	for deadline := time.Now().Add(time.Minute); ; {
		if res.QueueProblems, err = q.check(conn); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("chaos: read the queue back: %w", err)
		}
		logf("reading the queue back: %v; again", err)
		if !sleepCtx(ctx, 100*time.Millisecond) { // the cluster settling, which nothing signals
			return nil, ctx.Err()
		}
	}
	q.mu.Lock()
	res.QueueCreates = len(q.acked)
	q.mu.Unlock()
	if len(lockers) > 0 {
		if err := lw.check(conn, goneWithin, lead); err != nil {
			return nil, fmt.Errorf("chaos: read the lock back: %w", err)
		}
	}
	lw.mu.Lock()
	res.LockHolds, res.LockFenced, res.LockLost, res.LockProblems = lw.acquired, lw.fenced, lw.lost, lw.problems
	lw.mu.Unlock()
	ew.mu.Lock()
	res.EphemeralSessions, res.EphemeralChecks, res.EphemeralProblems = ew.sessions, ew.checks, ew.problems
	ew.mu.Unlock()
	ww.mu.Lock()
	res.WatchesSet, res.WatchEvents, res.WatchOrdered, res.WatchProblems = ww.watches, ww.events, ww.ordered, ww.problems
	ww.mu.Unlock()
	return res, nil
}

// connect opens a session on the whole connect string.
func connect(addrs []string) (*zk.Conn, error) {
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, err
	}
	go func() {
		for range events {
		}
	}()
	return conn, nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// setUp creates the registers under root, each empty at version 0.
func setUp(addrs []string, root string, n int) ([]string, error) {
	conn, err := connect(addrs)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	paths := []string{root}
	for _, dir := range []string{"/q", "/lock", "/fence", "/eph"} {
		paths = append(paths, root+dir)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s/r%d", root, i)
	}
	// The cluster may be settling after the last campaign's faults: a
	// create whose connection was lost is tried again, and a node already
	// there is the lost create's (nothing else writes here yet).
	for _, p := range append(paths, keys...) {
		deadline := time.Now().Add(time.Minute)
		for {
			_, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			if !visibility.Lost(err) || time.Now().After(deadline) {
				return nil, fmt.Errorf("chaos: create %s: %w", p, err)
			}
			time.Sleep(50 * time.Millisecond) // the cluster settling, which nothing signals
		}
	}
	return keys, nil
}

// worker is one client session running the register workload.
type worker struct {
	id   int
	conn *zk.Conn
	keys []string
	q    *queue
	h    *history
	rng  *rand.Rand
	seq  int
}

// run reads and writes registers until ctx ends, and returns how many
// reads failed.
func (w *worker) run(ctx context.Context) int {
	failed := 0
	versions := map[string]int32{} // the version this worker last read
	for ctx.Err() == nil {
		if w.rng.IntN(5) == 0 {
			w.q.create(w.conn, w.id)
			continue
		}
		key := w.keys[w.rng.IntN(len(w.keys))]
		if w.rng.IntN(2) == 0 {
			call := w.h.now()
			if _, err := w.conn.Sync(key); err != nil {
				failed++
				continue
			}
			data, st, err := w.conn.Get(key)
			if err != nil {
				failed++
				continue
			}
			w.h.add(w.id, regInput{Key: key, Op: regRead}, call, regOutput{Value: string(data), Version: st.Version}, w.h.now())
			versions[key] = st.Version
			continue
		}
		w.seq++
		in := regInput{Key: key, Op: regWrite, Value: fmt.Sprintf("c%d-%d", w.id, w.seq), Version: versions[key]}
		call := w.h.now()
		st, err := w.conn.Set(key, []byte(in.Value), in.Version)
		out := regOutput{Outcome: regOK}
		switch {
		case err == nil:
			out.Version = st.Version
			versions[key] = st.Version
		case errors.Is(err, zk.ErrBadVersion):
			out.Outcome = regBadVersion
		default: // connection lost, session expired, closing: it may have happened
			out.Outcome = regIndeterminate
		}
		w.h.add(w.id, in, call, out, w.h.now())
	}
	return failed
}

// Summary is the result in one line.
func (r *Result) Summary() string {
	var faults []string
	for _, k := range slices.Concat(faultKinds, []string{FaultOverlap}) {
		if n := r.Faults[k]; n > 0 {
			faults = append(faults, fmt.Sprintf("%s=%d", k, n))
		}
	}
	verdict := func(what string, problems []string) string {
		if len(problems) == 0 {
			return what + " ok"
		}
		return fmt.Sprintf("%s: %d problems, first: %s", what, len(problems), problems[0])
	}
	return fmt.Sprintf("seed %d: %d operations checked (%d indeterminate, %d failed reads not checked), faults [%s], "+
		"verdict %s; %d sequential creates, %s; %d lock holds (%d fenced writes, %d lost), %s; "+
		"%d ephemeral owner sessions (%d checks), %s; %d watches (%d events, %d seen before the change), %s; "+
		"%d members damaged and restarted, %d repaired, %s",
		r.Seed, r.Ops, r.Indeterminate, r.Failed, strings.Join(faults, " "), r.Verdict, r.QueueCreates,
		verdict("queue", r.QueueProblems), r.LockHolds, r.LockFenced, r.LockLost, verdict("lock", r.LockProblems),
		r.EphemeralSessions, r.EphemeralChecks, verdict("ephemerals", r.EphemeralProblems),
		r.WatchesSet, r.WatchEvents, r.WatchOrdered, verdict("watches", r.WatchProblems),
		r.Damaged, r.Repaired, verdict("repairs", r.DamageProblems))
}
