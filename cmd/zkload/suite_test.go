package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestSuite runs every scenario of the suite, small, against a server
// under two names (as a comparison of two servers would), and checks the
// report: a table per scenario with a row per size and ratio columns, the
// growth line, and a readable SVG plot for each.
func TestSuite(t *testing.T) {
	// Its short tick makes the storm's sessions expire in 2 s rather than 4.
	addr := servertest.NewServer(t).ConnectString()
	dir := t.TempDir()
	report := filepath.Join(dir, "suite.md")
	var stdout, stderr bytes.Buffer
	// a's server CPU is this process's (the test's server is in it); b, on the same address, has no -pid.
	code := run([]string{"-target", "a=" + addr, "-target", "b=" + addr, "-pid", "a=" + strconv.Itoa(os.Getpid()),
		"-suite", "all", "-runs", "1", "-duration", "200ms", "-warmup", "50ms",
		"-fanout-rounds", "2", "-sizes", "getChildren=5,50;fanout=5,20;storm=10;multi=3,10;mix=2,4;locks=1,2",
		"-report", report, "-plots", filepath.Join(dir, "plots")}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	md, err := os.ReadFile(report)
	require.NoError(t, err)
	text := string(md)
	for _, sc := range scenarios(suiteParams{}) {
		assert.Contains(t, text, "**"+sc.name+"**", sc.name)
		assert.Contains(t, text, "](plots/suite-"+sc.name+".svg)", sc.name)
		svg, err := os.ReadFile(filepath.Join(dir, "plots", "suite-"+sc.name+".svg"))
		require.NoError(t, err)
		assert.Contains(t, string(svg), "<svg", sc.name)
	}
	assert.Contains(t, text, "| ops/s a | ops/s b | × b |", "a ratio column")
	assert.Regexp(t, `\n\| 50 \| \d+ \| \d+ \| \d+\.\d× \|`, text, "a row per size")
	assert.Contains(t, text, "From 5 to 50 children (×10), cost per operation grew: a ×")
	assert.Regexp(t, `\| server µs/op a \| server µs/op b \| × b \|`, text)
	// 8.79, 87.9 or, under the race detector, 112 (metric.format).
	assert.Regexp(t, `\n\| 4 \|( [^|]+ \|){9} \d+(\.\d+)? \| - \| - \|`, text, "the mix's CPU: a's, none for b")
	assert.Regexp(t, `From 2 to 4 sessions \(×2\), server µs/op grew: a ×\d`, text, "the mix's CPU growth")
	// Progress: one line per measurement, counted.
	assert.Equal(t, 22, strings.Count(stderr.String(), "\n"), stderr.String())
	assert.Contains(t, stderr.String(), "[22/22 ")
}

// -write-percent sets the share of setData in -ops mix: every write moves
// the server's zxid on, reads do not, so a run of writes only moves it by
// many more than a run of reads only, which moves it only by its setup's
// few writes (sessions, the run's nodes).
func TestMixWritePercent(t *testing.T) {
	srv := servertest.NewServer(t)
	writes := func(percent string) int64 {
		t.Helper()
		before := srv.FSM().LastZxid()
		var stdout, stderr bytes.Buffer
		code := run([]string{"-target", "a=" + srv.ConnectString(), "-ops", "mix", "-write-percent", percent,
			"-sessions", "1", "-duration", "200ms", "-warmup", "0s"}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		return srv.FSM().LastZxid() - before
	}
	setup := writes("0")
	assert.Less(t, setup, int64(20), "reads only: the setup's writes")
	assert.Greater(t, writes("100"), setup+50, "writes only")

	var stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"-embedded", "-ops", "mix", "-write-percent", "101"}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "-write-percent must be 0 to 100")
}

// The server CPU column holds "-" for a target measured without a -pid,
// and the CPU growth line names only the targets that have it.
func TestReport_CPUWhereMeasured(t *testing.T) {
	sc := scenario{name: "mix", title: "t", size: "sessions", sizes: []int{8, 64},
		metrics: []metric{{"ops/s", true}, {cpuMetric, false}}}
	targets := []target{{name: "a", addr: "x:1"}, {name: "b", addr: "x:2"}}
	res := results{"mix": {
		{{{"ops/s": 100, cpuMetric: 5}}, {{"ops/s": 50}}},
		{{{"ops/s": 80, cpuMetric: 6}}, {{"ops/s": 40}}},
	}}
	var b strings.Builder
	writeReport(&b, []scenario{sc}, targets, res, 1, "")
	text := b.String()
	assert.Contains(t, text, "| 8 | 100 | 50.0 | 2.0× | 5.00 | - | - |")
	assert.Contains(t, text, "| 64 | 80.0 | 40.0 | 2.0× | 6.00 | - | - |")
	assert.Contains(t, text, "server µs/op grew: a ×1.20 (flat); the least")
	assert.Contains(t, text, "cost per operation grew: a ×1.25 (flat), b ×1.25 (flat)")
}

