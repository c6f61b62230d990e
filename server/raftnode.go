package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// startRaft starts a single-member Raft group on in-memory stores and waits
// until it leads. A single voter never competes in an election, so its
// timeouts can be as short as hashicorp/raft allows.
func (s *Server) startRaft(ctx context.Context) error {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(strconv.Itoa(s.cfg.ServerID))
	// Start with twice the timeouts and lower them once Raft runs (below):
	// lowering them makes a follower check its heartbeat timer at once.
	conf.HeartbeatTimeout = 2 * s.cfg.RaftTimeout
	conf.ElectionTimeout = 2 * s.cfg.RaftTimeout
	conf.LeaderLeaseTimeout = s.cfg.RaftTimeout
	conf.CommitTimeout = time.Millisecond
	conf.MaxAppendEntries = 512
	conf.BatchApplyCh = true
	conf.ShutdownOnRemove = false
	// In memory, the Raft log only grows until a snapshot lets Raft drop it;
	// check often so that it stays a few thousand entries long instead of
	// holding every write since start.
	conf.SnapshotInterval = 250 * time.Millisecond
	conf.SnapshotThreshold = minSnapshotThreshold
	conf.TrailingLogs = 1024
	conf.Logger = raftLogger(s.log)

	store := raft.NewInmemStore()
	snaps := &memSnapshotStore{}
	addr, trans := raft.NewInmemTransport(raft.ServerAddress("zkraft-" + strconv.Itoa(s.cfg.ServerID)))
	bootstrap := raft.Configuration{Servers: []raft.Server{{ID: conf.LocalID, Address: addr}}}
	if err := raft.BootstrapCluster(conf, store, store, snaps, trans, bootstrap); err != nil {
		return fmt.Errorf("bootstrap raft: %w", err)
	}
	r, err := raft.NewRaft(conf, s.fsm, store, store, snaps, trans)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	s.raft = r
	s.raftTrans = trans
	// A single voter has no one to wait for: lowering the heartbeat timeout
	// makes the fresh follower, which has never heard from a leader, stand
	// for election now instead of after a random 1-2 timeouts.
	rc := r.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = s.cfg.RaftTimeout, s.cfg.RaftTimeout
	if err := r.ReloadConfig(rc); err != nil {
		return fmt.Errorf("configure raft: %w", err)
	}
	return s.waitLeader(ctx)
}

// waitLeader waits until this member leads.
func (s *Server) waitLeader(ctx context.Context) error {
	obs := make(chan raft.Observation, 4)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(observer)
	defer s.raft.DeregisterObserver(observer)
	for s.raft.State() != raft.Leader {
		select {
		case <-obs:
		case <-ctx.Done():
			return fmt.Errorf("wait for raft leadership: %w", ctx.Err())
		}
	}
	return nil
}

func (s *Server) isLeader() bool { return s.raft != nil && s.raft.State() == raft.Leader }

// raftLogger bridges hashicorp/raft's hclog logging into the server's slog
// handler. Raft logs at Info on every election, so it logs at Warn and above
// unless the handler is enabled for debugging.
func raftLogger(l *slog.Logger) hclog.Logger {
	level := hclog.Warn
	if l.Enabled(context.Background(), slog.LevelDebug) {
		level = hclog.Debug
	}
	std := slog.NewLogLogger(l.With("component", "raft").Handler(), slog.LevelInfo)
	if !l.Enabled(context.Background(), slog.LevelError) {
		return hclog.NewNullLogger()
	}
	return hclog.FromStandardLogger(std, &hclog.LoggerOptions{Name: "raft", Level: level, Output: io.Discard})
}

// minSnapshotThreshold is the fewest log entries between snapshots.
const minSnapshotThreshold = 32768

// tuneSnapshots keeps Raft's snapshot threshold at the tree's size (at
// least minSnapshotThreshold). A snapshot copies every node, so spacing
// snapshots by as many writes as there are nodes costs each write about one
// node copy, however large the tree, while the log Raft keeps in memory
// between snapshots stays in proportion to the tree.
func (s *Server) tuneSnapshots() {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	current := uint64(minSnapshotThreshold)
	for {
		select {
		case <-s.quit:
			return
		case <-ticker.C:
		}
		var nodes int
		s.fsm.Read(func(t *treeT) { nodes = t.Len() })
		want := max(uint64(nodes), minSnapshotThreshold)
		if want < current*3/4 || want > current*5/4 {
			rc := s.raft.ReloadableConfig()
			rc.SnapshotThreshold = want
			if err := s.raft.ReloadConfig(rc); err != nil {
				s.log.Warn("tune snapshot threshold", "err", err)
				continue
			}
			current = want
		}
	}
}
