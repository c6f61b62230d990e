package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// openBolt opens (or creates) the raft-boltdb log in path. It keeps bbolt's
// free page list in memory only (rebuilt on open, as etcd does) and as a
// map: syncing it, and merging it as a sorted array, cost a durable member
// a quarter of its write throughput. A file bbolt cannot read whole (a
// damaged page, or a file shorter than its pages, which bbolt would read
// past through its mapping and die) is moved aside and a new one made:
// raft-boltdb keeps no checksum of its pages, so a file with one page
// damaged cannot be repaired in place.
//
// Without repair, a file that cannot be read is an error.
func openBolt(path string, repair bool) (*raftboltdb.BoltStore, []Finding, error) {
	var findings []Finding
	if _, err := os.Stat(path); err == nil {
		if err := guarded(func() error { return checkBolt(path) }); err != nil {
			if !isDamage(err) {
				return nil, nil, err
			}
			if !repair {
				return nil, nil, fmt.Errorf("%w: %w", ErrUnrecoverable, err)
			}
			to, qerr := quarantine(path)
			if qerr != nil {
				return nil, nil, fmt.Errorf("move the damaged Raft log %s aside: %w", path, qerr)
			}
			findings = append(findings, Finding{File: path, Offset: -1, What: "the log cannot be read: " + err.Error(),
				Action: "moved to " + to + "; the log starts again empty"})
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	var store *raftboltdb.BoltStore
	err := guarded(func() error {
		var err error
		store, err = raftboltdb.New(raftboltdb.Options{Path: path,
			BoltOptions: &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, Timeout: timeoutOpen}})
		return err
	})
	return store, findings, err
}
