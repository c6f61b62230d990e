//go:build clients

// Real clients' recipes against a cluster: kazoo's (clients/kazoo_recipes.py)
// and Curator's (clients/CuratorRecipes.java), each run with two sessions
// pinned to different members of a three-member zkraft cluster of three
// processes (scripts/zkraft-cluster) and, when ZKRAFT_REALZK_CLUSTER names
// one, of a real ZooKeeper ensemble, to find where zkraft's cluster behaves
// differently from ZooKeeper's as client code sees it. Every recipe runs in
// three placements: A on the leader and B on a follower, A and B on two
// followers, and both on the whole connect string.
//
//	go test -tags clients -run Clients_ClusterRecipes -v -timeout 3h ./integration
//	/work/shared/tools/realzk cluster /tmp/rz 13181
//	ZKRAFT_REALZK_CLUSTER=127.0.0.1:13181,127.0.0.1:13182,127.0.0.1:13183 ZKRAFT_CLIENT_RUNS=3 \
//	    go test -tags clients -run Clients_ClusterRecipes -v -timeout 3h ./integration
//
// ZKRAFT_CLIENT_RUNS (default 20) sets the runs per case; 20 take about 40
// minutes with a real ensemble. The test logs a table of passes per case for
// both, the scripts' measurements (how soon a dead contender's session
// expired, how soon a session moved to another member) and the zkraft
// members' log lines about leadership changes and closed client connections.
// It fails when zkraft fails a case that the real ensemble passes every time
// (or, without one, when zkraft fails any case).
package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/zkraft/zkraft/integration/visibility"
)

var kazooRecipes = []string{"Lock", "LockingQueue", "Barrier", "DoubleBarrier", "Election", "Counter", "Party",
	"Queue", "DataWatch", "ChildrenWatch"}

var curatorRecipes = []string{"InterProcessMutex", "InterProcessReadWriteLock", "InterProcessSemaphoreV2",
	"DistributedBarrier", "DistributedDoubleBarrier", "LeaderLatch", "LeaderSelector", "DistributedQueue",
	"DistributedAtomicLong", "CuratorCache", "PersistentNode"}

// placement picks the connect strings of clients A and B from an ensemble's
// current roles.
type placement struct {
	name string
	pick func(leader string, followers, all []string) (a, b string, err error)
}

var placements = []placement{
	{"A leader, B follower", func(leader string, followers, _ []string) (string, string, error) {
		if len(followers) < 1 {
			return "", "", fmt.Errorf("no follower besides leader %s", leader)
		}
		return leader, followers[0], nil
	}},
	{"A follower, B other follower", func(_ string, followers, _ []string) (string, string, error) {
		if len(followers) < 2 {
			return "", "", fmt.Errorf("fewer than two followers: %v", followers)
		}
		return followers[0], followers[1], nil
	}},
	{"both on the whole list", func(_ string, _, all []string) (string, string, error) {
		s := strings.Join(all, ",")
		return s, s, nil
	}},
}

// ensemble is a cluster the cases run against.
type ensemble struct {
	name  string
	addrs []string
}

// recipeOutcome is what one recipe script reported for one case.
type recipeOutcome struct {
	passes, runs int
	where        string   // the members A and B were pinned to
	failures     []string // its FAIL lines, or why it could not run
	notes        []string // its NOTE lines: measurements such as how soon a session expired
	output       string
}

func (o *recipeOutcome) String() string {
	if o == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", o.passes, o.runs)
}

func (o *recipeOutcome) perfect() bool { return o != nil && o.passes == o.runs && o.runs > 0 }

var resultLine = regexp.MustCompile(`(?m)^RESULT (\d+)/(\d+)$`)

