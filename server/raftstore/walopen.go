package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"

	"github.com/zkraft/zkraft/server/raftstore/walfs"
)

// walStore is a raft-wal log over segment files zero-filled ahead of use
// (see walfs); closing it closes both.
type walStore struct {
	*wal.WAL
	vfs *walfs.FS
}

func (s walStore) Close() error {
	err := s.WAL.Close()
	if verr := s.vfs.Close(); err == nil {
		err = verr
	}
	return err
}

// walOpening is what opening a raft-wal log found.
type walOpening struct {
	findings []Finding
	// tail is the scan of the segment raft-wal was appending to, tailPath
	// its file and tailBase its first index.
	tail     *tailScan
	tailPath string
	tailBase uint64
	// quarantined is where a log that could not be opened was moved;
	// tailLost reports that the segment being appended to was moved aside
	// and begun again.
	quarantined string
	tailLost    bool
}

// openWAL opens (or creates) the raft-wal log in path, segments of
// segmentSize bytes. A metadata database that cannot be read, or a log
// raft-wal refuses to open, is moved aside and a new one made; a sealed
// segment that cannot be opened reads as damaged (its entries fail); the
// segment being appended to is scanned for damage before raft-wal drops
// what follows its last good batch, and one that cannot be recovered at
// all is moved aside and begun again.
//
// Without repair, nothing is moved aside: what cannot be read is an error.
func openWAL(path string, segmentSize int, repair bool, logger hclog.Logger, wrap func(types.VFS) types.VFS) (walStore, walOpening, error) {
	var o walOpening
	if err := os.MkdirAll(path, 0o755); err != nil {
		return walStore{}, o, err
	}
	if err := checkWALMeta(path); err != nil {
		if !repair || !isDamage(err) {
			return walStore{}, o, fmt.Errorf("%w: its metadata cannot be read: %w", ErrUnrecoverable, err)
		}
		if err := o.setAside(path, err); err != nil {
			return walStore{}, o, err
		}
	}
	s, err := tryOpenWAL(path, segmentSize, repair, logger, wrap, &o)
	if err == nil {
		return s, o, nil
	}
	if !isDamage(err) {
		return walStore{}, o, err
	}
	if !repair {
		return walStore{}, o, fmt.Errorf("%w: %w", ErrUnrecoverable, err)
	}
	if err := o.setAside(path, err); err != nil {
		return walStore{}, o, err
	}
	o.tail = nil
	s, err = tryOpenWAL(path, segmentSize, repair, logger, wrap, &o)
	return s, o, err
}

// setAside moves the log in path aside (why says why) and makes its
// directory again, empty.
func (o *walOpening) setAside(path string, why error) error {
	to, err := quarantine(path)
	if err != nil {
		return fmt.Errorf("move the damaged Raft log %s aside: %w", path, err)
	}
	o.quarantined = to
	o.findings = append(o.findings, Finding{File: path, Offset: -1, What: "the log cannot be opened: " + why.Error(),
		Action: "moved to " + to + "; the log starts again empty"})
	return os.MkdirAll(path, 0o755)
}

// tryOpenWAL opens the log once, noting what it finds in o.
func tryOpenWAL(path string, segmentSize int, repair bool, logger hclog.Logger, wrap func(types.VFS) types.VFS,
	o *walOpening) (s walStore, err error) {
	vfs, err := walfs.New(path, segmentSize, logger)
	if err != nil {
		return walStore{}, err
	}
	var under types.VFS = vfs
	if wrap != nil {
		under = wrap(vfs)
	}
	filer := &checkingFiler{SegmentFiler: segment.NewFiler(path, under), dir: path, limit: int64(segmentSize), repair: repair, o: o}
	err = guarded(func() error {
		w, err := wal.Open(path, wal.WithLogger(logger), wal.WithSegmentSize(segmentSize), wal.WithSegmentFiler(filer))
		s = walStore{w, vfs}
		return err
	})
	if err != nil {
		vfs.Close()
		return walStore{}, err
	}
	return s, nil
}

