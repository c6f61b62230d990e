package member

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/tree"
)

// The member's notable events, one log line each, with the message as the
// event's name and stable keys (the README's "Logs" table):
//
//	leader elected    leader, term        Raft names a leader (this member's view)
//	leader lost       leader, term        Raft names none where it named one
//	member joined     sid, addr           on the leader: a member reports in
//	member lost       sid, addr           on the leader: silent for 2 ticks
//	members still lost count, sids        on the leader: once a minute while any is
//	snapshot taken    index, term, zxid, znodes, bytes, duration_ms
//	snapshot restored zxid, znodes, bytes, duration_ms

// logLeader logs a change of the leader Raft names, from last to id
// (empty: none).
func (n *Node) logLeader(last, id raft.ServerID) {
	term := slog.Uint64("term", n.raftNow().CurrentTerm())
	switch {
	case id != "":
		n.log.LogAttrs(context.Background(), slog.LevelInfo, "leader elected", slog.Int("leader", serverID(id)), term)
	case n.stopping():
	default:
		n.log.LogAttrs(context.Background(), slog.LevelWarn, "leader lost", slog.Int("leader", serverID(last)), term)
	}
}

// stopping reports whether the node is shutting down.
func (n *Node) stopping() bool {
	select {
	case <-n.quit:
		return true
	default:
		return false
	}
}

// serverID is a Raft server id as the member id it names (0 if none).
func serverID(id raft.ServerID) int {
	v, _ := strconv.Atoi(string(id))
	return v
}

// heardFrom notes, on the leader, that member id reported in, and logs
// "member joined" if it was not in touch. n.mu must be held.
func (n *Node) heardFrom(id int) {
	if n.present[id] || !n.IsLeader() {
		return
	}
	n.present[id] = true
	delete(n.absent, id)
	p, _ := n.peer(id)
	n.log.LogAttrs(context.Background(), slog.LevelInfo, "member joined", slog.Int("sid", id), slog.String("addr", p.RaftAddr))
}

// lostEvery is how often a leader repeats, as a count, which members are
// still out of touch (each was logged once when it went).
const lostEvery = time.Minute

// checkPresent logs "member lost" for each member the leader has not heard
// from for two ticks (as SyncedLearners counts them), whether it was in
// touch before or has not reported since this member took office; and,
// while any is lost, "members still lost" once a minute. Raft's own lines
// for each heartbeat or append that fails to reach it are Debug (see
// expectedRaftLine). A member that stops leading forgets who was in touch.
func (n *Node) checkPresent(leading bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !leading {
		clear(n.present)
		clear(n.absent)
		n.lostReported = time.Time{}
		return
	}
	ticks := 2 * n.cfg.TickTime
	since := time.Unix(0, n.stats.leaderSince.Load())
	var lost []int
	for _, p := range n.servers() {
		if p.ID == n.cfg.ServerID || n.present[p.ID] && time.Since(n.lastHeard[p.ID]) <= ticks {
			continue
		}
		if !n.present[p.ID] && time.Since(since) <= ticks {
			continue // not heard from yet, but this member has only just taken office
		}
		lost = append(lost, p.ID)
		if !n.absent[p.ID] {
			delete(n.present, p.ID)
			n.absent[p.ID] = true
			n.log.LogAttrs(context.Background(), slog.LevelWarn, "member lost", slog.Int("sid", p.ID), slog.String("addr", p.RaftAddr))
		}
	}
	switch {
	case len(lost) == 0:
		n.lostReported = time.Time{}
	case n.lostReported.IsZero():
		n.lostReported = time.Now()
	case time.Since(n.lostReported) >= lostEvery:
		n.lostReported = time.Now()
		n.log.LogAttrs(context.Background(), slog.LevelWarn, "members still lost", slog.Int("count", len(lost)), slog.Any("sids", lost))
	}
}

// loggedSnapshots is the snapshot store as Raft sees it: its sinks know
// the index and term they are created for and count the bytes written.
type loggedSnapshots struct{ raft.SnapshotStore }

