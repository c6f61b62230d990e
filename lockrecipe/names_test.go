package lockrecipe

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNewProtectedID_IsJavaUUID(t *testing.T) {
	// The form java.util.UUID.fromString accepts and toString prints, as
	// Curator's ProtectedUtils.isProtectedZNode checks: 36 characters,
	// version 4, IETF variant.
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := newProtectedID()
		assert.Regexp(t, re, id)
		assert.False(t, seen[id], "ids repeat")
		seen[id] = true
		// isProtectedZNode: prefix, 40th character is the separator.
		name := protectedNodePrefix(id) + mutexName + "0000000001"
		assert.Equal(t, byte('-'), name[39])
	}
}

// curatorSort is Curator's LockInternals.getSortedChildren, literally: a
// stable sort of every child by its key. order must agree with it.
func curatorSort(children []string, key keyFunc) []string {
	sorted := slices.Clone(children)
	slices.SortStableFunc(sorted, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	return sorted
}

// inOrder lists the children as order sees them.
func inOrder(o order) []string {
	idx := make([]int, len(o.names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case o.less(a, b):
			return -1
		case o.less(b, a):
			return 1
		}
		return 0
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = o.names[j]
	}
	return out
}

func TestOrder_AsCurator(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      keyFunc
		children []string
		want     []string
	}{
		{
			name: "mutex: by sequence, whatever the uuid",
			key:  mutexKey,
			children: []string{
				"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
				"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
				"_c_88888888-0000-4000-8000-000000000000-lock-0000000001",
			},
			want: []string{
				"_c_88888888-0000-4000-8000-000000000000-lock-0000000001",
				"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
				"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
			},
		},
		{
			name:     "mutex: unprotected names and foreign children take part",
			key:      mutexKey,
			children: []string{"zz", "lock-0000000002", "x-lock-0000000001"},
			// "zz" has no lock name, so its whole name is its key, and
			// digits sort before letters.
			want: []string{"x-lock-0000000001", "lock-0000000002", "zz"},
		},
		{
			name: "read/write: readers and writers in one order",
			key:  rwKey,
			children: []string{
				"_c_a-__WRIT__0000000004", "_c_b-__READ__0000000002",
				"_c_c-__READ__0000000005", "_c_d-__WRIT__0000000001",
			},
			want: []string{
				"_c_d-__WRIT__0000000001", "_c_b-__READ__0000000002",
				"_c_a-__WRIT__0000000004", "_c_c-__READ__0000000005",
			},
		},
		{
			name:     "sequence compared as text, as Curator does",
			key:      mutexKey,
			children: []string{"lock-0000000010", "lock--2147483648", "lock-0000000009"},
			want:     []string{"lock--2147483648", "lock-0000000009", "lock-0000000010"},
		},
		{
			name:     "equal keys keep the server's order",
			key:      latchKey,
			children: []string{"b-latch-0000000001", "a-latch-0000000001"},
			want:     []string{"b-latch-0000000001", "a-latch-0000000001"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, curatorSort(tc.children, tc.key), "the reference")
			o := newOrder(tc.children, tc.key)
			assert.Equal(t, tc.want, inOrder(o))
			assert.Equal(t, tc.want[0], o.names[o.first()])
		})
	}
}

// TestRules_AgreeWithCuratorSort checks the one-pass rules against the
// same rules applied to Curator's sorted list, on random lock paths mixing
// readers, writers, mutex nodes and foreign children.
func TestRules_AgreeWithCuratorSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"_c_x-__READ__", "_c_y-__WRIT__", "lock-", "", "zz-"}
	for range 500 {
		var children []string
		for _, seq := range rng.Perm(1 + rng.IntN(12)) {
			children = append(children, fmt.Sprintf("%s%010d", names[rng.IntN(len(names))], seq))
		}
		sorted := curatorSort(children, rwKey)
		o := newOrder(children, rwKey)
		for ours, name := range children {
			at := slices.Index(sorted, name)
			holds, watch := exclusive(o, ours)
			assert.Equal(t, at == 0, holds, "exclusive %v as %s", sorted, name)
			if at > 0 {
				assert.Equal(t, sorted[at-1], watch)
			}
			lastWriter := ""
			for _, before := range sorted[:at] {
				if strings.Contains(before, writeName) {
					lastWriter = before
				}
			}
			holds, watch = shared(o, ours)
			assert.Equal(t, lastWriter == "", holds, "shared %v as %s", sorted, name)
			assert.Equal(t, lastWriter, watch)
		}
	}
}

func TestRules(t *testing.T) {
	children := []string{"w-__WRIT__1", "r-__READ__2", "r-__READ__3", "w-__WRIT__4", "r-__READ__5", "r-__READ__6"}
	o := newOrder(children, rwKey)
	for _, tc := range []struct {
		name  string
		r     rule
		ours  int
		holds bool
		watch string
	}{
		{"writer first holds", exclusive, 0, true, ""},
		{"writer watches the node before it", exclusive, 3, false, "r-__READ__3"},
		{"reader behind a writer waits for it", shared, 1, false, "w-__WRIT__1"},
		{"reader watches the last writer before it", shared, 5, false, "w-__WRIT__4"},
		{"readers pass readers", shared, 2, false, "w-__WRIT__1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holds, watch := tc.r(o, tc.ours)
			assert.Equal(t, tc.holds, holds)
			assert.Equal(t, tc.watch, watch)
		})
	}
	holds, _ := shared(newOrder([]string{"r-__READ__1", "r-__READ__2", "w-__WRIT__3"}, rwKey), 1)
	assert.True(t, holds, "a reader behind readers only holds")
}

func TestPaths(t *testing.T) {
	assert.Equal(t, "/_c_x", childPath("/", "_c_x"))
	assert.Equal(t, "/a/b", childPath("/a", "b"))
	assert.Equal(t, "/a", cleanPath("/a/"))
	assert.Equal(t, "/", cleanPath("/"))
	assert.Equal(t, "/a", parentPath("/a/b"))
	assert.Equal(t, "/", parentPath("/a"))
	assert.Empty(t, parentPath("/"))
}
