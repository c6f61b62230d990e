// Command zkload measures ZooKeeper-compatible servers with the same load:
// create, setData and getData, each from several sessions that keep several
// requests in flight, reporting ops/s and latency percentiles per server.
//
//	zkload -embedded                          an in-process zkraft
//	zkload -target zk=127.0.0.1:2181          any server
//	zkload -embedded -target zk=127.0.0.1:12181 -duration 10s
//
// With -suite it runs the scaling suite instead: getChildren, watch
// fan-out, session storms, multi, a read/write mix and lock handoffs, each
// at three sizes, on every target in turn, and writes a Markdown report
// and SVG plots:
//
//	zkload -target zkraft=127.0.0.1:22181 -target zk=127.0.0.1:12181 \
//	    -suite all -runs 3 -report suite.md -plots docs
//
// Given -pid name=PID for a target, the suite also reports that server's
// CPU time per operation in the pipelined scenarios (getChildren, multi,
// mix), read from /proc over the measured time. A -pid is one process, so
// it is refused for a target of several addresses (a cluster).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/integration/loadgen"
	"github.com/zkraft/zkraft/server"
)

// target is a server to measure; pid is its process (-pid), 0 if not given.
type target struct {
	name, addr string
	pid        int
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var targets []target
	fs.Func("target", "name=host:port of a server to measure (repeatable)", func(v string) error {
		name, addr, ok := strings.Cut(v, "=")
		if !ok {
			name, addr = v, v
		}
		targets = append(targets, target{name: name, addr: addr})
		return nil
	})
	embedded := fs.Bool("embedded", false, "also measure an in-process, in-memory zkraft")
	ops := fs.String("ops", "create,setData,getData", "workloads, comma-separated")
	cfg := loadgen.Config{}
	fs.IntVar(&cfg.Sessions, "sessions", 8, "sessions per workload")
	fs.IntVar(&cfg.InFlight, "inflight", 8, "requests each session keeps in flight")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured time per workload")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	fs.IntVar(&cfg.Size, "size", 1024, "data bytes for setData and getData")
	fs.IntVar(&cfg.WritePercent, "write-percent", 10, "share of setData in -ops mix, 0 to 100 (the suite's mix: 10)")
	runs := fs.Int("runs", 1, "repeat every workload this many times and print the median of each column")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (the embedded server included) to this file")
	memprofile := fs.String("memprofile", "", "write a heap profile at the end of the run to this file")
	fill := fs.String("fill", "", "instead of -ops, build PARENTSxCHILDREN znodes (1000x1000: a million) and report memory per znode")
	fillName := fs.Int("fill-name", 16, "characters in each name -fill creates")
	fillData := fs.Int("fill-data", 32, "data bytes in each znode -fill creates")
	suite := fs.String("suite", "", "instead of -ops, run the scaling suite's scenarios: all, or a comma-separated list of "+
		strings.Join(scenarioNames(scenarios(suiteParams{})), ", "))
	sizes := fs.String("sizes", "", "with -suite, other sizes for scenarios: name=1,2,3;name2=4,5")
	report := fs.String("report", "", "with -suite, write the Markdown report to this file (default: standard output)")
	plots := fs.String("plots", "", "with -suite, write an SVG plot per scenario into this directory")
	fanoutRounds := fs.Int("fanout-rounds", 5, "with -suite, changes per fan-out measurement (the median is taken)")
	hold := fs.String("hold", "", "instead of -ops, hold watches=N (one session) or sessions=N and report memory for each")
	pids := map[string]int{}
	fs.Func("pid", "name=PID: the process of -target name (of one address), whose memory -fill and -hold measure (a JVM's live heap through jcmd), "+
		"and whose CPU time per operation -suite reports for getChildren, multi and mix", func(v string) error {
		name, p, _ := strings.Cut(v, "=")
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return fmt.Errorf("want name=PID, PID a process id")
		}
		pids[name] = pid
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.WritePercent < 0 || cfg.WritePercent > 100 {
		fmt.Fprintln(stderr, "zkload: -write-percent must be 0 to 100")
		return 2
	}
	if *embedded { // its address is known once it has started, below
		targets = append([]target{{name: embeddedName}}, targets...)
	}
	if err := checkPids(pids, targets); err != nil {
		fmt.Fprintln(stderr, "zkload:", err)
		return 2
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(stderr, "zkload:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "zkload:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *embedded {
		srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0", MaxClientCnxns: -1})
		if err == nil {
			err = srv.Start()
		}
		if err != nil {
			fmt.Fprintln(stderr, "zkload:", err)
			return 1
		}
		defer srv.Close()
		targets[0].addr = srv.ConnectString()
	}
	if len(targets) == 0 {
		fmt.Fprintln(stderr, "zkload: give -embedded or at least one -target")
		return 2
	}
	if *memprofile != "" {
		defer writeHeapProfile(*memprofile, stderr)
	}
	if *suite != "" {
		cpu := false
		for i, t := range targets {
			targets[i].pid, cpu = pids[t.name], cpu || pids[t.name] != 0
		}
		return runSuiteCommand(*suite, *sizes, *report, *plots, suiteParams{cfg.Duration, cfg.Warmup, *fanoutRounds, cpu},
			targets, *runs, stdout, stderr)
	}
	if *hold != "" {
		return runHolds(*hold, targets, pids, *embedded, *runs, stdout, stderr)
	}
	if *fill != "" {
		return runFills(*fill, *fillName, *fillData, cfg, targets, pids, *embedded, *runs, stdout, stderr)
	}
	line := func(run, name, op string, r row) {
		fmt.Fprintf(stdout, "%-7s %-10s %-8s %s\n", run, name, op, r)
	}
	fmt.Fprintf(stdout, "%-7s %-10s %-8s %9s %9s %9s %9s\n", "run", "server", "op", "ops/s", "p50", "p99", "p99.9")
	all := make(map[[2]string][]row)
	var order [][2]string
	for run := 1; run <= *runs; run++ {
		for _, op := range strings.Split(*ops, ",") {
			for _, t := range targets {
				c := cfg
				c.Addr, c.Op = t.addr, loadgen.Op(op)
				res, err := measure(c)
				if err != nil {
					fmt.Fprintf(stderr, "zkload: %s %s: %v\n", t.name, op, err)
					return 1
				}
				r := rowOf(res)
				key := [2]string{t.name, op}
				if all[key] == nil {
					order = append(order, key)
				}
				all[key] = append(all[key], r)
				line(strconv.Itoa(run), t.name, op, r)
			}
		}
	}
	if *runs > 1 {
		for _, key := range order {
			line("median", key[0], key[1], median(all[key]))
		}
	}
	return 0
}

// embeddedName is the target name of the -embedded server.
const embeddedName = "zkraft"

// checkPids refuses a -pid that names no target, or whose target is a
// cluster (the pid is one member's process, while the load and its
// operations are spread over all of them), and reads each pid's CPU time
// once, so that a wrong pid fails before any load runs.
func checkPids(pids map[string]int, targets []target) error {
	for _, name := range slices.Sorted(maps.Keys(pids)) {
		pid := pids[name]
		i := slices.IndexFunc(targets, func(t target) bool { return t.name == name })
		if i < 0 {
			return fmt.Errorf("-pid %s=%d: no target is named %s", name, pid, name)
		}
		if n := strings.Count(targets[i].addr, ",") + 1; n > 1 {
			return fmt.Errorf("-pid %s=%d: target %s has %d addresses; a -pid is one process, give it for a target of one address",
				name, pid, name, n)
		}
		if _, err := processCPU(pid); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("-pid %s=%d: no such process", name, pid)
		} else if err != nil {
			return fmt.Errorf("-pid %s=%d: %w", name, pid, err)
		}
	}
	return nil
}

// row is one measurement as printed.
type row struct {
	opsPerSec      float64
	p50, p99, p999 time.Duration
}

func rowOf(res *loadgen.Result) row {
	return row{res.OpsPerSec(), res.Percentile(0.5), res.Percentile(0.99), res.Percentile(0.999)}
}

func (r row) String() string {
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	return fmt.Sprintf("%9.0f %9v %9v %9v", r.opsPerSec, us(r.p50), us(r.p99), us(r.p999))
}

// median takes the median of each column separately.
func median(rows []row) row {
	pick := func(f func(row) float64) float64 {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return row{
		opsPerSec: pick(func(r row) float64 { return r.opsPerSec }),
		p50:       time.Duration(pick(func(r row) float64 { return float64(r.p50) })),
		p99:       time.Duration(pick(func(r row) float64 { return float64(r.p99) })),
		p999:      time.Duration(pick(func(r row) float64 { return float64(r.p999) })),
	}
}

// measure runs one workload under a fresh root, removed afterwards.
func measure(c loadgen.Config) (*loadgen.Result, error) {
	root, err := loadgen.NewRoot(c.Addr)
	if err != nil {
		return nil, err
	}
	c.Root = root
	res, err := loadgen.Run(c)
	if rerr := loadgen.RemoveRoot(c.Addr, root); err == nil {
		err = rerr
	}
	return res, err
}

func writeHeapProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(stderr, "zkload:", err)
	}
}

// runSuiteCommand runs the scaling suite and writes its report and plots.
func runSuiteCommand(names, sizes, report, plots string, p suiteParams, targets []target, rounds int,
	stdout, stderr io.Writer) int {
	picked, err := selectScenarios(scenarios(p), names, sizes)
	if err != nil {
		fmt.Fprintln(stderr, "zkload:", err)
		return 2
	}
	res, err := runSuite(picked, targets, rounds, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "zkload:", err)
		return 1
	}
	out := stdout
	if report != "" {
		f, err := os.Create(report)
		if err != nil {
			fmt.Fprintln(stderr, "zkload:", err)
			return 1
		}
		defer f.Close()
		out = f
	}
	plotRef := ""
	if plots != "" {
		if err := os.MkdirAll(plots, 0o755); err != nil {
			fmt.Fprintln(stderr, "zkload:", err)
			return 1
		}
		if err := writePlots(plots, picked, targets, res); err != nil {
			fmt.Fprintln(stderr, "zkload: plots:", err)
			return 1
		}
		plotRef = plots
		if report != "" {
			if rel, err := filepath.Rel(filepath.Dir(report), plots); err == nil {
				plotRef = rel
			}
		}
	}
	writeReport(out, picked, targets, res, rounds, plotRef)
	return 0
}
