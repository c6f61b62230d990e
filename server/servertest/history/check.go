package history

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// Report is what Check found.
type Report struct {
	Ops        int      // operations in the history
	Checked    int      // operations the linearizability check took part in
	Verdict    string   // porcupine's: "Ok", "Illegal", or "Unknown" (it ran out of time)
	Illegal    []string // the znodes whose history is not linearizable
	Violations []Violation
	Undecoded  int // frames a Proxy forwarded but could not decode: what they carried is missing
	info       porcupine.LinearizationInfo
	history    []porcupine.Operation
	events     []Event
	start      []Op // the ops, to name them in the text
}

// Violation is a broken session guarantee.
type Violation struct {
	Guarantee string // "read your writes", "writes in zxid order", "watch before data"
	Client    int
	Ops       []int // the ops involved, by Op.ID, the offending one last
	Detail    string
}

// OK reports whether nothing was found wrong. A linearizability check that
// ran out of time (Verdict "Unknown") found nothing wrong either; String
// says so.
func (r *Report) OK() bool { return r.Verdict != string(porcupine.Illegal) && len(r.Violations) == 0 }

// Check reads the history and checks it.
//
// Linearizability, with porcupine, per znode: every create, delete, set
// and multi (and its version checks), and the get and exists calls a
// client made after one of its syncs had returned. A read after a sync
// reflects every write completed before the sync was called, so it is
// checked as if called when the sync was. Reads without a sync may be
// stale (ZooKeeper's reads are served by the client's server) and only
// the session checks read them. A write whose outcome the client never
// learned may or may not have happened; a node made ephemeral, container
// or TTL may vanish at any step; a node not created in the history starts
// unknown and is learned from what the history shows of it.
//
// Session guarantees, for every client, on every read that carries a Stat:
// it reads its own writes (a node it created is there, unless a delete or
// its vanishing may explain it; a node it set shows that version or a
// later one); it sees writes in zxid order (a read never shows a node
// older than a write to it whose zxid is at most the highest zxid the
// session had already seen); and a watch's event comes before any reply
// to the same client that shows the change (a node whose watched data,
// existence or children changed), unless its connection was lost between
// the watch and the read (go-zookeeper then sets its watches again and may
// deliver the event late). Children lists and the ACLs are not checked.
func (r *Recorder) Check() *Report {
	ops := r.Ops()
	events := r.Events()
	rep := &Report{Ops: len(ops), start: ops, events: events, Undecoded: int(r.undecoded.Load())}
	rep.history = linearizable(ops)
	rep.Checked = len(rep.history)
	res, info := porcupine.CheckOperationsVerbose(znodeModel.ToModel(), rep.history, time.Minute)
	rep.Verdict, rep.info = string(res), info
	if res == porcupine.Illegal {
		rep.Illegal = illegalPaths(rep.history, info)
	}
	rep.Violations = sessionChecks(ops, events)
	return rep
}

// modelled are the error codes that say something of the node a write
// was refused on, which the model checks.
var modelled = []error{zk.ErrNodeExists, zk.ErrNoNode, zk.ErrNoChildrenForEphemerals, zk.ErrBadVersion, zk.ErrNotEmpty}