// checkWALMeta reads raft-wal's metadata database in path, if there is
// one, as raft-wal will, and returns an error if it cannot: bbolt panics,
// or faults on a file shorter than its pages, when it reads a damaged one.
func checkWALMeta(path string) error {
	file := filepath.Join(path, metadb.FileName)
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return guarded(func() error {
		if err := checkBolt(file); err != nil {
			return err
		}
		var db metadb.BoltMetaDB
		defer db.Close()
		_, err := db.Load(path)
		return err
	})
}

// checkBolt checks the bbolt database in file page by page (see
// checkBoltPages), then opens it read-only and reads every key; call it
// guarded.
func checkBolt(file string) error {
	if err := checkBoltPages(file); err != nil {
		return err
	}
	db, err := bbolt.Open(file, 0o644, &bbolt.Options{ReadOnly: true, Timeout: timeoutOpen})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { return walkBucket(b) })
	})
}

// walkBucket reads every key and value of b and its nested buckets.
func walkBucket(b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				return walkBucket(nested)
			}
		}
		return nil
	})
}

// checkingFiler is raft-wal's segment filer, with what a damaged segment
// needs (see openWAL).
type checkingFiler struct {
	types.SegmentFiler
	dir    string
	limit  int64
	repair bool // a segment that cannot be recovered may be moved aside
	o      *walOpening
	mu     sync.Mutex // guards o
}

// Open opens a sealed segment; one that cannot be opened reads as damaged.
func (f *checkingFiler) Open(info types.SegmentInfo) (types.SegmentReader, error) {
	r, err := f.SegmentFiler.Open(info)
	if err == nil || !isDamage(err) {
		return r, err
	}
	f.mu.Lock()
	f.o.findings = append(f.o.findings, Finding{File: filepath.Join(f.dir, segment.FileName(info)), Offset: -1,
		What: "a sealed segment cannot be opened: " + err.Error(), Action: "its entries read as damaged"})
	f.mu.Unlock()
	return brokenSegment{err: fmt.Errorf("%w: %w", types.ErrCorrupt, err)}, nil
}

// RecoverTail scans the segment raft-wal was appending to, then lets
// raft-wal recover it; one it cannot is moved aside and begun again.
func (f *checkingFiler) RecoverTail(info types.SegmentInfo) (types.SegmentWriter, error) {
	path := filepath.Join(f.dir, segment.FileName(info))
	f.o.tailPath, f.o.tailBase = path, info.BaseIndex
	if file, err := os.Open(path); err == nil {
		scan, err := func() (tailScan, error) {
			st, err := file.Stat()
			if err != nil {
				return tailScan{}, err
			}
			return scanTailFile(file, st.Size(), info.BaseIndex, f.limit)
		}()
		if err != nil { // a segment that cannot be read is damaged
			scan = tailScan{damaged: true, why: "the segment cannot be read: " + err.Error()}
		}
		f.o.tail = &scan
		file.Close()
	}
	w, err := f.SegmentFiler.RecoverTail(info)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !f.repair || !isDamage(err) {
		return w, err
	}
	to, qerr := quarantine(path)
	if qerr != nil {
		return nil, fmt.Errorf("recover %s: %w (and cannot move it aside: %w)", path, err, qerr)
	}
	f.o.findings = append(f.o.findings, Finding{File: path, Offset: -1, What: "the segment being appended to cannot be recovered: " + err.Error(),
		Action: "moved to " + to + "; the segment starts again empty"})
	f.o.tailLost = true
	return f.SegmentFiler.Create(info)
}

// brokenSegment is a sealed segment that could not be opened: every read
// fails.
type brokenSegment struct{ err error }

func (b brokenSegment) GetLog(uint64) (*types.PooledBuffer, error) { return nil, b.err }
func (b brokenSegment) Close() error                               { return nil }
