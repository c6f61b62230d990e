package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/integration/loadgen"
)

// A scenario is one curve of the suite: a workload measured at several
// sizes, each measurement giving a few named metrics.
type scenario struct {
	name  string // as -suite and -sizes name it
	title string // what is measured, for the report
	size  string // what the size counts
	sizes []int
	// grows is how the headline metric's cost (the time per operation for
	// a rate, the time itself otherwise) would grow with the size if the
	// server did the least work it must: 0 flat, 1 in proportion.
	grows   float64
	metrics []metric
	run     func(t target, size int) (map[string]float64, error)
}

// metric is one figure a scenario reports; the first of a scenario is its
// headline, the one plotted. The report says how the headline grew with
// the size, and the server's CPU time per operation where it was measured.
type metric struct {
	name   string
	higher bool // more is better (a rate); otherwise a time, less is better
}

// format formats a measured value.
func (m metric) format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// suiteParams are the settings the suite's scenarios share.
type suiteParams struct {
	duration, warmup time.Duration
	rounds           int  // fan-out rounds per measurement
	cpu              bool // some target has a -pid: the pipelined scenarios report its CPU
}

// cpuMetric is a pipelined scenario's server CPU time per operation (per
// sub-op for multi, as its ops/s counts them), measured for the targets
// given a -pid: a cost that does not depend on whether the server was busy
// all the time (a rate alone does not say).
const cpuMetric = "server µs/op"

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// scenarios returns the suite, in the order it runs.
func scenarios(p suiteParams) []scenario {
	// pipelined runs a loadgen workload under a fresh root and reports its
	// rate and latencies, and, given a pid, the server's CPU time per
	// operation over the measured time; for both, a request counts as per
	// operations (a multi as its sub-ops).
	pipelined := func(cfg loadgen.Config, pid int, per float64) (map[string]float64, error) {
		cfg.Duration, cfg.Warmup = p.duration, p.warmup
		var cpu time.Duration
		var cpuErr error
		measured := false // the window ended: cpu is its CPU time
		if pid != 0 {
			cfg.Window = func() func() {
				before, err := processCPU(pid)
				return func() {
					after, err2 := processCPU(pid)
					cpu, cpuErr, measured = after-before, errors.Join(err, err2), true
				}
			}
		}
		res, err := measure(cfg)
		if err == nil {
			err = cpuErr
		}
		if err != nil {
			return nil, err
		}
		m := map[string]float64{
			"ops/s":  res.OpsPerSec() * per,
			"p50 ms": ms(res.Percentile(0.5)),
			"p99 ms": ms(res.Percentile(0.99)),
		}
		if measured && res.Ops > 0 {
			m[cpuMetric] = float64(cpu.Microseconds()) / (float64(res.Ops) * per)
		}
		return m, nil
	}
	rate := []metric{{"ops/s", true}, {"p50 ms", false}, {"p99 ms", false}}
	if p.cpu { // no column of dashes when no target has a -pid
		rate = append(rate, metric{cpuMetric, false})
	}
	return []scenario{{
		name: "getChildren", grows: 1, title: "getChildren of one node, 4 sessions x 4 in flight", size: "children",
		sizes: []int{1000, 10000, 100000}, metrics: rate,
		run: func(t target, n int) (map[string]float64, error) {
			return pipelined(loadgen.Config{Addr: t.addr, Op: loadgen.OpGetChildren, Sessions: 4, InFlight: 4, Children: n}, t.pid, 1)
		},
	}, {
		name: "fanout", grows: 1, title: "one setData notifying every session watching the node; time from the setData to the notifications",
		size: "watching sessions", sizes: []int{1000, 5000, 10000},
		metrics: []metric{{"last ms", false}, {"first ms", false}, {"median ms", false}},
		run: underRoot(func(addr, root string, n int) (map[string]float64, error) {
			rounds, err := loadgen.FanOut{Addr: addr, Root: root, Watchers: n, Rounds: p.rounds}.Run()
			if err != nil {
				return nil, err
			}
			med := func(f func(loadgen.Delays) time.Duration) float64 {
				v := make([]float64, len(rounds))
				for i, d := range rounds {
					v[i] = ms(f(d))
				}
				return medianOf(v)
			}
			return map[string]float64{
				"first ms":  med(loadgen.Delays.First),
				"median ms": med(loadgen.Delays.Median),
				"last ms":   med(loadgen.Delays.Last),
			}, nil
		}),
	}, {
		name: "storm", grows: 0, title: "sessions connecting at once (64 dialing), then 1000 more sessions owning an ephemeral each expire " +
			"(4 s timeout, connections cut) while those stay; time from the cut to the watcher's last notification, past the timeout",
		size: "sessions", sizes: []int{1000, 5000, 10000},
		metrics: []metric{{"connects/s", true}, {"expiry past timeout ms", false}, {"first to last ms", false}},
		run: underRoot(func(addr, root string, n int) (map[string]float64, error) {
			res, err := loadgen.Storm{Addr: addr, Root: root, Sessions: n, Expiring: 1000, Timeout: 4 * time.Second}.Run()
			if err != nil {
				return nil, err
			}
			return map[string]float64{
				"connects/s":             res.ConnectsPerSec(n),
				"expiry past timeout ms": ms(res.LastGone - res.Granted),
				"first to last ms":       ms(res.LastGone - res.FirstGone),
			}, nil
		}),
	}, {
		name: "multi", grows: 0, title: "multi of N setData (32 bytes) on the session's own nodes, 8 sessions x 8 in flight; ops/s counts sub-ops",
		size: "ops per multi", sizes: []int{3, 10, 100}, metrics: rate,
		run: func(t target, n int) (map[string]float64, error) {
			return pipelined(loadgen.Config{Addr: t.addr, Op: loadgen.OpMulti, Sessions: 8, InFlight: 8, MultiOps: n}, t.pid, float64(n))
		},
	}, {
		name: "mix", grows: 0, title: "90% getData, 10% setData of 1 KiB on each session's node, 8 in flight per session",
		size: "sessions", sizes: []int{8, 64, 512}, metrics: rate,
		run: func(t target, n int) (map[string]float64, error) {
			return pipelined(loadgen.Config{Addr: t.addr, Op: loadgen.OpMix, Sessions: n, InFlight: 8, Size: 1024, WritePercent: 10}, t.pid, 1)
		},
	}, {
		name: "locks", grows: 0, title: "lockrecipe.Mutex handoffs, each contender its own go-zookeeper session looping on Lock and Unlock",
		size: "contenders", sizes: []int{1, 10, 100},
		metrics: []metric{{"handoffs/s", true}, {"wait p50 ms", false}, {"wait p99 ms", false}},
		run: underRoot(func(addr, root string, n int) (map[string]float64, error) {
			res, err := loadgen.Handoffs{Addr: addr, Root: root, Contenders: n, Duration: p.duration, Warmup: p.warmup}.Run()
			if err != nil {
				return nil, err
			}
			q := func(f float64) float64 { return ms(res.Waits[min(int(f*float64(len(res.Waits))), len(res.Waits)-1)]) }
			if len(res.Waits) == 0 {
				return nil, fmt.Errorf("no handoff in %v", p.duration)
			}
			return map[string]float64{"handoffs/s": res.PerSec(), "wait p50 ms": q(0.5), "wait p99 ms": q(0.99)}, nil
		}),
	}}
}

