package servertest

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/wire"
)

// Rule picks client requests and the fault they meet: any of Ops (none:
// every op but ping; the connect request is never matched; wire.OpCreate
// is one opcode of four: Creates matches every kind of create) on Path
// (exactly, or every path under it with Prefix)
// from Session on Member (0: any), from the Nth match on (0 or 1: the
// first), Times times (0: once; Forever: always), each match with
// Probability (0: always) drawn from the rules' seeded source.
//
// When it fires, the request meets Fault; and with Pause, the member it
// came to is paused for that long first (see Cluster.Pause): its links and
// every request it gets wait, this one included.
type Rule struct {
	Ops         []wire.Op
	Path        string
	Prefix      bool
	Session     int64
	Member      int // a server id: member i of a Cluster is i+1
	Nth         int
	Times       int
	Probability float64
	Fault       server.Fault
	Pause       time.Duration
}

// Forever is Rule.Times for a rule that never runs out.
const Forever = -1

// Creates is Rule.Ops for every kind of create: create (go-zookeeper's
// Create), create2 (which Curator, and the Java client asked for the new
// node's Stat, send), createContainer and createTTL.
var Creates = []wire.Op{wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL}

// Common faults.
var (
	// LoseReply applies a write (or answers a read) but closes the
	// connection instead of replying: "did my create happen?".
	LoseReply = server.Fault{LoseReply: true}
	// CloseBefore closes the connection instead of handling the request.
	CloseBefore = server.Fault{CloseBefore: true}
)

// Delay holds the request back for d before it is handled (and, since a
// session's requests are answered in order, those after it).
func Delay(d time.Duration) server.Fault { return server.Fault{Delay: d} }

// FailWith answers the request with a ZooKeeper error code, unhandled
// (wire.CodeConnectionLoss, wire.CodeOperationTimeout,
// wire.CodeSessionExpired...).
func FailWith(code wire.Code) server.Fault { return server.Fault{Fail: code} }

// RuleState is a rule as Faults.List shows it.
type RuleState struct {
	ID      int
	Rule    Rule
	Matched int // requests it matched
	Fired   int // faults it caused
}

// Faults holds the fault rules of a server or cluster (Server.Faults,
// Cluster.Faults). Rules are checked in the order they were added; the
// first that fires decides a request's fault. Each firing is logged to the
// test.
type Faults struct {
	log     *slog.Logger                  // the test's, which drops what comes after the test
	onPause func(member int, paused bool) // a cluster's: pause and resume the member's links
	seed    uint64
	mu      sync.Mutex // guards the rest
	rng     *rand.Rand
	next    int
	live    []*RuleState
	paused  map[int]chan struct{} // paused members, by server id: closed at the resume
}

func newFaults(t testing.TB, seed uint64) *Faults {
	f := &Faults{log: testLogger(t), next: 1, paused: make(map[int]chan struct{})}
	f.Seed(seed)
	return f
}

// pause holds every request member gets, and its links, until resume (or
// for d, if positive).
func (f *Faults) pause(member int, d time.Duration) <-chan struct{} {
	f.mu.Lock()
	hold := f.paused[member]
	if hold == nil {
		hold = make(chan struct{})
		f.paused[member] = hold
		if f.onPause != nil {
			f.onPause(member, true)
		}
	}
	f.mu.Unlock()
	if d > 0 {
		time.AfterFunc(d, func() { f.resumeHold(member, hold) })
	}
	return hold
}

// resume lets member's requests and links go on.
func (f *Faults) resume(member int) { f.resumeHold(member, nil) }

// resumeHold resumes member if its pause is hold (any pause if nil): a
// timed pause ends its own pause, not one begun after it ended.
func (f *Faults) resumeHold(member int, want chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if hold := f.paused[member]; hold != nil && (want == nil || hold == want) {
		delete(f.paused, member)
		if f.onPause != nil {
			f.onPause(member, false)
		}
		close(hold)
	}
}

