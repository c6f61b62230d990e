package raftfsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// ErrBadSnapshot means a snapshot is not one this package wrote, or is cut short.
var ErrBadSnapshot = errors.New("raftfsm: bad snapshot")

const (
	snapshotMagic   = "ZKRAFT"
	snapshotVersion = 1
)

// fsmSnapshot is a captured state, written out by Persist while the FSM
// goes on: the sessions copied, the tree a copy-on-write snapshot.
type fsmSnapshot struct {
	lastZxid int64
	sessions []Session
	tree     *tree.Snapshot
	kept     bool // a Keeper keeps it: it stays open after Release, until Discard
}

// Snapshot captures the state. It runs between applies (hashicorp/raft calls
// it on the FSM goroutine) and copies only the sessions; Persist does the
// writing, and the tree keeps what it changes meanwhile, until Release.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &fsmSnapshot{lastZxid: f.lastZxid.Load(), tree: f.tree.Snapshot(&f.mu)}
	s.sessions = make([]Session, 0, len(f.sessions))
	for _, sess := range f.sessions {
		s.sessions = append(s.sessions, *sess)
	}
	return s, nil
}

// CaptureTree captures the tree as it is now, with its node count, for a
// reader that walks it while the FSM goes on (a digest, say); the caller
// closes it.
func (f *FSM) CaptureTree() (*tree.Snapshot, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tree.Snapshot(&f.mu), f.tree.Len()
}

// Keeper is a raft.SnapshotSink that can keep a snapshot's captured state
// instead of its bytes, for a store that serializes it only when the
// snapshot is opened (an in-memory store: most snapshots only let Raft
// truncate its log and are never read). A kept state stays open, and the
// tree keeps for it what changes, until the store passes it to Discard.
type Keeper interface {
	raft.SnapshotSink
	Keep(s raft.FSMSnapshot)
}

// Persist writes the snapshot: a versioned header with the last zxid, the
// sessions, then the tree. On any error the sink is cancelled. A Keeper
// sink keeps the captured state instead.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if k, ok := sink.(Keeper); ok {
		s.kept = true
		k.Keep(s)
		return sink.Close()
	}
	if err := s.writeTo(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) writeTo(w io.Writer) error {
	if _, err := w.Write(s.header()); err != nil {
		return err
	}
	_, err := s.tree.WriteTo(w)
	return err
}

// header encodes everything before the tree as one length-prefixed block.
func (s *fsmSnapshot) header() []byte {
	b, start := wire.StartFrame(nil)
	b = append(b, snapshotMagic...)
	b = append(b, snapshotVersion)
	b = wire.AppendLong(b, s.lastZxid)
	b = wire.AppendInt(b, int32(len(s.sessions)))
	for _, sess := range s.sessions {
		b = wire.AppendLong(b, sess.ID)
		b = wire.AppendInt(b, sess.Timeout)
		b = wire.AppendBuffer(b, sess.Passwd)
	}
	return wire.EndFrame(b, start)
}

// Release closes the tree's snapshot, unless a Keeper keeps it.
func (s *fsmSnapshot) Release() {
	if !s.kept {
		s.tree.Close()
	}
}

// Discard closes a state that a Keeper kept (Persist), once the store no
// longer holds it. A write of it under way finishes first. Other
// snapshots are left alone.
func Discard(s raft.FSMSnapshot) {
	if fs, ok := s.(*fsmSnapshot); ok {
		fs.tree.Close()
	}
}

// Restore replaces the whole state with a snapshot written by Persist. The
// new state is built aside and swapped in under the lock; on error the old
// state stays.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	lastZxid, sessions, err := readHeader(br)
	if err != nil {
		return err
	}
	t, err := tree.Restore(br)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.ConfigZxid() > 0 {
		// A reconfig made it: the snapshot's configuration is the ensemble's.
		f.config, _, _ = t.Get(tree.ConfigPath, nil)
	} else if f.config != nil {
		t.SetConfig(f.config, time.Now().UnixMilli())
	}
	f.tree, f.sessions = t, sessions
	f.lastZxid.Store(lastZxid)
	if f.obs != nil {
		f.obs.Restored(t)
	}
	return nil
}

// maxHeader bounds the snapshot header (sessions: 8+4+4+16 bytes each).
const maxHeader = 1 << 30

func readHeader(r io.Reader) (int64, map[int64]*Session, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return 0, nil, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n > maxHeader || int(n) < len(snapshotMagic)+1 {
		return 0, nil, fmt.Errorf("%w: header length %d", ErrBadSnapshot, n)
	}
	// Read as it comes rather than into a buffer of the size the prefix
	// claims: a damaged prefix must not make the member allocate a GiB.
	frame, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err == nil && len(frame) != int(n) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	if string(frame[:len(snapshotMagic)]) != snapshotMagic || frame[len(snapshotMagic)] != snapshotVersion {
		return 0, nil, fmt.Errorf("%w: unknown header", ErrBadSnapshot)
	}
	d := wire.NewDecoder(frame[len(snapshotMagic)+1:])
	lastZxid := d.Long()
	count := d.VectorLen(16)
	sessions := make(map[int64]*Session, count)
	for i := 0; i < count; i++ {
		s := &Session{ID: d.Long(), Timeout: d.Int(), Passwd: d.Buffer()}
		sessions[s.ID] = s
	}
	if err := d.Err(); err != nil {
		return 0, nil, fmt.Errorf("%w: sessions: %w", ErrBadSnapshot, err)
	}
	if d.Remaining() != 0 {
		return 0, nil, fmt.Errorf("%w: %d stray bytes after the sessions", ErrBadSnapshot, d.Remaining())
	}
	return lastZxid, sessions, nil
}