// A -pid is checked before any load runs: its name must be a target's, of
// one address, and its process must exist. The targets' address has no
// server, so a check that let a case through would fail later, with 1.
func TestRun_PidChecks(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no such target", []string{"-target", "a=127.0.0.1:1", "-pid", "b=" + self}, "-pid b=" + self + ": no target is named b"},
		{"a cluster", []string{"-target", "c=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "-pid", "c=" + self},
			"target c has 3 addresses; a -pid is one process"},
		{"no such process", []string{"-target", "a=127.0.0.1:1", "-pid", "a=1073741824"}, "-pid a=1073741824: no such process"},
		{"not a number", []string{"-target", "a=127.0.0.1:1", "-pid", "a=x"}, "want name=PID"},
		{"zero", []string{"-target", "a=127.0.0.1:1", "-pid", "a=0"}, "want name=PID"},
		{"no name", []string{"-target", "a=127.0.0.1:1", "-pid", self}, "want name=PID"},
		// The embedded server's name is a target's: the run goes on, to the unknown scenario.
		{"embedded", []string{"-embedded", "-pid", "zkraft=" + self}, `no scenario "nosuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(append(tc.args, "-suite", "nosuch", "-duration", "1ms", "-warmup", "0s"), io.Discard, &stderr)
			assert.Equal(t, 2, code, stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

// statTicks adds utime and stime, the 14th and 15th fields, after a
// command name that may hold spaces and parentheses.
func TestStatTicks(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       int64
		err        string
	}{
		{"plain", "42 (zkraft) S 1 42 42 0 -1 4194560 900 0 0 0 700 53 0 0 20 0 9 0", 753, ""},
		{"spaces and parentheses", "42 (a) b (c)) S 1 42 42 0 -1 4194560 900 0 0 0 7 5 0 0", 12, ""},
		{"no command name", "42 zkraft S 1 42 42 0 -1 4194560 900 0 0 0 7 5 0 0", 0, "no command name"},
		{"too few fields", "42 (zkraft) S 1 42 42 0 -1 4194560 900 0 0 0 7", 0, "too few fields"},
		{"not a number", "42 (zkraft) S 1 42 42 0 -1 4194560 900 0 0 0 7 x 0 0", 0, "invalid syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statTicks([]byte(tc.stat))
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	// And this process's, read through processCPU.
	_, err := processCPU(os.Getpid())
	assert.NoError(t, err)
}

// A median is missing only where no round measured the metric: a real
// negative value is a value, formatted as such.
func TestResultsMedian(t *testing.T) {
	res := results{"s": {{{{"x": -1}, {"x": -3}, {"x": -2}}, {{"y": 1}}}}}
	v, ok := res.median("s", "x", 0, 0)
	assert.True(t, ok)
	assert.Equal(t, -2.0, v)
	_, ok = res.median("s", "x", 0, 1)
	assert.False(t, ok, "target 1 has no x")
	m := metric{name: "x"}
	for v, want := range map[float64]string{1234.4: "1234", 12.34: "12.3", 1.234: "1.23", 0: "0.00", -1: "-1.00", -12.34: "-12.3", -250: "-250"} {
		assert.Equal(t, want, m.format(v), "%v", v)
	}
}

// The growth line runs from the first to the last size at which every
// target that has the metric measured a positive median, and is left out
// where there are not two such sizes.
func TestGrowth(t *testing.T) {
	none := math.NaN() // no measurement: the round's map lacks the metric
	cpu, rate := metric{cpuMetric, false}, metric{"ops/s", true}
	for _, tc := range []struct {
		name string
		m    metric
		vals [][]float64 // by target, by size
		want string      // "" for no line
	}{
		{"every size", cpu, [][]float64{{2, 3, 4}, {none, none, none}},
			"From 1 to 100 sessions (×100), server µs/op grew: a ×2.00 (faster than it must); the least it must grow is ×1."},
		{"zero at the smallest size", cpu, [][]float64{{0, 5, 6}, {none, none, none}},
			"From 10 to 100 sessions (×10), server µs/op grew: a ×1.20 (flat); the least it must grow is ×1."},
		{"zero at the largest size, for one target", cpu, [][]float64{{4, 5, 6}, {1, 1, 0}},
			"From 1 to 10 sessions (×10), server µs/op grew: a ×1.25 (flat), b ×1.00 (flat); the least it must grow is ×1."},
		{"one size for both", cpu, [][]float64{{0, 5, 6}, {1, 1, 0}}, ""},
		{"one positive size", cpu, [][]float64{{0, 0, 6}, {none, none, none}}, ""},
		{"no target has it", cpu, [][]float64{{none, none, none}, {none, none, none}}, ""},
		{"a rate", rate, [][]float64{{100, 50, 25}, {100, 100, 90}},
			"From 1 to 100 sessions (×100), cost per operation grew: a ×4.00 (faster than it must), b ×1.11 (flat); the least it must grow is ×1."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario{name: "s", size: "sessions", sizes: []int{1, 10, 100}, metrics: []metric{tc.m}}
			targets := []target{{name: "a"}, {name: "b"}}
			res := results{"s": make([][][]map[string]float64, len(sc.sizes))}
			for si := range sc.sizes {
				res["s"][si] = make([][]map[string]float64, len(targets))
				for ti := range targets {
					m := map[string]float64{}
					if v := tc.vals[ti][si]; !math.IsNaN(v) {
						m[tc.m.name] = v
					}
					res["s"][si][ti] = []map[string]float64{m}
				}
			}
			line, ok := growth(sc, tc.m, targets, res)
			assert.Equal(t, tc.want != "", ok)
			assert.Equal(t, tc.want, line)
			var b strings.Builder
			writeReport(&b, []scenario{sc}, targets, res, 1, "")
			assert.Equal(t, tc.want != "", strings.Contains(b.String(), " grew: "), "the report's line")
		})
	}
}