func (s loggedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	c := &countedSink{SnapshotSink: sink, index: index, term: term}
	if k, ok := sink.(raftfsm.Keeper); ok {
		return keeperSink{c, k}, nil
	}
	return c, nil
}

// countedSink counts what is written to a snapshot sink.
type countedSink struct {
	raft.SnapshotSink
	index, term uint64
	bytes       int64
}

func (c *countedSink) Write(p []byte) (int, error) {
	n, err := c.SnapshotSink.Write(p)
	c.bytes += int64(n)
	return n, err
}

func (c *countedSink) counted() *countedSink { return c }

// keeperSink is a countedSink whose store keeps captured states (memSink).
type keeperSink struct {
	*countedSink
	k raftfsm.Keeper
}

func (s keeperSink) Keep(f raft.FSMSnapshot) { s.k.Keep(f) }

// loggedSnapshot is a captured state that logs "snapshot taken" once
// persisted: at Info, or at Debug when it captures nothing (unread).
type loggedSnapshot struct {
	raft.FSMSnapshot
	n            *Node
	zxid         int64
	znodes       int
	unread       bool
	capturedTime time.Time
}

func (s *loggedSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.FSMSnapshot.Persist(sink); err != nil {
		return err
	}
	level := slog.LevelInfo
	if s.unread {
		level = slog.LevelDebug
	}
	var index, term uint64
	var bytes int64
	if c, ok := sink.(interface{ counted() *countedSink }); ok {
		cs := c.counted()
		index, term, bytes = cs.index, cs.term, cs.bytes
	}
	s.n.log.LogAttrs(context.Background(), level, "snapshot taken", slog.Uint64("index", index), slog.Uint64("term", term),
		slog.String("zxid", hexZxid(s.zxid)), slog.Int("znodes", s.znodes), slog.Int64("bytes", bytes),
		slog.Int64("duration_ms", time.Since(s.capturedTime).Milliseconds()))
	return nil
}

// loggedFSM is the state machine as Raft sees it: a notifyingFSM whose
// snapshots, taken and restored, are logged.
type loggedFSM struct {
	notifyingFSM
	n *Node
}

func (f loggedFSM) Snapshot() (raft.FSMSnapshot, error) {
	return f.n.snapshotLogged(f.FSM, f.unread, f.notifyingFSM.Snapshot)
}

func (f loggedFSM) Restore(rc io.ReadCloser) error { return f.n.restoreLogged(f.FSM, rc) }

// snapshotLogged wraps a captured state so that it logs once persisted.
func (n *Node) snapshotLogged(f *raftfsm.FSM, unread bool, capture func() (raft.FSMSnapshot, error)) (raft.FSMSnapshot, error) {
	start := time.Now()
	s := &loggedSnapshot{n: n, unread: unread, capturedTime: start}
	// Raft captures between applies, on the FSM goroutine: nothing
	// changes the state between the capture and this read.
	f.Read(func(t *tree.Tree) { s.znodes = t.Len() })
	s.zxid = f.LastZxid()
	snap, err := capture()
	if err != nil {
		return nil, err
	}
	s.FSMSnapshot = snap
	return s, nil
}

// restoreLogged restores the state from rc and logs "snapshot restored".
func (n *Node) restoreLogged(f *raftfsm.FSM, rc io.ReadCloser) error {
	start := time.Now()
	cr := &countedReader{ReadCloser: rc}
	if err := f.Restore(cr); err != nil {
		return err
	}
	var znodes int
	f.Read(func(t *tree.Tree) { znodes = t.Len() })
	n.log.LogAttrs(context.Background(), slog.LevelInfo, "snapshot restored", slog.String("zxid", hexZxid(f.LastZxid())),
		slog.Int("znodes", znodes), slog.Int64("bytes", cr.bytes),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()))
	return nil
}

// countedReader counts what is read from a snapshot.
type countedReader struct {
	io.ReadCloser
	bytes int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.bytes += int64(n)
	return n, err
}

// hexZxid formats a zxid as ZooKeeper prints it.
func hexZxid(z int64) string { return "0x" + strconv.FormatUint(uint64(z), 16) }
