//go:build clients

package integration

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/server/servertest/history"
)

// TestClients_HistoryRecordsOtherLanguages: the history recorder's proxy
// records clients that are not Go's: kazoo's and Curator's lock recipes,
// two clients each, run through it against a three-member cluster, and the
// history they leave is checked (linearizable per znode, each session's
// guarantees) and is not empty.
func TestClients_HistoryRecordsOtherLanguages(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	for _, tc := range []struct {
		name    string
		install string
		need    string
		argv    func(a, b string) []string
	}{
		{"kazoo Lock", "python3-kazoo", "/usr/lib/python3/dist-packages/kazoo/client.py", func(a, b string) []string {
			return []string{"/usr/bin/python3", filepath.Join("clients", "kazoo_recipes.py"), "Lock", a, b, "--runs", "3"}
		}},
		{"Curator InterProcessMutex", "libcurator-recipes-java", "/usr/share/java/curator-recipes.jar", func(a, b string) []string {
			return []string{"java", "-cp", javaClasspath(), filepath.Join("clients", "CuratorRecipes.java"), "InterProcessMutex", a, b, "3"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need(t, tc.install, tc.need)
			rec := history.New()
			a := rec.Proxy(t, c.Addr(0))
			b := rec.Proxy(t, c.Addr(1), c.Addr(2))
			argv := tc.argv(a, b)
			out, err := runClient(t, "", argv[0], argv[1:]...)
			t.Log(out)
			require.NoError(t, err, "%s through the proxy", tc.name)
			report := rec.Verify(t)
			creates := 0
			for _, op := range rec.Ops() {
				if op.Kind == "create" && op.Outcome == history.OK {
					creates++
				}
			}
			assert.Positive(t, creates, "the recipe's lock nodes are recorded")
			t.Logf("%s: %d operations recorded, %d creates: %s", tc.name, len(rec.Ops()), creates, report.Verdict)
		})
	}
}
