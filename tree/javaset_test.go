package tree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected orders were printed by Java 17 iterating a java.util.HashSet
// (new HashSet<>(8), as ZooKeeper's DataNode makes for children) after the
// same adds and removes.
func TestJavaSet_OrderMatchesJava(t *testing.T) {
	kids := javaSet[member]{init: childrenInitBits}
	for i := range 20 {
		kids.add(fmt.Sprintf("lock-%010d", i), member{})
	}
	for _, n := range []string{"zookeeper", "a", "b", "child", "eph", "seq-0000000002"} {
		kids.add(n, member{})
	}
	assert.Equal(t, []string{
		"lock-0000000009", "lock-0000000008", "lock-0000000007", "lock-0000000006", "lock-0000000001",
		"lock-0000000000", "lock-0000000005", "eph", "lock-0000000004", "lock-0000000003", "lock-0000000002",
		"a", "seq-0000000002", "b", "zookeeper", "lock-0000000019", "lock-0000000018", "lock-0000000017",
		"lock-0000000012", "lock-0000000011", "lock-0000000010", "lock-0000000016", "lock-0000000015",
		"lock-0000000014", "lock-0000000013", "child",
	}, kids.ordered(), "26 names: the table grew 8 -> 16 -> 32 -> 64")

	few := javaSet[member]{init: childrenInitBits}
	for _, n := range []string{"zookeeper", "x", "y", "z", "x1", "longer-name", "_c_4b0e-lock-0000000003", "eph", "seq-0000000001"} {
		few.add(n, member{})
	}
	assert.Equal(t, []string{"longer-name", "zookeeper", "x", "y", "x1", "z", "eph", "seq-0000000001",
		"_c_4b0e-lock-0000000003"}, few.ordered())
	few.remove("x")
	few.remove("y")
	few.add("x", member{})
	assert.Equal(t, []string{"longer-name", "zookeeper", "x", "x1", "z", "eph", "seq-0000000001",
		"_c_4b0e-lock-0000000003"}, few.ordered(), "a removed name comes back at the end of its bin")
}

func TestJavaSet_OrderedCopyMatchesJava(t *testing.T) {
	eph := javaSet[member]{init: ephemeralsInitBits}
	for _, p := range []string{"/b/e2", "/e3", "/a/e1", "/a/s0000000002"} {
		eph.add(p, member{})
	}
	assert.Equal(t, []string{"/a/s0000000002", "/b/e2", "/a/e1", "/e3"}, eph.orderedCopy())
}

func TestJavaHash(t *testing.T) {
	// Values printed by Java's String.hashCode.
	assert.Equal(t, int32(-1331913276), JavaHash("digest"))
	assert.Equal(t, int32(1505998205), JavaHash("127.0.0.1"))
	assert.Equal(t, int32(16751501), JavaHash("é€𝄞"), "UTF-16 code units, surrogates included")
}

// A clone (what ZooKeeper's getEphemerals returns) of a set that grew to 30
// and shrank to 20 sizes its own table for 20: printed by Java 17.
func TestJavaSet_OrderedCopyResizesForItsSize(t *testing.T) {
	set := javaSet[member]{init: ephemeralsInitBits}
	for i := range 30 {
		set.add(fmt.Sprintf("/locks/lock-%010d", i), member{})
	}
	for i := range 10 {
		set.remove(fmt.Sprintf("/locks/lock-%010d", i*2))
	}
	want := []string{}
	for _, n := range []int{3, 25, 24, 13, 1, 23, 22, 11, 21, 20, 9, 19, 7, 29, 28, 17, 5, 27, 26, 15} {
		want = append(want, fmt.Sprintf("/locks/lock-%010d", n))
	}
	assert.Equal(t, want, set.orderedCopy())
}

// TestJavaSet_CachedOrderFollowsChanges lists a set between random adds,
// removes and re-inserts at an old sequence (as a multi's undo does), and
// checks each cached, updated order against one computed afresh; a list
// handed out earlier must not change.
func TestJavaSet_CachedOrderFollowsChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	set := javaSet[member]{init: childrenInitBits}
	removed := map[string]uint32{}
	var earlier, earlierCopy []string
	for step := range 5000 {
		name := fmt.Sprintf("n%d", rng.IntN(300))
		switch {
		case set.has(name) && rng.IntN(2) == 0:
			removed[name] = set.seqOf(name)
			set.remove(name)
		case !set.has(name) && rng.IntN(4) == 0 && removed[name] != 0:
			set.put(name, member{}, removed[name]) // back where it was
		default:
			set.add(name, member{})
		}
		require.Equal(t, checkCounts(&set), set.counts, "bins at step %d", step)
		if rng.IntN(3) == 0 {
			got := set.ordered()
			require.Equal(t, names(set.binned(set.bits)), got, "step %d", step)
			require.Equal(t, earlierCopy, earlier, "a list handed out before step %d changed", step)
			earlier, earlierCopy = got, slices.Clone(got)
		}
	}
}

// TestJavaSet_TableFollowsAModel adds and removes names at random, growing
// and emptying the set's table, and checks after each step that every name
// is found exactly when a plain map holds it and that iterating the table
// yields the map's names.
func TestJavaSet_TableFollowsAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	set := javaSet[nodeID]{init: childrenInitBits}
	model := map[string]nodeID{}
	next := nodeID(0)
	for step := range 20000 {
		name := fmt.Sprintf("n%d", rng.IntN(200+step/20))
		if id := model[name]; id != 0 && rng.IntN(3) > 0 || step%5000 > 4000 && id != 0 {
			set.remove(name)
			delete(model, name)
		} else if id == 0 {
			next++
			set.add(name, next)
			model[name] = next
		}
		require.Equal(t, len(model), set.len(), "step %d", step)
		if step%97 == 0 {
			got := map[string]nodeID{}
			for name, id := range set.all {
				got[name] = id
			}
			require.Equal(t, model, got, "step %d", step)
			for i := range 1200 {
				probe := fmt.Sprintf("n%d", i)
				require.Equal(t, model[probe], set.get(probe), "step %d: %s", step, probe)
			}
		}
	}
}
