//go:build clients

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClients_GoZooKeeperSuite runs go-zookeeper v1.0.4's own integration
// tests (its TestIntegration_*, which start standalone servers and
// three-member ensembles through a zkServer.sh) against zkraft:
// integration/clients/zkServer.sh starts the zkraft binary on the zoo.cfg
// each test writes. It needs Go only, but runs a copy of the module's
// source and takes a few minutes, so it sits with the client checks:
//
//	go test -tags clients -run GoZooKeeperSuite -v ./integration
func TestClients_GoZooKeeperSuite(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "zkraft")
	build := exec.Command("go", "build", "-o", bin, "./cmd/zkraft")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build zkraft: %s", out)

	modDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/go-zookeeper/zk").Output()
	require.NoError(t, err)
	src := filepath.Join(dir, "gozk")
	require.NoError(t, os.CopyFS(src, os.DirFS(strings.TrimSpace(string(modDir)))))
	script, err := filepath.Abs("clients/zkServer.sh")
	require.NoError(t, err)
	binDir := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(binDir, 0o755))
	require.NoError(t, os.Symlink(script, filepath.Join(binDir, "zkServer.sh")))

	run := exec.Command("go", "test", "-count=1", "-timeout=20m", "-run", "^TestIntegration_", "-v", ".")
	run.Dir = src
	// ZK_VERSION makes go-zookeeper run its two reconfig tests too.
	run.Env = append(os.Environ(), "ZOOKEEPER_BIN_PATH="+binDir, "ZKRAFT_BIN="+bin, "GOFLAGS=-mod=mod", "ZK_VERSION=3.8.0")
	out, err = run.CombinedOutput()
	logPath := filepath.Join(dir, "gozk-test.log")
	os.WriteFile(logPath, out, 0o644)
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestIntegration_\S+)`).FindAllStringSubmatch(string(out), -1)
	failed := regexp.MustCompile(`(?m)^--- FAIL: (TestIntegration_\S+)`).FindAllStringSubmatch(string(out), -1)
	skipped := regexp.MustCompile(`(?m)^--- SKIP: (TestIntegration_\S+)`).FindAllStringSubmatch(string(out), -1)
	t.Logf("go-zookeeper TestIntegration_*: %d passed, %d failed, %d skipped", len(passed), len(failed), len(skipped))
	for _, p := range passed {
		t.Logf("passed: %s", p[1])
	}
	for _, f := range failed {
		t.Errorf("go-zookeeper %s failed against zkraft", f[1])
	}
	if t.Failed() || err != nil {
		t.Logf("output:\n%s", out)
	}
	require.NoError(t, err)
	for _, s := range skipped {
		t.Errorf("%s skipped", s[1])
	}
	declared := 0
	for _, f := range mustGlob(t, filepath.Join(src, "*_test.go")) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		declared += len(regexp.MustCompile(`(?m)^func TestIntegration_`).FindAll(b, -1))
	}
	assert.Equal(t, declared, len(passed), "every TestIntegration_ test of go-zookeeper ran and passed")
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	return m
}
