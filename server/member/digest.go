package member

import (
	"encoding/binary"
	"math/bits"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
)

// Digests.
//
// Members compare a digest of the tree at the same zxid, as ZooKeeper's
// digest check does: a member whose tree went astray (a bug, a memory
// error, an entry damaged in a way no checksum caught) is found, logged
// ("digest mismatch"), counted (mntr zk_digest_mismatches_count,
// ZooKeeper's key) and shown by the console, rather than left serving a
// tree that differs.
//
// The points are the same on every member: the first command at or past
// each multiple of the digest base (digestBase) in the log, where the
// tree's size makes it due: every k-th multiple, k the power of two at
// least size/base, so that digests cost at most about two nodes visited
// per write however large the tree (one that grows with every write is
// digested at the powers of two).
// The tree is captured there (copy on write: microseconds on the apply
// path) and digested on a goroutine of its own. A follower sends its
// newest digest to the leader (fwdDigest, with its reports), which
// compares it with its own at that zxid.

// digestBase is the spacing of digest points in log entries.
const digestBase = 65536

// digestsKept is how many of its newest digests a member keeps.
const digestsKept = 8

// digests is a member's digest state.
type digests struct {
	base uint64
	busy atomic.Bool // a digest is being computed

	mu       sync.Mutex // guards the fields below
	next     uint64     // the next multiple of base to digest at; 0 until the first apply
	kept     []zxidDigest
	sent     uint64             // the zxid of the newest digest sent to the leader
	reported map[int]zxidDigest // on the leader: members' reports not yet compared
	last     DigestMismatch     // the newest mismatch, zero if none
}

// zxidDigest is the tree's digest at a zxid.
type zxidDigest struct{ zxid, digest uint64 }

// DigestMismatch is a member whose tree's digest differed from the
// leader's at the same zxid.
type DigestMismatch struct {
	Member       int
	Zxid         uint64
	Leader, Ours uint64 // the leader's digest and the member's
	At           time.Time
}

func newDigests(base uint64) *digests {
	return &digests{base: base, reported: make(map[int]zxidDigest)}
}

// cut returns the place in logs of the command at which a digest point
// falls, -1 if none.
func (d *digests) cut(logs []*raft.Log) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		if d.next == 0 {
			d.next = (l.Index + d.base - 1) / d.base * d.base
		}
		if l.Index >= d.next {
			return i
		}
	}
	return -1
}

// passed notes that the command at index, a digest point, was applied, and
// reports whether the tree, of size nodes, is due a digest there.
func (d *digests) passed(index uint64, size int) bool {
	d.mu.Lock()
	point := d.next
	d.next = (index/d.base + 1) * d.base
	d.mu.Unlock()
	every := uint64(1) << bits.Len64(max(1, uint64(size)/d.base)-1) // a power of two, at least size/base
	return (point/d.base)%every == 0
}

// applyDigested applies logs to fsm, capturing the tree at each digest
// point among them for a digest (see digests).
func (n *Node) applyDigested(fsm *raftfsm.FSM, logs []*raft.Log) []any {
	d := n.digests
	if d == nil {
		return fsm.ApplyBatch(logs)
	}
	var out []any
	for {
		i := d.cut(logs)
		if i < 0 {
			return append(out, fsm.ApplyBatch(logs)...)
		}
		out = append(out, fsm.ApplyBatch(logs[:i+1])...)
		index := logs[i].Index
		snap, size := fsm.CaptureTree()
		// One digest at a time: a member still digesting at the next point
		// skips it (the leader compares only points both have).
		if d.passed(index, size) && d.busy.CompareAndSwap(false, true) {
			compute := func() (uint64, error) { return snap.Digest(n.digestPause) }
			if !n.goOwned("digest", func() { n.digest(index, compute, snap.Close) }) {
				snap.Close()
				d.busy.Store(false)
			}
		} else {
			snap.Close()
		}
		logs = logs[i+1:]
	}
}

