package server

import (
	"sync"
	"sync/atomic"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server/member"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// Reconfig: the client's side. A reconfig request goes to the leader as a
// command to prepare (member.Node.ProposePrepared); there Prepare decides
// it, in ZooKeeper's order of checks, and the outcome is proposed as a
// TypeReconfig command. Applying it sets /zookeeper/config on every member,
// and Applied hands the new members to the membership side, which brings
// Raft's configuration in line (see member/membership.go).

// reconfigState is the leader's note of a reconfig proposed but not yet
// applied: ZooKeeper refuses another one meanwhile (RECONFIGINPROGRESS).
type reconfigState struct {
	mu      sync.Mutex  // serializes Prepare (never taken inside an apply)
	pending atomic.Bool // a reconfig was proposed and has not applied yet
}

// Prepare implements member.Host: on the leader, it turns a client's
// reconfig request into the TypeReconfig command that carries its outcome.
// Any other command is returned as it is.
func (s *Server) Prepare(data []byte) []byte {
	var cmd raftfsm.Command
	if err := cmd.Decode(data); err != nil || cmd.Type != raftfsm.TypeRequest || cmd.Op != wire.OpReconfig {
		return data
	}
	s.reconfig.mu.Lock()
	defer s.reconfig.mu.Unlock()
	out := raftfsm.Command{Type: raftfsm.TypeReconfig, Origin: cmd.Origin, ReqID: cmd.ReqID,
		Session: cmd.Session, Time: cmd.Time, Auth: cmd.Auth}
	var next []member.Peer
	next, out.Code = s.decideReconfig(&cmd)
	if out.Code == wire.CodeOK {
		out.Body = member.ServerLines(next)
		s.reconfig.pending.Store(true)
	}
	return out.Encode()
}

// versionConfig runs when this member is elected: in a cluster that allows
// reconfig, a configuration no reconfig has set yet (zoo.cfg's, version 0)
// gets the zxid of a command of the leader's own as its version and mzxid,
// as ZooKeeper's first leader gives it its epoch's first zxid, so that
// clients read a version they can name in a reconfig.
func (s *Server) versionConfig() {
	if !s.cfg.ReconfigEnabled || !s.cfg.clustered() {
		return
	}
	s.goOwned("version-config", func() {
		s.node.ProposeAsLeader(func() []byte {
			if s.fsm.ConfigVersioned() { // by an earlier leader: applied here now
				return nil
			}
			cmd := raftfsm.Command{Type: raftfsm.TypeReconfig, Origin: s.origin, Time: s.nowMillis(),
				Body: member.ServerLines(s.node.Servers())}
			return cmd.Encode()
		})
	})
}

// decideReconfig checks a reconfig request as ZooKeeper's leader does, in
// its order, and returns the members it asks for.
func (s *Server) decideReconfig(cmd *raftfsm.Command) ([]member.Peer, wire.Code) {
	switch {
	case !s.cfg.ReconfigEnabled:
		return nil, wire.CodeReconfigDisabled
	case !s.cfg.clustered():
		return nil, wire.CodeUnimplemented // as a standalone ZooKeeper answers
	case s.reconfig.pending.Load() || s.node.ReconfigInProgress():
		return nil, wire.CodeReconfigInProgress
	}
	var req wire.ReconfigRequest
	if _, err := req.Decode(cmd.Body); err != nil {
		return nil, wire.CodeMarshallingError
	}
	cur, version, err := member.ParseEnsemble(s.fsm.Config())
	if err != nil {
		s.log.Error("cannot read the current configuration", "err", err)
		return nil, wire.CodeSystemError
	}
	if req.CurConfigID != -1 && req.CurConfigID != version {
		return nil, wire.CodeBadVersion
	}
	next, code := member.NextEnsemble(cur, req.JoiningServers, req.LeavingServers, req.NewMembers)
	if code != wire.CodeOK {
		return nil, code
	}
	if !s.node.QuorumSynced(next) {
		return nil, wire.CodeNewConfigNoQuorum
	}
	allowed := false
	s.fsm.Read(func(t *tree.Tree) { allowed = t.Allowed(tree.ConfigPath, wire.PermWrite, cmd.Auth) })
	if !allowed {
		return nil, wire.CodeNoAuth
	}
	return next, wire.CodeOK
}

// reconfigApplied runs inside the apply of a TypeReconfig command and
// returns the new members, if it changed them, which Applied hands the
// membership side once the reply is queued.
func (s *Server) reconfigApplied(r *raftfsm.Result) []member.Peer {
	s.reconfig.pending.Store(false)
	resp, ok := r.Resp.(*wire.GetDataResponse)
	if r.Code != wire.CodeOK || !ok { // refused, or a leader's versioning already done
		return nil
	}
	servers, _, err := member.ParseEnsemble(resp.Data)
	if err != nil {
		s.log.Error("a reconfig applied a configuration that does not parse", "err", err)
		return nil
	}
	s.log.Info("the ensemble's configuration changed", "zxid", r.Index, "members", len(servers))
	return servers
}
