package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"go.etcd.io/bbolt"

	"github.com/zkraft/zkraft/server/raftstore/walfs"
)

// ErrDamaged wraps what a store's code did when it read a damaged file:
// a panic, or a memory fault on a mapped file shorter than it claims.
var ErrDamaged = errors.New("raftstore: damaged file")

// DamagedDir names the directory, beside a damaged file, that it is moved
// into: kept for an operator to look at, never read again.
const DamagedDir = "damaged"

// timeoutOpen bounds the wait for a bbolt file's lock.
const timeoutOpen = 5 * time.Second

// guarded runs f on a goroutine of its own, on which a memory fault (a
// mapped file read past its end, as bbolt does with a truncated file)
// panics instead of killing the process, and returns a panic as an error
// wrapping ErrDamaged.
func guarded(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				errc <- fmt.Errorf("%w: %v", ErrDamaged, r)
			}
		}()
		errc <- f()
	}()
	return <-errc
}

// quarantine moves the file or directory path into DamagedDir beside it,
// under its name and the time, and returns where it went.
func quarantine(path string) (string, error) {
	return quarantineInto(path, filepath.Join(filepath.Dir(path), DamagedDir))
}

// quarantineInto moves path into dir, under its name and the time, and
// returns where it went.
func quarantineInto(path, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	to := filepath.Join(dir, filepath.Base(path)+"."+time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(path, to); err != nil {
		return "", err
	}
	return to, walfs.SyncDir(filepath.Dir(path))
}

// isDamage reports whether err, from opening a store, says that what was
// read is damaged, rather than that it could not be got at (a lock held, a
// permission, a full disk, too many files), which moving it aside would not
// cure.
func isDamage(err error) bool {
	for _, env := range []error{bbolt.ErrTimeout, fs.ErrPermission, syscall.EACCES, syscall.ENOSPC, syscall.EMFILE,
		syscall.ENFILE, syscall.EROFS, syscall.EAGAIN, syscall.ENOMEM} {
		if errors.Is(err, env) {
			return false
		}
	}
	return true
}