// digest computes the digest at zxid and keeps it; the leader compares it
// with what members reported.
func (n *Node) digest(zxid uint64, compute func() (uint64, error), done func()) {
	sum, err := compute()
	done()
	d := n.digests
	d.busy.Store(false)
	if err != nil {
		return
	}
	d.mu.Lock()
	d.kept = append(d.kept, zxidDigest{zxid, sum})
	if len(d.kept) > digestsKept {
		d.kept = d.kept[len(d.kept)-digestsKept:]
	}
	var pending []struct {
		id int
		r  zxidDigest
	}
	for id, r := range d.reported {
		if r.zxid == zxid {
			pending = append(pending, struct {
				id int
				r  zxidDigest
			}{id, r})
			delete(d.reported, id)
		}
	}
	d.mu.Unlock()
	for _, p := range pending {
		n.compareDigest(p.id, p.r)
	}
}

// digestPause paces a digest's walk of the tree: after each chunk of nodes
// read (about half a millisecond of work) it waits four times as long, so
// that a digest takes a fifth of a core at most rather than a burst that
// delays the requests of that moment.
func (n *Node) digestPause() {
	select {
	case <-time.After(2 * time.Millisecond):
	case <-n.quit:
	}
}

// own returns this member's digest at zxid, if it has it.
func (d *digests) own(zxid uint64) (uint64, bool) {
	for _, k := range d.kept {
		if k.zxid == zxid {
			return k.digest, true
		}
	}
	return 0, false
}

// digestToSend returns this member's newest digest not yet sent to the
// leader, as a fwdDigest payload, nil if there is none.
func (n *Node) digestToSend() []byte {
	d := n.digests
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.kept) == 0 || d.kept[len(d.kept)-1].zxid <= d.sent {
		return nil
	}
	k := d.kept[len(d.kept)-1]
	d.sent = k.zxid
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, k.zxid), k.digest)
}

// digestReported takes a member's digest on the leader: compared at once
// if the leader has its own at that zxid, else when it does.
func (n *Node) digestReported(nc net.Conn, payload []byte) {
	pc, ok := nc.(*peerConn)
	d := n.digests
	if !ok || d == nil || len(payload) < 16 || !n.IsLeader() {
		return
	}
	r := zxidDigest{binary.BigEndian.Uint64(payload), binary.BigEndian.Uint64(payload[8:])}
	d.mu.Lock()
	_, have := d.own(r.zxid)
	if !have {
		d.reported[pc.remoteID()] = r
	}
	d.mu.Unlock()
	if have {
		n.compareDigest(pc.remoteID(), r)
	}
}

// compareDigest compares member id's digest r with the leader's own.
func (n *Node) compareDigest(id int, r zxidDigest) {
	d := n.digests
	d.mu.Lock()
	ours, ok := d.own(r.zxid)
	if !ok || ours == r.digest {
		d.mu.Unlock()
		return
	}
	d.last = DigestMismatch{Member: id, Zxid: r.zxid, Leader: ours, Ours: r.digest, At: time.Now()}
	d.mu.Unlock()
	n.stats.DigestMismatches.Add(1)
	n.log.Error("digest mismatch", "member", id, "zxid", "0x"+strconv.FormatUint(r.zxid, 16),
		"leader_digest", strconv.FormatUint(ours, 16), "member_digest", strconv.FormatUint(r.digest, 16),
		"action", "the member's tree differs from the leader's: move its data dir aside and restart it, to rebuild it from the leader")
}

// LastDigestMismatch returns, on the leader, the newest digest mismatch it
// found, and whether there was one.
func (n *Node) LastDigestMismatch() (DigestMismatch, bool) {
	if n.digests == nil {
		return DigestMismatch{}, false
	}
	n.digests.mu.Lock()
	defer n.digests.mu.Unlock()
	return n.digests.last, !n.digests.last.At.IsZero()
}
