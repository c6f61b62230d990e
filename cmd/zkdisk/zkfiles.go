package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ZooKeeper's files, as the harness damages them (version-2 of a data dir):
// transaction logs log.<zxid>, a 16-byte header ("ZKLG", version, dbid)
// then records [checksum int64][length int32][txn][0x42], zeros after the
// last; snapshots snapshot.<zxid>; currentEpoch and acceptedEpoch, a number
// each.

// zkRecord is one transaction in a log file.
type zkRecord struct {
	start, end int64 // the record, checksum to end-of-record byte
	txn        int64 // where the txn (header, then record) starts
	zxid       int64
	typ        int32
	data       [2]int64 // where a create's or setData's data lies, [0,0] if none
}

// zkFiles lists dir's files named prefix.<hex zxid>, by zxid.
func zkFiles(dir, prefix string) ([]string, []int64) {
	paths, _ := filepath.Glob(filepath.Join(dir, prefix+".*"))
	type f struct {
		path string
		zxid int64
	}
	var fs []f
	for _, p := range paths {
		z, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(p), prefix+"."), 16, 64)
		if err == nil {
			fs = append(fs, f{p, z})
		}
	}
	sort.Slice(fs, func(a, b int) bool { return fs[a].zxid < fs[b].zxid })
	var names []string
	var zxids []int64
	for _, x := range fs {
		names, zxids = append(names, x.path), append(zxids, x.zxid)
	}
	return names, zxids
}

// zkRecords reads the records of a transaction log's contents.
func zkRecords(b []byte) []zkRecord {
	var out []zkRecord
	be := binary.BigEndian
	for pos := int64(16); pos+13 <= int64(len(b)); {
		n := int64(int32(be.Uint32(b[pos+8:])))
		if n <= 0 || pos+12+n+1 > int64(len(b)) || b[pos+12+n] != 0x42 {
			return out
		}
		r := zkRecord{start: pos, end: pos + 12 + n + 1, txn: pos + 12}
		if n >= 32 {
			h := b[r.txn:]
			r.zxid, r.typ = int64(be.Uint64(h[12:])), int32(be.Uint32(h[28:]))
			switch r.typ {
			case 1, 5, 15, 19, 21: // create, setData, create2, createContainer, createTTL
				at := r.txn + 32
				if pl := int64(int32(be.Uint32(b[at:]))); pl >= 0 && at+4+pl+4 <= r.end {
					at += 4 + pl
					if dl := int64(int32(be.Uint32(b[at:]))); dl > 0 && at+4+dl <= r.end {
						r.data = [2]int64{at + 4, at + 4 + dl}
					}
				}
			}
		}
		out = append(out, r)
		pos = r.end
	}
	return out
}

var errZKNothing = errors.New("zkdisk: ZooKeeper's files hold nothing to damage")

// damageZK damages the ZooKeeper files in dir (a member's version-2).
func damageZK(dir string, f fault, r *rand.Rand) (string, error) {
	logs, _ := zkFiles(dir, "log")
	snaps, snapZxids := zkFiles(dir, "snapshot")
	switch f {
	case faultFlip:
		var newest int64 = -1
		if len(snapZxids) > 0 {
			newest = snapZxids[len(snapZxids)-1]
		}
		type at struct {
			file string
			r    zkRecord
		}
		var candidates []at
		for _, l := range logs {
			b, err := os.ReadFile(l)
			if err != nil {
				return "", err
			}
			for _, rec := range zkRecords(b) {
				if rec.zxid > newest && rec.data[1]-rec.data[0] >= 16 {
					candidates = append(candidates, at{l, rec})
				}
			}
		}
		if len(candidates) == 0 {
			return "", errZKNothing
		}
		c := candidates[r.IntN(len(candidates))]
		off := c.r.data[0] + r.Int64N(c.r.data[1]-c.r.data[0]-15)
		return fmt.Sprintf("flipped 16 bytes of the data of txn 0x%x at offset %d of %s", c.r.zxid, off, c.file),
			editFile(c.file, func(b []byte) []byte { flipBytes(b[off : off+16]); return b })
	case faultZero, faultTruncate, faultPower:
		if len(logs) == 0 {
			return "", errZKNothing
		}
		newest := logs[len(logs)-1]
		b, err := os.ReadFile(newest)
		if err != nil {
			return "", err
		}
		recs := zkRecords(b)
		if len(recs) < 8 {
			return "", errZKNothing
		}
		end := recs[len(recs)-1].end
		var what string
		switch f {
		case faultZero:
			last := recs[len(recs)-1].start &^ 4095
			at := (last/4 + r.Int64N(max(1, last*3/4-4096))) &^ 4095
			clear(b[at : at+4096])
			what = fmt.Sprintf("zeroed 4 KiB at offset %d of %s (its log ends at %d)", at, newest, end)
		case faultTruncate:
			at := end/4 + r.Int64N(end/2)
			b = b[:at]
			what = fmt.Sprintf("cut %s at offset %d (its log ended at %d)", newest, at, end)
		case faultPower:
			last := recs[len(recs)-1]
			clear(b[last.start:last.end])
			what = fmt.Sprintf("lost the last transaction's bytes, offsets %d to %d of %s", last.start, last.end, newest)
		}
		return what, os.WriteFile(newest, b, 0o644)
	case faultSnapshot:
		if len(snaps) == 0 {
			return "", errZKNothing
		}
		newest := snaps[len(snaps)-1]
		var at int
		err := editFile(newest, func(b []byte) []byte {
			at = len(b) / 2
			if at+16 <= len(b) {
				flipBytes(b[at : at+16])
			}
			return b
		})
		return fmt.Sprintf("flipped 16 bytes at offset %d of %s", at, newest), err
	case faultTerm:
		path := filepath.Join(dir, "currentEpoch")
		return "damaged " + path, editFile(path, func(b []byte) []byte { flipBytes(b); return b })
	}
	return "", fmt.Errorf("zkdisk: ZooKeeper has no fault %s", f)
}

func editFile(path string, f func([]byte) []byte) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, f(b), 0o644)
}

func flipBytes(b []byte) {
	for i := range b {
		b[i] ^= 0x5a
	}
}
