package main

import (
	"bytes"
	"io"
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
	assert.Regexp(t, `\n\| 4 \|( [^|]+ \|){9} \d+\.\d+ \| - \| - \|`, text, "the mix's CPU: a's, none for b")
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
