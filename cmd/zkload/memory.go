package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/integration/loadgen"
)

// memory is what a server process holds: its resident set, and its live
// heap after a full collection where zkload can tell it (the in-process
// zkraft; a JVM through jcmd); heap is -1 otherwise.
type memory struct {
	rss, heap int64
}

// prober measures one target's memory.
type prober func() (memory, error)

// selfProbe measures this process, which runs the embedded server: the
// heap after runtime.GC, and the resident set as it is (the collector
// keeps what it took).
func selfProbe() (memory, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := residentSet("self")
	return memory{rss: rss, heap: int64(ms.HeapAlloc)}, err
}

// pidProbe measures another process. A JVM (ZooKeeper) is asked for a full
// collection and its heap usage with jcmd, which comes with the JDK.
func pidProbe(pid int) prober {
	return func() (memory, error) {
		m := memory{heap: -1}
		if isJVM(pid) {
			heap, err := jvmLiveHeap(pid)
			if err != nil {
				return m, err
			}
			m.heap = heap
		}
		rss, err := residentSet(strconv.Itoa(pid))
		m.rss = rss
		return m, err
	}
}

// residentSet reads VmRSS from /proc/<pid>/status, in bytes.
func residentSet(pid string) (int64, error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%s/status", pid)
}

func isJVM(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.HasSuffix(exe, "/java")
}

// usedHeap matches the heap line of jcmd GC.heap_info, for G1 and the
// other collectors alike: "... total 262144K, used 123456K [...".
var usedHeap = regexp.MustCompile(`(?m)^\s*\S.*heap\s+total \d+K, used (\d+)K`)

// jvmLiveHeap runs a full collection in the JVM and returns the heap it
// then uses.
func jvmLiveHeap(pid int) (int64, error) {
	p := strconv.Itoa(pid)
	if out, err := exec.Command("jcmd", p, "GC.run").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("jcmd %s GC.run: %v: %s", p, err, out)
	}
	out, err := exec.Command("jcmd", p, "GC.heap_info").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("jcmd %s GC.heap_info: %v: %s", p, err, out)
	}
	m := usedHeap.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("jcmd %s GC.heap_info: no heap usage in %q", p, bytes.TrimSpace(out))
	}
	kb, err := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10, err
}

// fillResult is one target's memory figures for a fill.
type fillResult struct {
	nodes         int
	took          time.Duration
	before, after memory
	rssPerNode    float64
	heapPerNode   float64 // -1 when the heap is not known
	createsPerSec float64
}

// runFill builds the fill under a fresh root and measures the server
// process's memory before and after. The root is left in place: a fill is
// measured on a server started for it.
func runFill(f loadgen.Fill, probe prober) (fillResult, error) {
	root, err := loadgen.NewRoot(f.Addr)
	if err != nil {
		return fillResult{}, err
	}
	f.Root = root
	before, err := probe()
	if err != nil {
		return fillResult{}, err
	}
	took, err := f.Run()
	if err != nil {
		return fillResult{}, err
	}
	after, err := probe()
	if err != nil {
		return fillResult{}, err
	}
	n := f.Nodes()
	r := fillResult{nodes: n, took: took, before: before, after: after,
		rssPerNode: float64(after.rss-before.rss) / float64(n), heapPerNode: -1,
		createsPerSec: float64(n) / took.Seconds()}
	if before.heap >= 0 && after.heap >= 0 {
		r.heapPerNode = float64(after.heap-before.heap) / float64(n)
	}
	return r, nil
}

func printFillHeader(w io.Writer) {
	fmt.Fprintf(w, "%-10s %9s %10s %10s %12s %12s %11s %11s\n", "server", "znodes", "fill", "creates/s",
		"rss before", "rss after", "rss/znode", "heap/znode")
}

func printFill(w io.Writer, name string, r fillResult) {
	heap := "-"
	if r.heapPerNode >= 0 {
		heap = fmt.Sprintf("%.0f B", r.heapPerNode)
	}
	fmt.Fprintf(w, "%-10s %9d %10v %10.0f %10.1f MB %10.1f MB %9.0f B %11s\n", name, r.nodes,
		r.took.Round(time.Millisecond), r.createsPerSec, float64(r.before.rss)/(1<<20),
		float64(r.after.rss)/(1<<20), r.rssPerNode, heap)
}

