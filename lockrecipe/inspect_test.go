package lockrecipe_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/lockrecipe"
)

func TestReadQueue(t *testing.T) {
	const (
		a = "_c_7f1c2a4e-3b5d-4c6e-8f70-112233445566-"
		b = "_c_0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3-"
	)
	type c = lockrecipe.Contender
	for _, tc := range []struct {
		name     string
		children []string
		recipe   lockrecipe.Recipe
		want     []c
	}{
		{"mutex in sequence order, whatever the server's order and the ids",
			[]string{a + "lock-0000000003", b + "lock-0000000001", a + "lock-0000000002"},
			lockrecipe.RecipeMutex, []c{
				{Name: b + "lock-0000000001", Write: true, Holds: true},
				{Name: a + "lock-0000000002", Write: true, Waits: b + "lock-0000000001"},
				{Name: a + "lock-0000000003", Write: true, Waits: a + "lock-0000000002"},
			}},
		{"read-write: readers pass readers, not writers",
			[]string{a + "__READ__0000000001", b + "__READ__0000000002", a + "__WRIT__0000000003", b + "__READ__0000000004"},
			lockrecipe.RecipeReadWrite, []c{
				{Name: a + "__READ__0000000001", Holds: true},
				{Name: b + "__READ__0000000002", Holds: true},
				{Name: a + "__WRIT__0000000003", Write: true, Waits: b + "__READ__0000000002"},
				{Name: b + "__READ__0000000004", Waits: a + "__WRIT__0000000003"},
			}},
		{"leader latch without protected ids",
			[]string{"latch-0000000007", "latch-0000000005"},
			lockrecipe.RecipeLatch, []c{
				{Name: "latch-0000000005", Write: true, Holds: true},
				{Name: "latch-0000000007", Write: true, Waits: "latch-0000000005"},
			}},
		{"semaphore leases: none judged",
			[]string{a + "lease-0000000002", b + "lease-0000000001"},
			lockrecipe.RecipeLeases, []c{{Name: b + "lease-0000000001"}, {Name: a + "lease-0000000002"}}},
		{"a wrapped sequence number",
			[]string{"lock--2147483648"}, lockrecipe.RecipeMutex, []c{{Name: "lock--2147483648", Write: true, Holds: true}}},
		{"mixed recipes", []string{"lock-0000000001", "latch-0000000002"}, "", nil},
		{"a child of no recipe", []string{"lock-0000000001", "config"}, "", nil},
		{"no sequence number", []string{"lock-"}, "", nil},
		{"short sequence number", []string{"lock-12"}, "", nil},
		{"no children", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recipe, queue, ok := lockrecipe.ReadQueue(tc.children)
			assert.Equal(t, tc.recipe != "", ok)
			assert.Equal(t, tc.recipe, recipe)
			assert.Equal(t, tc.want, queue)
		})
	}
}
