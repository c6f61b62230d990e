// Command zkchaos runs a long fault campaign against a zkraft cluster of
// separate processes: client sessions read and compare-and-set versioned
// registers, append to a queue with sequential creates, take a lock, own
// ephemerals and watch nodes while a nemesis kills (-9) and restarts
// members, pauses them (SIGSTOP/SIGCONT), restarts them with their data
// wiped, partitions them (the leader alone, a minority, a bridge) and
// delays and breaks the traffic of one member's links, through proxies
// between the members; the registers' history is checked for
// linearizability with porcupine and the other workloads by their own
// checks (integration/chaos).
//
//	go run ./cmd/zkchaos -duration 30m -members 5 -nemesis all
//	go run ./cmd/zkchaos -duration 10m -durable -json
//
// The campaign runs in windows (-window), each on registers of its own, so
// that each window's history is checked alone and a violation is reported
// with the window that shows it; porcupine's HTML view of a violating
// window is written to -html. With -json the last line is one JSON object:
// ops, queue_creates, indeterminate, failed_reads, faults (kind to count), violations,
// windows, seed, members, durable, seconds.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkraft/zkraft/integration/chaos"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type summary struct {
	Ops           int            `json:"ops"`
	QueueCreates  int            `json:"queue_creates"`
	LockHolds     int            `json:"lock_holds"`
	LockFenced    int            `json:"lock_fenced_writes"`
	Ephemerals    int            `json:"ephemeral_sessions"`
	Watches       int            `json:"watches"`
	Indeterminate int            `json:"indeterminate"`
	FailedReads   int            `json:"failed_reads"`
	Damaged       int            `json:"damaged_members"`  // restarted after their files were damaged
	Repaired      int            `json:"repaired_members"` // of them, serving again, repaired, in time
	Faults        map[string]int `json:"faults"`
	Violations    int            `json:"violations"`
	Windows       int            `json:"windows"`
	Seed          uint64         `json:"seed"`
	Members       int            `json:"members"`
	Durable       bool           `json:"durable"`
	LogStore      string         `json:"log_store,omitempty"`
	Seconds       float64        `json:"seconds"`
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("zkchaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", time.Minute, "how long the campaign runs")
	window := fs.Duration("window", 30*time.Second, "length of each checked window")
	members := fs.Int("members", 3, "cluster members")
	durable := fs.Bool("durable", false, "members keep a Raft log and snapshots on disk")
	logStore := fs.String("log-store", "", `durable members' Raft log store: "wal" (the default) or "boltdb"; implies -durable`)
	nemesis := fs.String("nemesis", "all", "faults, comma-separated, or all: "+strings.Join(allFaults(), ", "))
	clients := fs.Int("clients", 5, "client sessions")
	keys := fs.Int("keys", 3, "registers per window")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the nemesis's and the clients' choices")
	bin := fs.String("bin", "", "zkraft binary (default: build ./cmd/zkraft)")
	dir := fs.String("dir", "", "where members keep configs, data and logs (default: a temporary dir, removed unless the campaign failed)")
	htmlPath := fs.String("html", "zkchaos-violation.html", "where porcupine's view of a violating window goes")
	asJSON := fs.Bool("json", false, "end with one JSON line of the figures")
	verbose := fs.Bool("v", false, "log every fault")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	faults, err := parseFaults(*nemesis)
	if err != nil {
		fmt.Fprintln(stderr, "zkchaos:", err)
		return 2
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "zkchaos-")
		if err != nil {
			fmt.Fprintln(stderr, "zkchaos:", err)
			return 1
		}
		keep := false // a failed campaign keeps its members' logs
		defer func() {
			if !keep {
				os.RemoveAll(d)
			}
		}()
		defer func() { keep = code != 0 }()
		*dir = d
	}
	if *bin == "" {
		*bin = filepath.Join(*dir, "zkraft")
		build := exec.Command("go", "build", "-o", *bin, "./cmd/zkraft")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(stderr, "zkchaos: build zkraft (run from the repository, or give -bin):", err)
			return 1
		}
	}
	if *logStore != "" {
		*durable = true
	} else if *durable {
		*logStore = "wal"
	}
	cluster, err := chaos.StartProcesses(*bin, *dir, *members, *logStore)
	if err != nil {
		fmt.Fprintln(stderr, "zkchaos:", err)
		return 1
	}
	defer cluster.Close()
	if supported := chaos.FaultKinds(cluster); faults == nil {
		faults = supported
	} else {
		for _, f := range faults {
			if !slices.Contains(supported, f) {
				fmt.Fprintf(stderr, "zkchaos: fault %s needs members in one process (the test harness: clock steps, dropped client connections); separate processes support %s\n",
					f, strings.Join(supported, ", "))
				return 2
			}
		}
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	}
	fmt.Fprintf(stdout, "zkchaos: %d members (%s) in %s, seed %d, faults %s, %v in windows of %v\n",
		*members, map[bool]string{true: "durable, " + *logStore, false: "in memory"}[*durable], *dir, *seed,
		strings.Join(faults, ","), *duration, *window)
	sum := summary{Faults: map[string]int{}, Seed: *seed, Members: *members, Durable: *durable, LogStore: *logStore}
	start := time.Now()
	for w := 0; ctx.Err() == nil && time.Since(start) < *duration; w++ {
		length := min(*window, *duration-time.Since(start))
		res, err := chaos.Run(ctx, cluster, chaos.Config{Addrs: cluster.Addrs(), Seed: *seed + uint64(w),
			Duration: length, Clients: *clients, Keys: *keys, Faults: faults, Log: logf})
		if err != nil {
			fmt.Fprintln(stderr, "zkchaos:", err)
			fmt.Fprint(stderr, cluster.Describe())
			return 1
		}
		sum.Windows++
		sum.Ops += res.Ops
		sum.QueueCreates += res.QueueCreates
		sum.LockHolds += res.LockHolds
		sum.LockFenced += res.LockFenced
		sum.Ephemerals += res.EphemeralSessions
		sum.Watches += res.WatchesSet
		sum.Indeterminate += res.Indeterminate
		sum.FailedReads += res.Failed
		sum.Damaged += res.Damaged
		sum.Repaired += res.Repaired
		for k, v := range res.Faults {
			sum.Faults[k] += v
		}
		fmt.Fprintf(stdout, "[%v] window %d: %s\n", time.Since(start).Round(time.Second), w+1, res.Summary())
		if !res.Linearizable() {
			sum.Violations++
			path := *htmlPath
			if sum.Violations > 1 {
				path = strings.TrimSuffix(path, ".html") + fmt.Sprintf("-%d.html", sum.Violations)
			}
			if err := res.Visualize(path); err != nil {
				fmt.Fprintln(stderr, "zkchaos: visualization:", err)
			}
			fmt.Fprintf(stdout, "VIOLATION in window %d (%v of history, seed %d): porcupine's view in %s\n",
				w+1, length, res.Seed, path)
		}
		for _, p := range []struct {
			what     string
			problems []string
		}{{"the queue", res.QueueProblems}, {"the lock", res.LockProblems}, {"the ephemerals", res.EphemeralProblems},
			{"the watches", res.WatchProblems}, {"the repairs", res.DamageProblems}} {
			if len(p.problems) > 0 {
				sum.Violations++
				fmt.Fprintf(stdout, "VIOLATION in window %d (seed %d), %s:\n  %s\n", w+1, res.Seed, p.what,
					strings.Join(p.problems[:min(len(p.problems), 10)], "\n  "))
			}
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	var kinds []string
	for k, v := range sum.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(kinds)
	share := 0.0
	if sum.Ops > 0 {
		share = 100 * float64(sum.Indeterminate) / float64(sum.Ops)
	}
	fmt.Fprintf(stdout, "zkchaos: %d operations checked in %d windows over %.0f s, %d indeterminate (%.2f%%), %d failed reads, "+
		"%d sequential creates, %d lock holds (%d fenced writes), %d ephemeral owner sessions, %d watches, "+
		"%d members damaged and restarted (%d repaired); faults: %s; violations: %d\n",
		sum.Ops, sum.Windows, sum.Seconds, sum.Indeterminate, share, sum.FailedReads, sum.QueueCreates,
		sum.LockHolds, sum.LockFenced, sum.Ephemerals, sum.Watches, sum.Damaged, sum.Repaired, strings.Join(kinds, " "), sum.Violations)
	if *asJSON {
		b, _ := json.Marshal(sum)
		fmt.Fprintln(stdout, string(b))
	}
	if sum.Violations > 0 {
		return 3
	}
	return 0
}

// allFaults are the faults a cluster of processes supports.
func allFaults() []string { return chaos.FaultKinds((*chaos.Processes)(nil)) }

// parseFaults reads -nemesis: nil for all the target supports.
func parseFaults(s string) ([]string, error) {
	if s == "all" {
		return nil, nil
	}
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(allFaults(), f) {
			return nil, fmt.Errorf("-nemesis: unknown fault %q (have %s)", f, strings.Join(allFaults(), ", "))
		}
		out = append(out, f)
	}
	return out, nil
}