// resumeAll resumes every paused member: a server is resumed before it
// stops.
func (f *Faults) resumeAll() {
	f.mu.Lock()
	var members []int
	for m := range f.paused {
		members = append(members, m)
	}
	f.mu.Unlock()
	for _, m := range members {
		f.resume(m)
	}
}

// Seed restarts the source of the rules' probabilities from seed, so that
// a run can be repeated (each firing of a rule with a Probability logs the
// seed).
func (f *Faults) Seed(seed uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seed, f.rng = seed, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Add adds a rule and returns its id.
func (f *Faults) Add(r Rule) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.live = append(f.live, &RuleState{ID: id, Rule: r})
	return id
}

// Remove removes a rule, and reports whether it was there.
func (f *Faults) Remove(id int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.live)
	f.live = slices.DeleteFunc(f.live, func(s *RuleState) bool { return s.ID == id })
	return len(f.live) < n
}

// List returns the rules, with how often each matched and fired.
func (f *Faults) List() []RuleState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]RuleState, len(f.live))
	for i, s := range f.live {
		out[i] = *s
	}
	return out
}

// Request implements server.RequestHook. A paused member holds every
// request, pings and connects included; otherwise the first rule that
// fires decides.
func (f *Faults) Request(req server.RequestInfo) server.Fault {
	f.mu.Lock()
	if hold := f.paused[req.Member]; hold != nil {
		f.mu.Unlock()
		return server.Fault{Hold: hold}
	}
	if req.Op == wire.OpPing || req.Op == wire.OpCreateSession {
		f.mu.Unlock()
		return server.Fault{}
	}
	var fired *RuleState
	for _, s := range f.live {
		if !s.Rule.matches(req) {
			continue
		}
		s.Matched++
		if s.Matched < max(s.Rule.Nth, 1) || s.Rule.Times != Forever && s.Fired >= max(s.Rule.Times, 1) {
			continue
		}
		if s.Rule.Probability > 0 && f.rng.Float64() >= s.Rule.Probability {
			continue
		}
		s.Fired++
		fired = s
		break
	}
	var state RuleState
	if fired != nil {
		state = *fired
	}
	seed := f.seed
	f.mu.Unlock()
	if fired == nil {
		return server.Fault{}
	}
	args := []any{"rule", state.ID, "match", state.Matched, "op", req.Op.String(), "path", req.Path,
		"session", fmt.Sprintf("0x%x", req.Session), "member", req.Member, "fault", describeFault(state.Rule)}
	if state.Rule.Probability > 0 {
		args = append(args, "seed", seed)
	}
	f.log.Info("servertest: a fault rule fired", args...)
	fault := state.Rule.Fault
	if state.Rule.Pause > 0 {
		fault.Hold = f.pause(req.Member, state.Rule.Pause)
	}
	return fault
}

func (r Rule) matches(req server.RequestInfo) bool {
	switch {
	case len(r.Ops) > 0 && !slices.Contains(r.Ops, req.Op):
		return false
	case r.Session != 0 && r.Session != req.Session, r.Member != 0 && r.Member != req.Member:
		return false
	case r.Path == "" || r.Path == req.Path:
		return true
	case r.Prefix:
		return strings.HasPrefix(req.Path, strings.TrimSuffix(r.Path, "/")+"/")
	}
	return false
}

func describeFault(r Rule) string {
	f := r.Fault
	var parts []string
	if r.Pause > 0 {
		parts = append(parts, "member paused "+r.Pause.String())
	}
	if f.Delay > 0 {
		parts = append(parts, "delayed "+f.Delay.String())
	}
	switch {
	case f.CloseBefore:
		parts = append(parts, "connection closed before it")
	case f.Fail != 0:
		parts = append(parts, fmt.Sprintf("failed with %v", f.Fail))
	case f.LoseReply:
		parts = append(parts, "handled, its reply lost with the connection")
	}
	if len(parts) == 0 {
		return "no fault"
	}
	return strings.Join(parts, ", ")
}