// linearizable returns the porcupine history: writes, and reads made after
// a sync, each as one step per znode it touches.
func linearizable(ops []Op) []porcupine.Operation {
	end := int64(math.MaxInt64)
	var out []porcupine.Operation
	add := func(op *Op, path string, call, ret int64) {
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: step{op: op, path: path}, Call: call, Return: ret})
	}
	lastSync := map[int][]*Op{} // each client's successful syncs
	for i := range ops {
		op := &ops[i]
		ret := op.Return
		if op.Pending {
			op.Outcome, ret = Unknown, end
		}
		if op.Outcome == Failed && op.Kind != "get" && op.Kind != "exists" && !is(op.Err, modelled...) {
			continue // refused for a reason that says nothing of the node (an ACL, a bad argument): nothing happened
		}
		switch op.Kind {
		case "create":
			switch {
			case op.Flags&zk.FlagSequence == 0:
				add(op, op.Path, op.Call, ret)
			case op.Outcome == OK:
				add(op, op.Created, op.Call, ret)
			}
		case "delete", "set":
			add(op, op.Path, op.Call, ret)
		case "multi":
			if op.Outcome == Failed {
				continue // nothing happened, and the error names one op
			}
			for _, sub := range op.Sub {
				sub.Client, sub.Outcome, sub.Err, sub.Pending = op.Client, op.Outcome, nil, op.Pending
				if op.Outcome == Unknown {
					sub.Err = op.Err
				}
				switch {
				case sub.Kind == "create" && sub.Flags&zk.FlagSequence != 0:
					if op.Outcome == OK {
						add(sub, sub.Created, op.Call, ret)
					}
				case sub.Kind == "create":
					add(sub, sub.Path, op.Call, ret)
				default:
					add(sub, sub.Path, op.Call, ret)
				}
			}
		case "sync":
			if op.Outcome == OK {
				lastSync[op.Client] = append(lastSync[op.Client], op)
			}
		case "get", "exists":
			if op.Outcome == Unknown || op.Pending || op.Outcome == Failed && !is(op.Err, zk.ErrNoNode) {
				continue
			}
			// The latest sync of the client's session that returned before
			// the read was called. (A new session may start behind: go-zookeeper
			// forgets the zxid it had seen when its session expires.)
			var sync *Op
			for _, s := range lastSync[op.Client] {
				if op.Session != 0 && s.Session == op.Session && s.Return < op.Call && (sync == nil || s.Call > sync.Call) {
					sync = s
				}
			}
			if sync != nil {
				add(op, op.Path, sync.Call, ret)
			}
		}
	}
	return out
}

// illegalPaths names the znodes porcupine found no linearization for.
func illegalPaths(history []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	parts := znodeModel.ToModel().Partition(history)
	lins := info.PartialLinearizations()
	var out []string
	for i, part := range parts {
		if i >= len(lins) || len(part) == 0 {
			continue
		}
		longest := 0
		for _, l := range lins[i] {
			longest = max(longest, len(l))
		}
		if longest < len(part) {
			out = append(out, part[0].Input.(step).path)
		}
	}
	return out
}

// String renders the report for a test's log.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d operations, %d in the linearizability check: %s", r.Ops, r.Checked, r.Verdict)
	if r.Verdict == string(porcupine.Unknown) {
		b.WriteString(" (the check ran out of time: linearizability not decided)")
	}
	if r.Undecoded > 0 {
		fmt.Fprintf(&b, "\n%d frames the proxy forwarded could not be decoded: what they carried is not in the history", r.Undecoded)
	}
	if len(r.Illegal) > 0 {
		fmt.Fprintf(&b, "\nnot linearizable: %s", strings.Join(r.Illegal, ", "))
		for _, p := range r.Illegal {
			fmt.Fprintf(&b, "\n  operations on %s:", p)
			for _, o := range r.history {
				if s := o.Input.(step); s.path == p {
					fmt.Fprintf(&b, "\n    %s", r.line(s.op))
				}
			}
		}
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "\n%s broken for client %d: %s", v.Guarantee, v.Client, v.Detail)
		for _, id := range v.Ops {
			fmt.Fprintf(&b, "\n    %s", r.line(&r.start[id]))
		}
	}
	return b.String()
}

// line renders one op with its client, session and times.
func (r *Report) line(op *Op) string {
	return fmt.Sprintf("#%d client %d session %#x [%v .. %v] %s", op.ID, op.Client, op.Session,
		op.CallTime.Round(time.Microsecond), op.ReturnTime.Round(time.Microsecond), describe(op))
}

// WriteHTML writes porcupine's visualisation of the history to path, with
// the clients' events and each broken session guarantee marked on it.
func (r *Report) WriteHTML(path string) error {
	var notes []porcupine.Annotation
	for _, ev := range r.events {
		if ev.Type == zk.EventSession {
			continue
		}
		notes = append(notes, porcupine.Annotation{ClientId: ev.Client, Start: ev.Seq,
			Description: fmt.Sprintf("%v %s", ev.Type, ev.Path), BackgroundColor: "#e0f0ff"})
	}
	for _, v := range r.Violations {
		last := &r.start[v.Ops[len(v.Ops)-1]]
		notes = append(notes, porcupine.Annotation{ClientId: v.Client, Start: last.Call, End: last.Return,
			Description: v.Guarantee, Details: v.Detail, BackgroundColor: "#ffc0c0"})
	}
	r.info.AddAnnotations(notes)
	return porcupine.VisualizePath(znodeModel.ToModel(), r.info, path)
}

