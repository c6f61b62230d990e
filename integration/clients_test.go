//go:build clients

// The real-client checks: Apache ZooKeeper's Java client and Curator, kazoo,
// zkCli.sh and the C client's cli_mt, each driven by a script under
// integration/clients against an in-process zkraft and, when ZKRAFT_REALZK
// names one, a real ZooKeeper. They need Debian's packages, so they are
// kept out of the plain `go test ./...`:
//
//	apt-get install zookeeper zookeeper-bin python3-kazoo libcurator-recipes-java libcurator-framework-java
//	go test -tags clients -timeout 60m -run Clients -v ./integration
//	ZKRAFT_REALZK=127.0.0.1:12181 go test -tags clients -timeout 60m -run Clients -v ./integration
//
// (about 25 minutes: more than go test's default timeout)
package integration

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// clientTargets returns the servers to run each client against: a zkraft
// server, a three-member zkraft cluster (the client given every member),
// and the reference ZooKeeper if ZKRAFT_REALZK names one.
func clientTargets(t *testing.T) [][2]string {
	srv := servertest.NewServer(t)
	c := servertest.NewCluster(t, 3)
	targets := [][2]string{{"zkraft", srv.ConnectString()},
		{"zkraft-cluster", strings.Join([]string{c.Addr(0), c.Addr(1), c.Addr(2)}, ",")}}
	if ref := os.Getenv("ZKRAFT_REALZK"); ref != "" {
		targets = append(targets, [2]string{"realzk", ref})
	}
	return targets
}

// namespaceTargets returns a namespace of a shared zkraft server
// (servertest.Shared) twice: through its own address, where the namespace
// is the client's root, and as the server's address with the namespace's
// chroot, for clients that take one.
func namespaceTargets(t *testing.T) [][2]string {
	ns := servertest.Shared(t)
	return [][2]string{{"zkraft-namespace", ns.ConnectString()}, {"zkraft-chroot", ns.ServerAddr() + ns.Chroot()}}
}

// need skips the test unless every path exists.
func need(t *testing.T, install string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing: apt-get install %s", p, install)
		}
	}
}

// runClient runs a command with a deadline and returns its combined output
// and exit error.
func runClient(t *testing.T, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func javaClasspath() string {
	jars := []string{"zookeeper", "zookeeper-jute", "curator-client", "curator-framework", "curator-recipes",
		"guava", "slf4j-api", "slf4j-nop", "commons-cli"}
	var cp []string
	for _, j := range jars {
		cp = append(cp, "/usr/share/java/"+j+".jar")
	}
	return strings.Join(cp, ":")
}

func TestClients_JavaAndCurator(t *testing.T) {
	need(t, "openjdk-17-jre-headless libzookeeper-java libcurator-recipes-java libcurator-framework-java",
		"/usr/share/java/zookeeper.jar", "/usr/share/java/curator-recipes.jar")
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java is missing: apt-get install openjdk-17-jre-headless")
	}
	for _, tg := range append(clientTargets(t), namespaceTargets(t)...) {
		t.Run(tg[0], func(t *testing.T) {
			out, err := runClient(t, "", "java", "-cp", javaClasspath(), filepath.Join("clients", "ClientCheck.java"), tg[1])
			t.Log(out)
			require.NoError(t, err, "ClientCheck against %s", tg[0])
			assert.Contains(t, out, "\nPASS")
		})
	}
}

func TestClients_Kazoo(t *testing.T) {
	need(t, "python3-kazoo", "/usr/lib/python3/dist-packages/kazoo/client.py")
	for _, tg := range append(clientTargets(t), namespaceTargets(t)...) {
		t.Run(tg[0], func(t *testing.T) {
			out, err := runClient(t, "", "/usr/bin/python3", filepath.Join("clients", "kazoo_check.py"), tg[1])
			t.Log(out)
			require.NoError(t, err, "kazoo_check against %s", tg[0])
			assert.Contains(t, out, "\nPASS")
		})
	}
}