// runRecipe runs one recipe script with args and reads its verdict.
func runRecipe(t *testing.T, runs int, name string, args ...string) *recipeOutcome {
	t.Helper()
	// Each run of a script gives up on its own after three minutes; this
	// deadline only guards against a script that cannot even do that.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*200*time.Second+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	o := &recipeOutcome{runs: runs, output: out.String()}
	for line := range strings.Lines(o.output) {
		if strings.HasPrefix(line, "FAIL ") {
			o.failures = append(o.failures, strings.TrimSpace(line))
		}
		if note, ok := strings.CutPrefix(line, "NOTE "); ok {
			o.notes = append(o.notes, strings.TrimSpace(note))
		}
	}
	m := resultLine.FindAllStringSubmatch(o.output, -1)
	if m == nil {
		o.failures = append(o.failures, fmt.Sprintf("no RESULT line (exit: %v); output ends: %s", err, tail(o.output, 15)))
		return o
	}
	o.passes, _ = strconv.Atoi(m[len(m)-1][1])
	o.runs, _ = strconv.Atoi(m[len(m)-1][2])
	if err != nil && o.perfect() {
		o.passes--
		o.failures = append(o.failures, fmt.Sprintf("reported every run passed but exited with %v", err))
	}
	return o
}

var (
	noteRun     = regexp.MustCompile(`^run \d+: `)
	noteSeconds = regexp.MustCompile(`\d+\.\d+s`)
)