// selectScenarios picks the suite's scenarios by name ("all" for every
// one) and applies size overrides ("name=1,2,3;name2=4,5").
func selectScenarios(all []scenario, names, sizes string) ([]scenario, error) {
	var picked []scenario
	for _, name := range strings.Split(names, ",") {
		i := slices.IndexFunc(all, func(s scenario) bool { return s.name == name })
		switch {
		case name == "all":
			picked = append(picked, all...)
		case i < 0:
			return nil, fmt.Errorf("no scenario %q (have all, %s)", name, strings.Join(scenarioNames(all), ", "))
		default:
			picked = append(picked, all[i])
		}
	}
	if sizes == "" {
		return picked, nil
	}
	for _, spec := range strings.Split(sizes, ";") {
		name, list, _ := strings.Cut(spec, "=")
		i := slices.IndexFunc(picked, func(s scenario) bool { return s.name == name })
		if i < 0 {
			return nil, fmt.Errorf("-sizes: %q is not a selected scenario", name)
		}
		picked[i].sizes = nil
		for _, v := range strings.Split(list, ",") {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-sizes: bad size %q for %s", v, name)
			}
			picked[i].sizes = append(picked[i].sizes, n)
		}
	}
	return picked, nil
}

func scenarioNames(all []scenario) []string {
	var names []string
	for _, s := range all {
		names = append(names, s.name)
	}
	return names
}

// results holds every measurement: by scenario, size index and target,
// one map of metrics per round.
type results map[string][][][]map[string]float64

// runSuite measures every scenario at every size on every target, rounds
// times, the targets' order rotating from round to round so that none is
// always measured first, and reports progress to progress.
func runSuite(picked []scenario, targets []target, rounds int, progress io.Writer) (results, error) {
	res := results{}
	total, done := 0, 0
	for _, sc := range picked {
		total += len(sc.sizes) * len(targets) * rounds
		res[sc.name] = make([][][]map[string]float64, len(sc.sizes))
		for i := range sc.sizes {
			res[sc.name][i] = make([][]map[string]float64, len(targets))
		}
	}
	start := time.Now()
	for r := range rounds {
		for _, sc := range picked {
			for si, size := range sc.sizes {
				for k := range targets {
					ti := (k + r) % len(targets)
					t := targets[ti]
					m, err := sc.run(t, size)
					if err != nil {
						return nil, fmt.Errorf("%s %d on %s: %w", sc.name, size, t.name, err)
					}
					res[sc.name][si][ti] = append(res[sc.name][si][ti], m)
					done++
					fmt.Fprintf(progress, "[%d/%d %s] round %d/%d %s %d %s:", done, total,
						time.Since(start).Round(time.Second), r+1, rounds, sc.name, size, t.name)
					for _, mt := range sc.metrics {
						if v, ok := m[mt.name]; ok {
							fmt.Fprintf(progress, " %s %s", mt.name, mt.format(v))
						}
					}
					fmt.Fprintln(progress)
				}
			}
		}
	}
	return res, nil
}

// median returns the median over rounds of one metric; ok is false if no
// round measured it (a metric some targets lack).
func (r results) median(sc, metric string, size, target int) (med float64, ok bool) {
	var v []float64
	for _, m := range r[sc][size][target] {
		if x, ok := m[metric]; ok {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	return medianOf(v), true
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// underRoot makes a scenario's run that works under a fresh root, removed
// afterwards.
func underRoot(run func(addr, root string, size int) (map[string]float64, error)) func(target, int) (map[string]float64, error) {
	return func(t target, size int) (map[string]float64, error) {
		addr := t.addr
		root, err := loadgen.NewRoot(addr)
		if err != nil {
			return nil, err
		}
		m, err := run(addr, root, size)
		if rerr := loadgen.RemoveRoot(addr, root); err == nil && rerr != nil {
			err = rerr
		}
		return m, err
	}
}
