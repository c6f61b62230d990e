package member

import (
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/server/internal/backoff"
	"github.com/zkraft/zkraft/wire"
)

// Forwarding: a follower sends what only the leader may do over one
// connection to the leader's forward port, in order. Each frame is
// [len][type][request id uint64][payload]; replies carry the request's
// type and id, a status byte and a payload.
const (
	fwdApply      byte = 1  // a command to propose; reply: status only (success shows as its apply)
	fwdTouch      byte = 2  // the member's applied zxid, then the session ids that sent packets lately; no reply
	fwdRevalidate byte = 3  // a resuming session and its timeout; reply: 1 if alive
	fwdSync       byte = 4  // a barrier; reply: the leader's last applied zxid
	fwdPing       byte = 5  // nothing; reply: status only (the member's process is there)
	fwdGone       byte = 6  // a leader's id (uint32); reply: gone for the member asked (byte), its last log term and index
	fwdLogEnd     byte = 7  // nothing; reply: the member's last log term and index (see voteGuard), then its current term (surveyTerms)
	fwdPrepare    byte = 8  // a command the leader prepares (Host.Prepare), then proposes; reply as fwdApply
	fwdDigest     byte = 9  // the member's newest tree digest: zxid, digest (see digest.go); no reply (an older leader ignores it)
	fwdGetLog     byte = 10 // a log index; reply: the entry there, whole (fetchEntry; an older member does not answer)
	fwdPresence   byte = 11 // the member's description, opaque (Config.Presence); no reply (an older leader ignores it)
	fwdView       byte = 12 // nothing; reply: every member's report and description (see view.go; an older leader does not answer)

	fwdOK  byte = 0
	fwdErr byte = 1
	// fwdLost is no reply: the connection to the leader failed first.
	fwdLost byte = 2
	// fwdNotLeader: the member asked does not lead, and did nothing.
	fwdNotLeader byte = 3

	// maxForwardFrame bounds a forwarded frame: a command holds a client
	// request of at most jute.maxbuffer bytes plus a small header.
	maxForwardFrame = 64 << 20
)

var (
	errNoLeader  = errors.New("server: no leader")
	errIsLeader  = errors.New("server: this member is the leader")
	errForwarded = errors.New("server: the leader refused a forwarded request")
	// errLeaderLost means the connection to the leader failed before its
	// answer came: whether the request took effect is unknown.
	errLeaderLost = errors.New("server: connection to the leader lost")
	// errNotLeaderThere means the member asked was not the leader (any
	// more) and did nothing with the request.
	errNotLeaderThere = errors.New("server: the member asked does not lead")
	// errNotSent means the connection to the leader was lost before the
	// request went out.
	errNotSent = errors.New("server: connection to the leader lost before the request was sent")
)

// NeverAppended reports whether a proposal that failed with err was
// appended to no log: proposed again, it cannot commit twice.
func NeverAppended(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, errNotLeaderThere) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, errNotSent)
}

// MayHaveCommitted reports whether a proposal that failed with err may
// commit yet: a leader appended it and lost office before it committed, or
// the connection to the leader broke before its answer came. Once a
// barrier through a leader is applied here (Sync), it has been applied
// here if it ever commits.
func MayHaveCommitted(err error) bool {
	return errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, errLeaderLost)
}

// fwdReply is what the leader owes a follower for one request, resolved in
// order by writeForwardReplies.
type fwdReply struct {
	typ    byte
	id     uint64
	future raft.Future // for apply, prepare and sync
	// proposed: future is a proposal counted in unanswered (see
	// raftApplyLocked), which settleForwarded uncounts once Raft answers.
	proposed bool
	value    []byte // a ready payload
	err      error
}

func appendFwd(dst []byte, typ byte, id uint64, payload []byte) []byte {
	return appendFwdFrame(dst, typ, id, nil, payload)
}

// appendFwdReply appends a reply frame: status, then payload.
func appendFwdReply(dst []byte, typ byte, id uint64, status byte, payload []byte) []byte {
	return appendFwdFrame(dst, typ, id, []byte{status}, payload)
}

