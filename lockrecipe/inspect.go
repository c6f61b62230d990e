package lockrecipe

import (
	"slices"
	"strings"
)

// Recipe names the recipe whose node names a lock path's children carry.
type Recipe string

// The recipes ReadQueue recognises. Their names are Curator's, so a queue
// of Curator's Java contenders reads the same.
const (
	// RecipeMutex is Mutex and Curator's InterProcessMutex (and its
	// LeaderSelector): _c_<uuid>-lock-<sequence>; the first holds.
	RecipeMutex Recipe = "mutex"
	// RecipeReadWrite is RWMutex and Curator's InterProcessReadWriteLock:
	// __READ__ and __WRIT__; a writer holds when first, a reader when no
	// writer comes before it.
	RecipeReadWrite Recipe = "read-write"
	// RecipeLatch is Election and Curator's LeaderLatch: latch-; the
	// first leads.
	RecipeLatch Recipe = "leader latch"
	// RecipeLeases is the leases of Semaphore and Curator's
	// InterProcessSemaphoreV2: lease- under <path>/leases. How many may
	// hold is the application's number, which no node records, so no
	// lease is marked as holding.
	RecipeLeases Recipe = "semaphore leases"
)

// Contender is one child of a lock path, as the recipe judges it.
type Contender struct {
	Name  string
	Write bool // an exclusive node: a mutex's, a latch's or a writer's
	// Holds says the node holds the lock (leads, for a latch) by the
	// recipe's rule; otherwise Waits names the node it waits for.
	Holds bool
	Waits string
}

// recipeNames are the lock names of each recipe, in the order a name is
// tried (__READ__/__WRIT__ first: they contain no other recipe's name).
var recipeNames = []struct {
	name   string
	recipe Recipe
	key    keyFunc
}{
	{readName, RecipeReadWrite, rwKey}, {writeName, RecipeReadWrite, rwKey},
	{mutexName, RecipeMutex, mutexKey}, {latchName, RecipeLatch, latchKey},
	{leaseName, RecipeLeases, func(s string) string { return sortKey(s, leaseName) }},
}

// ReadQueue reads the children of a lock path, named as the server lists
// them, as the recipes do: ok is false unless every child carries one
// recipe's lock name followed by a sequence number. The contenders come in
// the recipe's order (the order in which they get the lock), each judged
// by the recipe's rule.
func ReadQueue(children []string) (recipe Recipe, queue []Contender, ok bool) {
	if len(children) == 0 {
		return "", nil, false
	}
	var key keyFunc
	for _, name := range children {
		r, k, found := recipeOf(name)
		if !found || recipe != "" && r != recipe {
			return "", nil, false
		}
		recipe, key = r, k
	}
	o := newOrder(children, key)
	idx := make([]int, len(children))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(o.keys[a], o.keys[b]) })
	for _, i := range idx {
		c := Contender{Name: children[i], Write: recipe != RecipeLeases}
		switch recipe {
		case RecipeMutex, RecipeLatch:
			c.Holds, c.Waits = exclusive(o, i)
		case RecipeReadWrite:
			c.Write = isWriter(c.Name)
			if c.Write {
				c.Holds, c.Waits = exclusive(o, i)
			} else {
				c.Holds, c.Waits = shared(o, i)
			}
		}
		queue = append(queue, c)
	}
	return recipe, queue, true
}

// recipeOf finds the recipe whose lock name, followed by a sequence number,
// ends name.
func recipeOf(name string) (Recipe, keyFunc, bool) {
	for _, rn := range recipeNames {
		i := strings.LastIndex(name, rn.name)
		if i < 0 {
			continue
		}
		seq := name[i+len(rn.name):]
		if len(seq) >= 10 && strings.Trim(seq, "-0123456789") == "" {
			return rn.recipe, rn.key, true
		}
	}
	return "", nil, false
}
