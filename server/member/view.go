package member

import (
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"time"
)

// The cluster's view: each member describes itself to the leader, at most
// once a second with its reports (fwdPresence; what it says is the
// server's, Config.Presence, and opaque here), and any member can ask the
// leader for every member's report and description (View, fwdView), so
// that a console on any member shows the whole cluster. An older leader
// ignores the descriptions and does not answer the question: View then
// fails after its deadline, and a member shows what it knows itself.

// presenceEvery is how often a member describes itself to the leader.
const presenceEvery = time.Second

// MemberView is one member as the leader sees it.
type MemberView struct {
	ID       int
	Applied  int64     // the zxid it last reported applied
	Heard    time.Time // when it last reported; the leader's own: now
	Presence []byte    // its description (Config.Presence), nil if none yet
}

// View returns every member the leader has heard from, and the leader
// itself, ordered by id: from this member if it leads, else from the
// leader, waiting for it until deadline.
func (n *Node) View(deadline time.Time) ([]MemberView, error) {
	if !n.cfg.Clustered() || n.IsLeader() {
		return n.view(), nil
	}
	reply, err := n.fwd.call(fwdView, nil, deadline)
	if err != nil {
		return nil, err
	}
	return decodeView(reply, time.Now())
}

// view is View on the leader.
func (n *Node) view() []MemberView {
	var self []byte
	if n.cfg.Presence != nil {
		self = n.cfg.Presence()
	}
	now := time.Now()
	out := []MemberView{{ID: n.cfg.ServerID, Applied: n.fsm.LastZxid(), Heard: now, Presence: self}}
	n.mu.Lock()
	for id, zxid := range n.applied {
		if id != n.cfg.ServerID {
			out = append(out, MemberView{ID: id, Applied: int64(zxid), Heard: n.lastHeard[id], Presence: n.presence[id]})
		}
	}
	n.mu.Unlock()
	slices.SortFunc(out, func(a, b MemberView) int { return a.ID - b.ID })
	return out
}

// presenceToSend returns this member's description if a second has passed
// since it last sent one (or the leader changed), else nil.
func (n *Node) presenceToSend() []byte {
	if n.cfg.Presence == nil {
		return nil
	}
	now := time.Now()
	leader := n.LeaderID()
	n.mu.Lock()
	due := now.Sub(n.presenceSent) >= presenceEvery || leader != n.presenceTo
	if due {
		n.presenceSent, n.presenceTo = now, leader
	}
	n.mu.Unlock()
	if !due {
		return nil
	}
	return n.cfg.Presence()
}

// presenceReported keeps, on the leader, a member's description.
func (n *Node) presenceReported(nc net.Conn, payload []byte) {
	pc, ok := nc.(*peerConn)
	if !ok {
		return
	}
	n.mu.Lock()
	n.presence[pc.remoteID()] = append([]byte(nil), payload...)
	n.mu.Unlock()
}

// answerView answers fwdView, if this member leads.
func (n *Node) answerView(typ byte, id uint64) fwdReply {
	if !n.IsLeader() {
		return fwdReply{typ: typ, id: id, err: errNotLeaderThere}
	}
	return fwdReply{typ: typ, id: id, value: appendView(nil, n.view(), time.Now())}
}

// appendView encodes members: a count, then for each its id (uint32),
// applied zxid, milliseconds since the leader heard from it (uint64s), and
// its description (uint32 length, bytes).
func appendView(dst []byte, members []MemberView, now time.Time) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(members)))
	for _, m := range members {
		dst = binary.BigEndian.AppendUint32(dst, uint32(m.ID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Applied))
		dst = binary.BigEndian.AppendUint64(dst, uint64(max(0, now.Sub(m.Heard).Milliseconds())))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.Presence)))
		dst = append(dst, m.Presence...)
	}
	return dst
}

var errBadView = errors.New("server: malformed view from the leader")

// maxHeardAgo bounds a view's "heard ms ago" (a member never heard from:
// longer ago than any clock can say), so that it fits a time.Duration.
const maxHeardAgo = 1 << 40

// decodeView decodes appendView's encoding, the times taken from now.
func decodeView(b []byte, now time.Time) ([]MemberView, error) {
	if len(b) < 4 {
		return nil, errBadView
	}
	count := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(count) > uint64(len(b))/24 {
		return nil, errBadView
	}
	out := make([]MemberView, 0, count)
	for range count {
		if len(b) < 24 {
			return nil, errBadView
		}
		m := MemberView{ID: int(binary.BigEndian.Uint32(b)), Applied: int64(binary.BigEndian.Uint64(b[4:]))}
		m.Heard = now.Add(-time.Duration(min(binary.BigEndian.Uint64(b[12:]), maxHeardAgo)) * time.Millisecond)
		size := binary.BigEndian.Uint32(b[20:])
		b = b[24:]
		if uint64(size) > uint64(len(b)) {
			return nil, errBadView
		}
		if size > 0 {
			m.Presence = append([]byte(nil), b[:size]...)
		}
		b = b[size:]
		out = append(out, m)
	}
	if len(b) != 0 {
		return nil, errBadView
	}
	return out, nil
}