// summarizeNotes groups notes that differ only in their run and first
// duration and gives each group's min, median and max duration.
func summarizeNotes(notes []string) []string {
	groups := map[string][]float64{}
	var order []string
	for _, n := range notes {
		n = noteRun.ReplaceAllString(n, "")
		d := noteSeconds.FindString(n)
		if d == "" {
			continue
		}
		v, _ := strconv.ParseFloat(strings.TrimSuffix(d, "s"), 64)
		key := strings.Replace(n, d, "Ns", 1)
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], v)
	}
	var out []string
	for _, key := range order {
		vs := groups[key]
		slices.Sort(vs)
		out = append(out, fmt.Sprintf("%s: N min %.2f, median %.2f, max %.2f over %d runs", key, vs[0], vs[len(vs)/2], vs[len(vs)-1], len(vs)))
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freeClusterBase returns a base port P such that P..P+2 (client), P+101..P+103
// (Raft) and P+201..P+203 (forwarding) are free on loopback.
func freeClusterBase(t *testing.T) int {
	t.Helper()
	for range 200 {
		base := 20000 + rand.IntN(30000)
		free := true
		for _, off := range []int{0, 1, 2, 101, 102, 103, 201, 202, 203} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port range for a cluster")
	return 0
}

// startZkraftCluster builds zkraft and starts a cluster of three processes
// with scripts/zkraft-cluster, stopped (and waited for) when the test ends.
func startZkraftCluster(t *testing.T) (addrs []string, dir string) {
	t.Helper()
	return startZkraftClusterWith(t, 2000, "", false)
}

// startZkraftClusterWith starts the cluster with tickTime tickMS and the
// flags args added to every member; durable members keep their Raft logs
// and snapshots in their data dirs.
func startZkraftClusterWith(t *testing.T, tickMS int, args string, durable bool) (addrs []string, dir string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkraft")
	build := exec.Command("go", "build", "-o", bin, "./cmd/zkraft")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/zkraft: %s", out)

	dir = t.TempDir()
	script := filepath.Join("scripts", "zkraft-cluster")
	start := exec.Command(script, "start", dir, strconv.Itoa(freeClusterBase(t)), strconv.Itoa(tickMS))
	start.Env = append(os.Environ(), "ZKRAFT_BIN="+bin, "ZKRAFT_ARGS="+args)
	if durable {
		start.Env = append(start.Env, "ZKRAFT_DURABLE=1")
	}
	start.Stderr = os.Stderr
	out, err = start.Output()
	t.Cleanup(func() { stopZkraftCluster(t, script, dir) })
	require.NoError(t, err, "zkraft-cluster start: %s", out)
	connect := strings.TrimSpace(tail(string(out), 1))
	addrs = strings.Split(connect, ",")
	require.Len(t, addrs, 3, "zkraft-cluster printed %q", out)
	return addrs, dir
}

// stopZkraftCluster stops the members and waits for them to exit, so that
// the temporary directory holding their logs can go.
func stopZkraftCluster(t *testing.T, script, dir string) {
	var pids []int
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("n%d", i), "pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pids = append(pids, pid)
		}
	}
	if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
		t.Errorf("zkraft-cluster stop: %v: %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		if !waitExited(pid, time.Until(deadline)) {
			t.Errorf("zkraft member (pid %d) still running 30s after stop; killing it", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitExited waits up to d for process pid to exit, and reports whether it
// did. The members are not this process's children, so no wait status
// tells of their end: a pidfd does, becoming readable when the process
// exits (Linux 5.3 and later).
func waitExited(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return !processAlive(pid) // ESRCH: already gone
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return !processAlive(pid)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left.Milliseconds())+1)
		if n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return !processAlive(pid)
		}
	}
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func TestClients_ClusterRecipes(t *testing.T) {
	need(t, "python3-kazoo", "/usr/lib/python3/dist-packages/kazoo/client.py")
	need(t, "openjdk-17-jdk-headless libzookeeper-java libcurator-recipes-java libcurator-framework-java",
		"/usr/share/java/zookeeper.jar", "/usr/share/java/curator-recipes.jar", "/usr/share/java/curator-framework.jar")
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing: apt-get install openjdk-17-jdk-headless", tool)
		}
	}
	runs := 20
	if v := os.Getenv("ZKRAFT_CLIENT_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "ZKRAFT_CLIENT_RUNS")
		require.Positive(t, n, "ZKRAFT_CLIENT_RUNS")
		runs = n
	}

	classes := t.TempDir()
	out, err := exec.Command("javac", "-cp", javaClasspath(), "-d", classes,
		filepath.Join("clients", "CuratorRecipes.java")).CombinedOutput()
	require.NoError(t, err, "javac CuratorRecipes.java: %s", out)
	kazooScript, err := filepath.Abs(filepath.Join("clients", "kazoo_recipes.py"))
	require.NoError(t, err)

	// ZKRAFT_CLUSTER_LOG_STORE=wal (or boltdb) runs the members durable,
	// with that log store.
	var zkAddrs []string
	var zkDir string
	if store := os.Getenv("ZKRAFT_CLUSTER_LOG_STORE"); store != "" {
		zkAddrs, zkDir = startZkraftClusterWith(t, 2000, "-log-store "+store, true)
	} else {
		zkAddrs, zkDir = startZkraftCluster(t)
	}
	ensembles := []ensemble{{"zkraft", zkAddrs}}
	if ref := os.Getenv("ZKRAFT_REALZK_CLUSTER"); ref != "" {
		ensembles = append(ensembles, ensemble{"realzk", strings.Split(ref, ",")})
	}
	for _, e := range ensembles {
		leader, followers, err := visibility.Roles(e.addrs, time.Minute)
		require.NoError(t, err, "%s: roles", e.name)
		t.Logf("%s: leader %s, followers %v", e.name, leader, followers)
	}

	type suite struct {
		name    string
		recipes []string
		run     func(t *testing.T, recipe, a, b string) *recipeOutcome
	}
	suites := []suite{
		{"kazoo", kazooRecipes, func(t *testing.T, recipe, a, b string) *recipeOutcome {
			return runRecipe(t, runs, "/usr/bin/python3", kazooScript, recipe, a, b, "--runs", strconv.Itoa(runs))
		}},
		{"curator", curatorRecipes, func(t *testing.T, recipe, a, b string) *recipeOutcome {
			return runRecipe(t, runs, "java", "-cp", classes+":"+javaClasspath(), "CuratorRecipes", recipe, a, b, strconv.Itoa(runs))
		}},
	}

	type row struct {
		suite, recipe, placement string
		got                      map[string]*recipeOutcome
	}
	var rows []row
	zkraftFailed := false
	for _, s := range suites {
		for _, recipe := range s.recipes {
			for _, p := range placements {
				r := row{s.name, recipe, p.name, map[string]*recipeOutcome{}}
				t.Run(s.name+"/"+recipe+"/"+p.name, func(t *testing.T) {
					for _, e := range ensembles {
						leader, followers, err := visibility.Roles(e.addrs, time.Minute)
						var a, b string
						if err == nil {
							a, b, err = p.pick(leader, followers, e.addrs)
						}
						if err != nil {
							r.got[e.name] = &recipeOutcome{runs: runs, failures: []string{"placing the clients: " + err.Error()}}
							continue
						}
						start := time.Now()
						o := s.run(t, recipe, a, b)
						o.where = fmt.Sprintf("A %s, B %s", a, b)
						r.got[e.name] = o
						t.Logf("%s: %s passed %s in %s (%s)", e.name, recipe, o, time.Since(start).Round(time.Second), o.where)
						for _, n := range summarizeNotes(o.notes) {
							t.Logf("%s: %s", e.name, n)
						}
					}
					zk, ref := r.got["zkraft"], r.got["realzk"]
					for _, e := range ensembles {
						if o := r.got[e.name]; !o.perfect() {
							t.Logf("%s failures (%s):\n%s", e.name, o.where, strings.Join(o.failures, "\n"))
						}
					}
					if !zk.perfect() {
						zkraftFailed = true
						if len(ensembles) == 1 || ref.perfect() {
							t.Errorf("zkraft passed %s of %s %s (%s) where realzk passed %s", zk, s.name, recipe, p.name, ref)
						}
					}
				})
				rows = append(rows, r)
			}
		}
	}

	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "suite\trecipe\tplacement\tzkraft\trealzk\t")
	for _, r := range rows {
		mark := ""
		if zk := r.got["zkraft"]; zk != nil && !zk.perfect() {
			mark = "  <- zkraft failed"
			if ref := r.got["realzk"]; ref != nil && !ref.perfect() {
				mark += " (so did realzk)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.suite, r.recipe, r.placement, r.got["zkraft"], r.got["realzk"], mark)
	}
	tw.Flush()
	t.Logf("passes/runs per case (%d runs each):\n%s", runs, table.String())
	for i := 1; i <= 3; i++ {
		path := filepath.Join(zkDir, fmt.Sprintf("n%d", i), "server.log")
		logMatching(t, path, clusterEvents, 60)
		if zkraftFailed {
			logTail(t, path, 40)
		}
	}
}

// clusterEvents matches a zkraft member's log lines about leadership and
// about client connections it closed, which explain many client failures.
var clusterEvents = regexp.MustCompile(`stepping down|serving clients|proposal failed|closing connection|level=ERROR`)

// logMatching logs up to n lines of a member's log that match re.
func logMatching(t *testing.T, path string, re *regexp.Regexp, n int) {
	var lines []string
	count := 0
	if !eachLogLine(t, path, func(line string) {
		if re.MatchString(line) {
			count++
			if len(lines) < n {
				lines = append(lines, line)
			}
		}
	}) {
		return
	}
	shown := ""
	if count > n {
		shown = fmt.Sprintf(" (the first %d)", n)
	}
	t.Logf("%s: %d lines about leadership and closed connections%s:\n%s", path, count, shown, strings.Join(lines, "\n"))
}

// logTail logs the last n lines of a member's log.
func logTail(t *testing.T, path string, n int) {
	var lines []string
	if !eachLogLine(t, path, func(line string) {
		lines = append(lines, line)
		if len(lines) > n {
			lines = lines[1:]
		}
	}) {
		return
	}
	t.Logf("last lines of %s:\n%s", path, strings.Join(lines, "\n"))
}

// eachLogLine calls fn with each line of the log at path; it reports
// false, having logged why, if the log cannot be read.
func eachLogLine(t *testing.T, path string, fn func(line string)) bool {
	f, err := os.Open(path)
	if err != nil {
		t.Logf("%s: %v", path, err)
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fn(sc.Text())
	}
	return true
}
