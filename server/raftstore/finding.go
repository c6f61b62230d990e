package raftstore

import (
	"errors"
	"log/slog"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"go.etcd.io/bbolt"
)

// A Finding is damage found in a member's files, or in an entry on its
// way, and what the member does about it. A torn write (the end of the
// last append, cut short by a crash before it was on disk and so never
// acknowledged) is not corruption: it is dropped, as every log does.
type Finding struct {
	Torn   bool   // a torn write, not corruption
	File   string // the damaged file, "" if none (an entry received, say)
	Index  uint64 // the log entry, 0 if none
	Offset int64  // where in File, -1 if not known
	What   string // what is wrong
	Action string // what the member does about it
}

// Log logs f once, as the stable event operators alert on: "corruption
// detected" at Error, or "torn write" at Warn.
func (f Finding) Log(log *slog.Logger) {
	attrs := []any{"what", f.What, "action", f.Action}
	if f.File != "" {
		attrs = append(attrs, "file", f.File)
	}
	if f.Index != 0 {
		attrs = append(attrs, "index", f.Index)
	}
	if f.Offset >= 0 {
		attrs = append(attrs, "offset", f.Offset)
	}
	if f.Torn {
		log.Warn("torn write", attrs...)
		return
	}
	log.Error("corruption detected", attrs...)
}

// IsCorrupt reports whether err, from a log store's read, means the data
// read is damaged (or the disk failed to read it), rather than that the
// entry is not there or the store is closed.
func IsCorrupt(err error) bool {
	return err != nil && !errors.Is(err, raft.ErrLogNotFound) && !errors.Is(err, wal.ErrClosed) &&
		!errors.Is(err, bbolt.ErrDatabaseNotOpen)
}