func appendFwdFrame(dst []byte, typ byte, id uint64, head, payload []byte) []byte {
	var start int
	dst, start = wire.StartFrame(dst)
	dst = append(dst, typ)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = append(dst, head...)
	dst = append(dst, payload...)
	return wire.EndFrame(dst, start)
}

// acceptForwards serves members' forward connections until shutdown. A
// failed accept (out of descriptors, say) is tried again after a pause: a
// member that stopped accepting would leave the others' clients unable to
// write through it until it restarted.
func (n *Node) acceptForwards(ln net.Listener) {
	var pauses backoff.Accept
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-n.quit:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			d := pauses.Failed()
			n.log.Warn("accepting a member's forward connection failed", "err", err, "retry_in", d)
			if !backoff.Sleep(d, n.quit) {
				return
			}
			continue
		}
		pauses.Succeeded()
		if !n.trackPeer(nc) || !n.goOwned("forward-in", func() { n.serveForward(nc) }) {
			nc.Close()
		}
	}
}

// serveForward reads one member's forwarded requests in order: commands are
// proposed to Raft in the order they came, so a session's writes keep their
// order.
func (n *Node) serveForward(nc net.Conn) {
	defer n.untrackPeer(nc)
	defer nc.Close()
	replies := make(chan fwdReply, 4096)
	if !n.goOwned("forward-replies", func() { n.writeForwardReplies(nc, replies) }) {
		return
	}
	defer close(replies)
	// Writes are proposed only in the term this connection began in: a
	// frame read late, after this member lost office and won it back, was
	// already failed to its client as a lost connection, and must not take
	// effect long after the client has looked. The connection closes
	// instead, and its member reconnects.
	term := n.raftNow().CurrentTerm()
	fr := wire.NewFrameReader(nc, maxForwardFrame)
	for {
		frame, err := fr.Next()
		if err != nil || len(frame) < 9 {
			return
		}
		typ, id, payload := frame[0], binary.BigEndian.Uint64(frame[1:9]), frame[9:]
		switch typ {
		case fwdApply:
			if n.raftNow().CurrentTerm() != term {
				return
			}
			replies <- n.applyForwarded(typ, id, append([]byte(nil), payload...))
		case fwdPrepare:
			// The member asking is in touch: its reports wait behind this
			// request on this connection, and the reconfig counts it.
			n.heard(nc)
			n.awaitReconciled()
			if !n.IsLeader() { // it handed leadership over meanwhile: nothing was proposed
				replies <- fwdReply{typ: typ, id: id, err: errNotLeaderThere}
				continue
			}
			if n.raftNow().CurrentTerm() != term {
				return
			}
			replies <- n.applyForwarded(typ, id, n.host.Prepare(append([]byte(nil), payload...)))
		case fwdTouch:
			n.touchRemote(nc, payload)
		case fwdDigest:
			n.digestReported(nc, payload)
		case fwdGetLog:
			replies <- n.answerGetLog(typ, id, payload)
		case fwdPresence:
			n.presenceReported(nc, payload)
		case fwdView:
			replies <- n.answerView(typ, id)
		case fwdRevalidate:
			replies <- n.revalidateFor(typ, id, payload)
		case fwdSync:
			replies <- fwdReply{typ: typ, id: id, future: n.barrier(n.cfg.RaftTimeout * 10)}
		case fwdPing:
			replies <- fwdReply{typ: typ, id: id}
		case fwdGone:
			replies <- fwdReply{typ: typ, id: id, value: n.answerGone(payload)}
		case fwdLogEnd:
			replies <- fwdReply{typ: typ, id: id, value: binary.BigEndian.AppendUint64(appendLogEnd(nil, n.logEnd()), n.raftNow().CurrentTerm())}
		}
	}
}

// applyForwarded proposes a member's command; writeForwardReplies waits for
// its answer.
func (n *Node) applyForwarded(typ byte, id uint64, data []byte) fwdReply {
	n.applyMu.RLock()
	defer n.applyMu.RUnlock()
	f, ok := n.raftApplyLocked(data)
	if !ok {
		return fwdReply{typ: typ, id: id, err: ErrClosed}
	}
	return fwdReply{typ: typ, id: id, future: f, proposed: true}
}