// runFills measures -fill on every target, runs times each (each run adds
// another fill to the same server).
func runFills(spec string, nameLen, dataLen int, cfg loadgen.Config, targets []target, pids map[string]int,
	embedded bool, runs int, stdout, stderr io.Writer) int {
	p, c, ok := strings.Cut(spec, "x")
	parents, err1 := strconv.Atoi(p)
	children, err2 := strconv.Atoi(c)
	if !ok || err1 != nil || err2 != nil || parents < 1 || children < 0 {
		fmt.Fprintf(stderr, "zkload: -fill %q: want PARENTSxCHILDREN, as 1000x1000\n", spec)
		return 2
	}
	probes, ok := probesFor("-fill", targets, pids, embedded, stderr)
	if !ok {
		return 2
	}
	printFillHeader(stdout)
	for range runs {
		for i, t := range targets {
			f := loadgen.Fill{Addr: t.addr, Parents: parents, Children: children, NameLen: nameLen,
				DataLen: dataLen, Sessions: cfg.Sessions, InFlight: cfg.InFlight}
			r, err := runFill(f, probes[i])
			if err != nil {
				fmt.Fprintf(stderr, "zkload: %s fill: %v\n", t.name, err)
				return 1
			}
			printFill(stdout, t.name, r)
		}
	}
	return 0
}

// probesFor returns each target's memory probe: its -pid, or this process
// for the embedded server.
func probesFor(flag string, targets []target, pids map[string]int, embedded bool, stderr io.Writer) ([]prober, bool) {
	probes := make([]prober, len(targets))
	for i, t := range targets {
		switch pid, ok := pids[t.name]; {
		case ok:
			probes[i] = pidProbe(pid)
		case embedded && i == 0:
			probes[i] = selfProbe
		default:
			fmt.Fprintf(stderr, "zkload: %s needs -pid %s=PID to measure %s\n", flag, t.name, t.name)
			return nil, false
		}
	}
	return probes, true
}

// runHolds measures what a server holds for each watch or session
// (-hold watches=N or sessions=N): its memory before, with the N held, and
// the difference divided by N.
func runHolds(spec string, targets []target, pids map[string]int, embedded bool, runs int, stdout, stderr io.Writer) int {
	kind, count, _ := strings.Cut(spec, "=")
	n, err := strconv.Atoi(count)
	if (kind != "watches" && kind != "sessions") || err != nil || n < 1 {
		fmt.Fprintf(stderr, "zkload: -hold %q: want watches=N or sessions=N\n", spec)
		return 2
	}
	probes, ok := probesFor("-hold", targets, pids, embedded, stderr)
	if !ok {
		return 2
	}
	fmt.Fprintf(stdout, "%-10s %9s %12s %12s %11s %11s\n", "server", kind, "rss before", "rss after", "rss/each", "heap/each")
	for range runs {
		for i, t := range targets {
			root, err := loadgen.NewRoot(t.addr)
			if err != nil {
				fmt.Fprintln(stderr, "zkload:", err)
				return 1
			}
			before, err := probes[i]()
			var release func()
			if err == nil && kind == "watches" {
				release, err = loadgen.HoldWatches(t.addr, root, n)
			} else if err == nil {
				release, err = loadgen.HoldSessions(t.addr, n)
			}
			var after memory
			if err == nil {
				after, err = probes[i]()
				release()
			}
			if err == nil {
				err = loadgen.RemoveRoot(t.addr, root)
			}
			if err != nil {
				fmt.Fprintf(stderr, "zkload: %s -hold %s: %v\n", t.name, spec, err)
				return 1
			}
			heap := "-"
			if before.heap >= 0 && after.heap >= 0 {
				heap = fmt.Sprintf("%.0f B", float64(after.heap-before.heap)/float64(n))
			}
			fmt.Fprintf(stdout, "%-10s %9d %10.1f MB %10.1f MB %9.0f B %11s\n", t.name, n, float64(before.rss)/(1<<20),
				float64(after.rss)/(1<<20), float64(after.rss-before.rss)/float64(n), heap)
		}
	}
	return 0
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go runs on).
const userHZ = 100

// processCPU returns the CPU time, user and system, the process pid has
// used so far: /proc/<pid>/stat's utime and stime.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	ticks, err := statTicks(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// statTicks returns utime plus stime, in clock ticks, from the text of a
// /proc/<pid>/stat.
func statTicks(b []byte) (int64, error) {
	// The command name, second, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 13 {
		return 0, errors.New("too few fields")
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: the stat's 14th and 15th fields
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return ticks, nil
}
