// Command zkdisk measures what a cluster does when a stopped member's files
// are damaged as a failing disk damages them, on zkraft and on Apache
// ZooKeeper 3.8 side by side: three processes each, the same writes, the
// same fault applied to each system's own files, the member restarted, and
// everything acknowledged read back through every member after a sync.
//
//	go run ./cmd/zkdisk                       # every row, both systems
//	go run ./cmd/zkdisk -rows flip,term -systems zkraft -report /tmp/disk.md
//
// Each row writes -nodes znodes (and sets -late of them again, so that the
// restart replays records past the newest snapshot), kills the victims
// (a follower, the leader, both followers or every member), damages their
// files, keeps writing through the others (measuring the longest pause),
// restarts the victims, waits up to -serve-within for them to serve,
// and checks every acknowledged write on every member: a missing one is
// lost, a value never written is corrupt. ZooKeeper runs from the realzk
// tool (-realzk), which installs Debian's package on first use; its
// snapCount is set to zkraft's.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// fault is a kind of damage to a stopped member's files.
type fault string

const (
	faultFlip         fault = "flip"          // 16 bytes flipped in the data of a record the restart replays
	faultZero         fault = "zero"          // a 4 KiB block zeroed in the middle of the newest log
	faultTruncate     fault = "truncate"      // the newest log cut in the middle
	faultSnapshot     fault = "snapshot"      // the newest snapshot damaged, the log complete
	faultTerm         fault = "term"          // the stored current term damaged
	faultPower        fault = "power"         // the last append lost, as to a power cut before its sync returned
	faultBoltPage     fault = "bolt-page"     // a page of raft-boltdb's file zeroed
	faultBoltTruncate fault = "bolt-truncate" // raft-boltdb's file cut in half
)

// row is one line of the table: a fault, on which members.
type row struct {
	id      string
	what    string // as the table words it
	fault   fault
	victims string // "follower", "leader", "followers" (both), "all"
	bolt    bool   // zkraft on raft-boltdb, ZooKeeper not run
}

var rows = []row{
	{"flip", "16 bytes flipped inside the data of a log record the restart replays (follower)", faultFlip, "follower", false},
	{"flip-leader", "the same on the leader", faultFlip, "leader", false},
	{"flip-2", "the same on both followers", faultFlip, "followers", false},
	{"zero", "a 4 KiB block zeroed in the middle of the newest log segment (follower)", faultZero, "follower", false},
	{"truncate", "the newest log segment cut in the middle (follower)", faultTruncate, "follower", false},
	{"zero-2", "a 4 KiB block zeroed in the middle of the newest log segment, both followers", faultZero, "followers", false},
	{"truncate-2", "the newest log segment cut in the middle, both followers", faultTruncate, "followers", false},
	{"snapshot", "newest snapshot damaged, log complete (follower)", faultSnapshot, "follower", false},
	{"term", "the stored current term damaged (follower)", faultTerm, "follower", false},
	{"power", "power cut: the last append's unsynced bytes lost (follower)", faultPower, "follower", false},
	{"power-all", "power cut on every member at once", faultPower, "all", false},
	{"bolt-page", "raft-boltdb: a page of raft.db zeroed (follower)", faultBoltPage, "follower", true},
	{"bolt-truncate", "raft-boltdb: raft.db cut in half (follower)", faultBoltTruncate, "follower", true},
}

type options struct {
	bin, realzk, dir   string
	nodes, late, snaps int
	serveWithin        time.Duration
	seed               uint64
	log                io.Writer
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkdisk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.bin, "bin", "", "zkraft binary (default: build ./cmd/zkraft)")
	fs.StringVar(&o.realzk, "realzk", "../shared/tools/realzk", "the realzk tool that runs ZooKeeper")
	fs.StringVar(&o.dir, "dir", "", "where the clusters keep their files (default: a temporary dir, removed at the end)")
	fs.IntVar(&o.nodes, "nodes", 2000, "znodes written before the damage")
	fs.IntVar(&o.late, "late", 300, "of them, set again last, so that the restart replays them")
	fs.IntVar(&o.snaps, "snap-count", 1000, "snapCount of both systems")
	fs.DurationVar(&o.serveWithin, "serve-within", 60*time.Second, "how long a restarted member has to serve")
	fs.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "seed of the faults' places")
	which := fs.String("rows", "all", "rows, comma-separated, or all: "+rowIDs())
	systems := fs.String("systems", "zkraft,realzk", "zkraft, realzk or both")
	report := fs.String("report", "", "also write the Markdown table here")
	verbose := fs.Bool("v", false, "log each step")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.log = io.Discard
	if *verbose {
		o.log = stderr
	}
	chosen, err := pickRows(*which)
	if err != nil {
		fmt.Fprintln(stderr, "zkdisk:", err)
		return 2
	}
	if o.dir == "" {
		d, err := os.MkdirTemp("", "zkdisk-")
		if err != nil {
			fmt.Fprintln(stderr, "zkdisk:", err)
			return 1
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.dir, "zkraft")
		if out, err := exec.Command("go", "build", "-o", o.bin, "./cmd/zkraft").CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "zkdisk: build zkraft: %v\n%s", err, out)
			return 1
		}
	}
	fmt.Fprintf(stdout, "zkdisk: %d rows, seed %d, %d znodes (%d set again), snapCount %d\n",
		len(chosen), o.seed, o.nodes, o.late, o.snaps)
	var b strings.Builder
	b.WriteString("| fault in the stopped member's files | zkraft | ZooKeeper 3.8 |\n|---|---|---|\n")
	for n, r := range chosen {
		cells := []string{"", ""}
		for k, sys := range []string{"zkraft", "realzk"} {
			if !strings.Contains(*systems, sys) || (r.bolt && sys == "realzk") {
				cells[k] = "(n/a)"
				if !r.bolt {
					cells[k] = "(not run)"
				}
				continue
			}
			res := measure(o, r, sys, rand.New(rand.NewPCG(o.seed, uint64(n))))
			cells[k] = res.String()
			fmt.Fprintf(stdout, "%s / %s: %s\n", r.id, sys, res.detail())
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.what, cells[0], cells[1])
	}
	fmt.Fprint(stdout, "\n"+b.String())
	if *report != "" {
		if err := os.WriteFile(*report, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(stderr, "zkdisk:", err)
			return 1
		}
	}
	return 0
}

func rowIDs() string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.id)
	}
	return strings.Join(ids, ", ")
}

func pickRows(s string) ([]row, error) {
	if s == "all" {
		return rows, nil
	}
	var out []row
	for id := range strings.SplitSeq(s, ",") {
		i := slices.IndexFunc(rows, func(r row) bool { return r.id == strings.TrimSpace(id) })
		if i < 0 {
			return nil, fmt.Errorf("-rows: unknown row %q (have %s)", id, rowIDs())
		}
		out = append(out, rows[i])
	}
	return out, nil
}