// transcriptNoise matches what legitimately differs between two servers'
// answers to the same commands: zxids and session ids, times and dates.
var transcriptNoise = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`0x[0-9a-fA-F]+`), "0xN"},
	{regexp.MustCompile(`\b(ctime|mtime)\s*=.*`), "$1 = TIME"},
	{regexp.MustCompile(`\b(czxid|mzxid|pzxid)=[0-9a-fA-F]+`), "$1=N"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}:\d+\(0x[0-9a-f]+\):`), "LOGTIME"},
}

// normalize keeps the lines of a transcript that the commands produced and
// masks what may differ between servers.
func normalize(out string, keep func(string) bool) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r ")
		if !keep(line) {
			continue
		}
		for _, n := range transcriptNoise {
			line = n.re.ReplaceAllString(line, n.with)
		}
		lines = append(lines, line)
	}
	return lines
}

// compareTranscripts runs script against every target and requires the
// normalized transcripts to agree with the first (zkraft) and to contain want.
func compareTranscripts(t *testing.T, run func(addr string) []string, want []string) {
	var first []string
	for i, tg := range clientTargets(t) {
		got := run(tg[1])
		t.Logf("%s transcript:\n%s", tg[0], strings.Join(got, "\n"))
		for _, w := range want {
			assert.Contains(t, got, w, "%s transcript", tg[0])
		}
		if i == 0 {
			first = got
			continue
		}
		assert.Equal(t, got, first, "zkraft and %s answer the same commands alike", tg[0])
	}
}

func TestClients_ZkCli(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	need(t, "zookeeper", zkCli)
	node := "/zkcli-" + strings.ToLower(time.Now().Format("150405.000000"))
	node = strings.ReplaceAll(node, ".", "-")
	script := strings.Join([]string{
		"create " + node + " hello",
		"create " + node + "/child",
		"create -e " + node + "/eph e",
		"create -s " + node + "/seq- s",
		"ls " + node,
		"get " + node,
		"set " + node + " world",
		"get -s " + node,
		"stat " + node,
		"getAcl " + node,
		"deleteall " + node,
		"ls " + node,
		"quit",
	}, "\n") + "\n"
	keep := func(line string) bool {
		return line != "" && !strings.Contains(line, "log4j") && !strings.HasPrefix(line, "Connecting to") &&
			!strings.HasPrefix(line, "WATCHER::") && !strings.HasPrefix(line, "WatchedEvent") &&
			!strings.HasPrefix(line, "Welcome to") && !strings.HasPrefix(line, "JLine")
	}
	compareTranscripts(t, func(addr string) []string {
		// zkCli exits 1 because its last command (ls of the deleted node)
		// failed; the transcript is what counts.
		out, _ := runClient(t, script, zkCli, "-server", addr)
		return normalize(out, keep)
	}, []string{"[child, eph, seq-0000000002]", "hello", "world", "dataLength = 5", "numChildren = 3",
		"'world,'anyone", ": cdrwa", "Node does not exist: " + node})
}

func TestClients_CCliMt(t *testing.T) {
	const cliMt = "/usr/lib/zookeeper/bin/cli_mt"
	need(t, "zookeeper-bin", cliMt)
	node := "/climt-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "-")
	commands := []string{
		"create " + node,
		"create +e " + node + "/eph",
		"create +s " + node + "/seq-",
		"get " + node,
		"ls " + node,
		"set " + node + " world",
		"get " + node,
		"ls2 " + node,
		"delete " + node + "/eph",
		"delete " + node + "/seq-0000000001",
		"delete " + node,
		"get " + node,
	}
	keep := func(line string) bool {
		return line != "" && !strings.Contains(line, "ZOO_") && !strings.Contains(line, "Watcher ") &&
			!strings.HasPrefix(line, "time = ") && !strings.HasPrefix(line, "Got a new session") &&
			line != "Quitting..." // printed by cli_mt's main thread, racing the last completion
	}
	compareTranscripts(t, func(addr string) []string {
		return normalize(driveCliMt(t, cliMt, addr, commands), keep)
	}, []string{"[" + node + "]: rc = 0", node + ": rc = -101"})
}

// driveCliMt runs the C client's cli_mt, which runs commands
// asynchronously, sending each command once the previous one's completion
// ("rc = ") has been printed, and returns everything it printed. (Its
// exists is synchronous and prints nothing on success, so scripts use get.)
func driveCliMt(t *testing.T, cliMt, addr string, commands []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliMt, addr)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var out strings.Builder
	waitFor := func(marker string) {
		for {
			select {
			case line, ok := <-lines:
				require.True(t, ok, "cli_mt ended while waiting for %q:\n%s", marker, out.String())
				out.WriteString(line + "\n")
				if strings.Contains(line, marker) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("cli_mt: no %q within a minute:\n%s", marker, out.String())
			}
		}
	}
	waitFor("Got a new session id")
	for _, c := range commands {
		_, err := io.WriteString(stdin, c+"\n")
		require.NoError(t, err)
		if strings.HasPrefix(c, "create ") {
			waitFor("name = ") // a create's completion prints it after "rc = "
		} else {
			waitFor("rc = ")
		}
	}
	_, _ = io.WriteString(stdin, "quit\n")
	stdin.Close()
	cmd.Wait()
	pw.Close()
	for line := range lines {
		out.WriteString(line + "\n")
	}
	return out.String()
}