// Verify checks the history and, if anything is wrong, fails t with the
// report and writes the visualisation to history.html in t.ArtifactDir()
// (kept with go test -artifacts). A history with no operation fails too,
// unless AllowEmpty was called.
func (r *Recorder) Verify(t testing.TB) *Report {
	t.Helper()
	rep := r.Check()
	r.mu.Lock()
	empty := r.empty
	r.mu.Unlock()
	if rep.Ops == 0 && !empty {
		t.Errorf("history: nothing was recorded, so nothing was checked: did the code under test use a client " +
			"the Recorder handed out (Connect, Option, Wrap) or one connected through its Proxy? " +
			"Call AllowEmpty if no operation is expected")
		return rep
	}
	if rep.OK() {
		if rep.Undecoded > 0 {
			t.Logf("history: %d frames the proxy forwarded could not be decoded: what they carried is not in the history", rep.Undecoded)
		}
		return rep
	}
	path := filepath.Join(t.ArtifactDir(), "history.html")
	if err := rep.WriteHTML(path); err != nil {
		t.Errorf("history: writing the visualisation: %v", err)
	}
	t.Errorf("%s\nvisualisation: %s (kept with go test -artifacts)", rep, path)
	return rep
}

// sessionChecks checks each client's session guarantees.
func sessionChecks(ops []Op, events []Event) []Violation {
	var out []Violation
	writes := knownWrites(ops)
	byClient := map[int][]*Op{}
	for i := range ops {
		if !ops[i].Pending {
			byClient[ops[i].Client] = append(byClient[ops[i].Client], &ops[i])
		}
	}
	clients := make([]int, 0, len(byClient))
	for c := range byClient {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	for _, c := range clients {
		mine := byClient[c]
		slices.SortFunc(mine, func(a, b *Op) int { return int(a.Return - b.Return) })
		out = append(out, zxidOrder(c, mine, writes)...)
		out = append(out, ownWrites(c, mine, ops)...)
		out = append(out, watchesFirst(c, mine, events)...)
	}
	return out
}

// write is a change to a node known by a zxid the history shows.
type write struct {
	czxid, mzxid int64
	op           int // an op that showed it
}

// knownWrites collects, per path, the (czxid, mzxid) pairs any reply
// showed: each is a write to that node at that zxid.
func knownWrites(ops []Op) map[string][]write {
	out := map[string][]write{}
	for i := range ops {
		op := &ops[i]
		if op.Outcome == OK && op.Stat != nil && op.Kind != "multi" {
			out[op.Path] = append(out[op.Path], write{op.Stat.Czxid, op.Stat.Mzxid, op.ID})
		}
	}
	return out
}

// zxidOrder checks that no read of the client shows a node older than a
// write to it at or below the highest zxid the session had seen before the
// read was called (a client may have several calls out at once, from
// several goroutines: only the replies it had before count).
func zxidOrder(client int, mine []*Op, writes map[string][]write) []Violation {
	type seen struct {
		at   int64 // the return it was seen at
		zxid int64
		op   int
	}
	var out []Violation
	bySession := map[int64][]seen{} // in order of return, as mine is
	for _, op := range mine {
		if op.Session == 0 || op.Outcome != OK || op.Stat == nil || op.Kind == "multi" {
			continue
		}
		st := op.Stat
		var floor seen
		for _, s := range bySession[op.Session] {
			if s.at < op.Call && s.zxid > floor.zxid {
				floor = s
			}
		}
		if op.Kind != "set" {
			for _, w := range writes[op.Path] {
				newer := w.czxid == st.Czxid && w.mzxid > st.Mzxid || w.czxid > st.Czxid
				if newer && w.mzxid <= floor.zxid {
					out = append(out, Violation{Guarantee: "writes in zxid order", Client: client,
						Ops: []int{floor.op, w.op, op.ID},
						Detail: fmt.Sprintf("%s shows mzxid %#x, older than the write at %#x, though the session had seen zxid %#x",
							op.Path, st.Mzxid, w.mzxid, floor.zxid)})
					break
				}
			}
		}
		bySession[op.Session] = append(bySession[op.Session], seen{op.Return, max(st.Mzxid, st.Czxid, st.Pzxid), op.ID})
	}
	return out
}

// ownWrites checks that a node the client created is there for its later
// reads, unless a delete or its vanishing may explain its absence.
func ownWrites(client int, mine []*Op, all []Op) []Violation {
	var out []Violation
	for i, w := range mine {
		if w.Kind != "create" || w.Outcome != OK || mayVanish(w.Flags) {
			continue
		}
		for _, r := range mine[i+1:] {
			if r.Call < w.Return || r.Path != w.Created || (r.Kind != "get" && r.Kind != "exists") ||
				w.Session == 0 || r.Session != w.Session { // a new session may start behind
				continue
			}
			gone := r.Outcome == Failed && is(r.Err, zk.ErrNoNode) || r.Kind == "exists" && r.Outcome == OK && r.Stat == nil
			if gone && !deleteBetween(all, w.Created, w.Call, r.Return) {
				out = append(out, Violation{Guarantee: "read your writes", Client: client, Ops: []int{w.ID, r.ID},
					Detail: fmt.Sprintf("%s, created by the client, is missing from its later read, and no delete of it was made", w.Created)})
			}
			break
		}
	}
	return out
}

// deleteBetween reports whether a delete of path (alone or in a multi)
// may have happened between two points.
func deleteBetween(ops []Op, path string, from, to int64) bool {
	for i := range ops {
		op := &ops[i]
		if op.Call > to || !op.Pending && op.Return < from || op.Outcome == Failed {
			continue
		}
		if op.Kind == "delete" && op.Path == path {
			return true
		}
		for _, sub := range op.Sub {
			if sub.Kind == "delete" && sub.Path == path {
				return true
			}
		}
	}
	return false
}

// watchesFirst checks that each watch's event reached the client before a
// reply that shows the change.
func watchesFirst(client int, mine []*Op, events []Event) []Violation {
	var out []Violation
	var evs []Event
	for _, ev := range events {
		if ev.Client == client {
			evs = append(evs, ev)
		}
	}
	if len(evs) == 0 {
		return nil // a client made without the Recorder's event callback
	}
	for i, w := range mine {
		if !w.Watch || w.Outcome != OK { // a failed getData or getChildren sets no watch
			continue
		}
		for _, r := range mine[i+1:] {
			isRead := r.Kind == "get" || r.Kind == "exists" || r.Kind == "children"
			if !isRead || r.Path != w.Path || r.Call < w.Return || r.Outcome == Unknown ||
				r.Outcome == Failed && !is(r.Err, zk.ErrNoNode) {
				continue
			}
			if !changed(w, r) {
				continue
			}
			if lostConnection(evs, w.Call, r.Return) {
				break
			}
			if !notified(evs, w, r.Return) {
				out = append(out, Violation{Guarantee: "watch before data", Client: client, Ops: []int{w.ID, r.ID},
					Detail: fmt.Sprintf("the reply shows %s changed, with no event from the watch before it", w.Path)})
			}
			break
		}
	}
	return out
}

// changed reports whether read r shows a change that watch w's read must
// be told of first.
func changed(w, r *Op) bool {
	before, after := w.Stat, r.Stat
	if r.Outcome == Failed { // no node now
		return before != nil
	}
	if before == nil || after == nil {
		return (before == nil) != (after == nil)
	}
	if before.Czxid != after.Czxid {
		return true
	}
	if w.Kind == "children" {
		return after.Cversion != before.Cversion
	}
	return after.Mzxid != before.Mzxid
}

// lostConnection reports whether the client's connection went between two
// points.
func lostConnection(evs []Event, from, to int64) bool {
	for _, ev := range evs {
		if ev.Seq > from && ev.Seq < to && ev.Type == zk.EventSession && ev.State != zk.StateConnected &&
			ev.State != zk.StateHasSession && ev.State != zk.StateConnecting {
			return true
		}
	}
	return false
}

// notified reports whether an event for watch w's path came after the
// watch was set and before the point to.
func notified(evs []Event, w *Op, to int64) bool {
	for _, ev := range evs {
		if ev.Seq > w.Call && ev.Seq < to && ev.Type != zk.EventSession && ev.Path == w.Path {
			return true
		}
	}
	return false
}