func (n *Node) revalidateFor(typ byte, id uint64, payload []byte) fwdReply {
	if len(payload) < 12 {
		return fwdReply{typ: typ, id: id, err: errForwarded}
	}
	if !n.IsLeader() {
		return fwdReply{typ: typ, id: id, err: errNotLeaderThere}
	}
	session := int64(binary.BigEndian.Uint64(payload))
	timeout := time.Duration(binary.BigEndian.Uint32(payload[8:])) * time.Millisecond
	return fwdReply{typ: typ, id: id, value: []byte{b2u8(n.host.Revalidate(session, timeout))}}
}

// writeForwardReplies resolves replies in order and writes them, flushing
// when no further reply is ready.
func (n *Node) writeForwardReplies(nc net.Conn, replies <-chan fwdReply) {
	var buf []byte
	for r := range replies {
		buf = n.appendForwardReply(buf, r)
		if len(replies) == 0 || len(buf) > 64<<10 {
			nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := nc.Write(buf); err != nil {
				nc.Close()
				for r := range replies { // let the reader finish
					n.settleForwarded(r)
				}
				return
			}
			buf = buf[:0]
		}
	}
}

// settleForwarded waits for Raft's answer to a reply's proposal, if it has
// one, and returns it; stopProposing counts the answers.
func (n *Node) settleForwarded(r fwdReply) error {
	if r.future == nil {
		return r.err
	}
	err := r.future.Error()
	if r.proposed {
		n.unanswered.Add(-1)
	}
	return err
}

func (n *Node) appendForwardReply(buf []byte, r fwdReply) []byte {
	payload, err := r.value, n.settleForwarded(r)
	if r.future != nil && err == nil && r.typ == fwdSync { // a barrier: everything before it is applied here
		payload = binary.BigEndian.AppendUint64(nil, uint64(n.fsm.LastZxid()))
	}
	status := fwdOK
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, errNotLeaderThere),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Raft answers these only for what it never appended.
		status, payload = fwdNotLeader, nil
	case errors.Is(err, raft.ErrLeadershipLost):
		// Appended, perhaps committed: as if the connection had failed.
		status, payload = fwdLost, nil
	case err != nil:
		status, payload = fwdErr, []byte(err.Error())
	}
	return appendFwdReply(buf, r.typ, r.id, status, payload)
}

// heard notes the member at the other end of nc as in touch now.
func (n *Node) heard(nc net.Conn) {
	if pc, ok := nc.(*peerConn); ok {
		n.mu.Lock()
		n.lastHeard[pc.remoteID()] = time.Now()
		n.mu.Unlock()
	}
}

// touchRemote notes a member as in touch and the zxid it has applied, and
// extends the sessions it reports alive.
func (n *Node) touchRemote(nc net.Conn, payload []byte) {
	if len(payload) < 8 {
		return
	}
	now := time.Now()
	n.mu.Lock()
	if pc, ok := nc.(*peerConn); ok {
		n.lastHeard[pc.remoteID()] = now
		n.applied[pc.remoteID()] = binary.BigEndian.Uint64(payload) // see tuneTrailingLogs
		n.heardFrom(pc.remoteID())
	}
	n.mu.Unlock()
	payload = payload[8:]
	if len(payload) < 8 || !n.IsLeader() {
		return
	}
	ids := make([]int64, 0, len(payload)/8)
	for ; len(payload) >= 8; payload = payload[8:] {
		ids = append(ids, int64(binary.BigEndian.Uint64(payload)))
	}
	n.host.TouchSessions(ids)
}

// trackPeer remembers an inbound member connection, to close at shutdown.
func (n *Node) trackPeer(nc net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.peerConns[nc] = struct{}{}
	return true
}

func (n *Node) untrackPeer(nc net.Conn) {
	n.mu.Lock()
	delete(n.peerConns, nc)
	n.mu.Unlock()
}
