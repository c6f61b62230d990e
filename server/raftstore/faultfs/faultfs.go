// Package faultfs is a file system for raft-wal's segments (types.VFS) that
// fails as disks fail, for tests: reads, writes and syncs of chosen files
// fail, and a power cut undoes every write since its file's last sync,
// whole, or torn at sector boundaries (each sector of a write either
// reached the disk or did not), and removes the files created since their
// directory was last synced. Bytes flipped, zeroed or cut short in a
// stopped member's files are package damage's.
package faultfs

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hashicorp/raft-wal/types"
)

// ErrInjected is what an injected failure returns (wrapping syscall.EIO,
// as a failing disk's would).
var ErrInjected = errors.Join(errors.New("faultfs: injected failure"), syscall.EIO)

// sector is what a torn write keeps or loses as a whole.
const sector = 512

// FS wraps a raft-wal file system.
type FS struct {
	types.VFS

	mu      sync.Mutex // guards the fields below
	files   map[string]*file
	created map[string]bool // created since their directory's last sync
	// FailRead, FailWrite and FailSync, when set, are asked before each
	// read, write and sync of the file name (base name): a true answer
	// fails it with ErrInjected.
	failRead, failWrite, failSync func(name string) bool
}

// New wraps vfs.
func New(vfs types.VFS) *FS {
	return &FS{VFS: vfs, files: make(map[string]*file), created: make(map[string]bool)}
}

// FailReads makes the reads of the files f names fail (nil: none).
func (f *FS) FailReads(fail func(name string) bool) { f.mu.Lock(); f.failRead = fail; f.mu.Unlock() }

// FailWrites makes the writes of the files f names fail (nil: none).
func (f *FS) FailWrites(fail func(name string) bool) { f.mu.Lock(); f.failWrite = fail; f.mu.Unlock() }

// FailSyncs makes the syncs of the files f names fail (nil: none): what was
// written stays unsynced, for a power cut to undo.
func (f *FS) FailSyncs(fail func(name string) bool) { f.mu.Lock(); f.failSync = fail; f.mu.Unlock() }

func (f *FS) asks(fail func(string) bool, path string) bool {
	return fail != nil && fail(filepath.Base(path))
}

// Create implements types.VFS.
func (f *FS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created[path] = true
	return f.track(path, w), nil
}

// OpenWriter implements types.VFS.
func (f *FS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.track(filepath.Join(dir, name), w), nil
}

// OpenReader implements types.VFS.
func (f *FS) OpenReader(dir, name string) (types.ReadableFile, error) {
	r, err := f.VFS.OpenReader(dir, name)
	if err != nil {
		return nil, err
	}
	return &reader{ReadableFile: r, fs: f, path: filepath.Join(dir, name)}, nil
}

func (f *FS) track(path string, w types.WritableFile) *file {
	fl := &file{WritableFile: w, fs: f, path: path}
	f.files[path] = fl
	return fl
}

// PowerCut undoes every write not synced, whole or, with torn, sector by
// sector at random (r), and removes the files created since their
// directory's last sync. The files stay open: the store above must be
// closed and opened again, as a restarted process would.
func (f *FS) PowerCut(r *rand.Rand, torn bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for path, fl := range f.files {
		if err := fl.undo(r, torn); err != nil {
			return err
		}
		if f.created[path] && !fl.synced {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	f.created = make(map[string]bool)
	return nil
}

// reader is a segment opened for reading.
type reader struct {
	types.ReadableFile
	fs   *FS
	path string
}

func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	r.fs.mu.Lock()
	fail := r.fs.asks(r.fs.failRead, r.path)
	r.fs.mu.Unlock()
	if fail {
		return 0, ErrInjected
	}
	return r.ReadableFile.ReadAt(p, off)
}

// file is a segment opened for writing, with the writes since its last
// sync.
type file struct {
	types.WritableFile
	fs      *FS
	path    string
	mu      sync.Mutex // guards pending, synced
	pending []undone
	synced  bool // synced at least once
}

// undone is what a write overwrote: old bytes at off, and the file's size
// before (a write past the end grows it).
type undone struct {
	off  int64
	old  []byte
	size int64
}

func (fl *file) ReadAt(p []byte, off int64) (int, error) {
	fl.fs.mu.Lock()
	fail := fl.fs.asks(fl.fs.failRead, fl.path)
	fl.fs.mu.Unlock()
	if fail {
		return 0, ErrInjected
	}
	return fl.WritableFile.ReadAt(p, off)
}

func (fl *file) WriteAt(p []byte, off int64) (int, error) {
	fl.fs.mu.Lock()
	fail := fl.fs.asks(fl.fs.failWrite, fl.path)
	fl.fs.mu.Unlock()
	if fail {
		return 0, ErrInjected
	}
	st, err := os.Stat(fl.path)
	if err != nil {
		return 0, err
	}
	old := make([]byte, len(p))
	n, _ := fl.WritableFile.ReadAt(old, off)
	fl.mu.Lock()
	fl.pending = append(fl.pending, undone{off: off, old: old[:n], size: st.Size()})
	fl.mu.Unlock()
	return fl.WritableFile.WriteAt(p, off)
}

func (fl *file) Sync() error {
	fl.fs.mu.Lock()
	fail := fl.fs.asks(fl.fs.failSync, fl.path)
	fl.fs.mu.Unlock()
	if fail {
		return ErrInjected
	}
	if err := fl.WritableFile.Sync(); err != nil {
		return err
	}
	fl.mu.Lock()
	fl.pending, fl.synced = nil, true
	fl.mu.Unlock()
	fl.fs.mu.Lock()
	delete(fl.fs.created, fl.path) // its first sync syncs its directory (walfs)
	fl.fs.mu.Unlock()
	return nil
}

// undo reverts the writes not synced, last first.
func (fl *file) undo(r *rand.Rand, torn bool) error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	out, err := os.OpenFile(fl.path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer out.Close()
	for i := len(fl.pending) - 1; i >= 0; i-- {
		u := fl.pending[i]
		for s := u.off - u.off%sector; s < u.off+int64(len(u.old)); s += sector {
			if torn && r.IntN(2) == 0 {
				continue // this sector reached the disk
			}
			lo, hi := max(s, u.off), min(s+sector, u.off+int64(len(u.old)))
			if _, err := out.WriteAt(u.old[lo-u.off:hi-u.off], lo); err != nil {
				return err
			}
		}
		if !torn {
			if err := out.Truncate(max(u.size, u.off+int64(len(u.old)))); err != nil {
				return err
			}
		}
	}
	fl.pending = nil
	return out.Sync()
}
