package tree_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// BenchmarkOps times the tree's reads and writes on zkload -fill's tree of
// a million znodes (1000 x 1000), at random existing paths: what the
// tree's layout costs each request, without the server around it.
//
//	go test -run '^$' -bench Ops ./tree
func BenchmarkOps(b *testing.B) {
	const parents, children = 1000, 1000
	t := fillTree(b, parents, children)
	rng := rand.New(rand.NewPCG(1, 2))
	paths := make([]string, 1<<16)
	for i := range paths {
		paths[i] = fmt.Sprintf("/p%015d/c%015d", rng.IntN(parents), rng.IntN(children))
	}
	open := []wire.Id{}
	b.Run("Get", func(b *testing.B) {
		for i := range b.N {
			if _, _, code := t.Get(paths[i&(len(paths)-1)], open); code != wire.CodeOK {
				b.Fatal(code)
			}
		}
	})
	// GetDependent makes each Get wait for the one before (its path depends
	// on the node read), as a server's requests, far apart, do: Get alone
	// lets the processor overlap one lookup's cache misses with the next's.
	b.Run("GetDependent", func(b *testing.B) {
		j := 0
		for i := range b.N {
			_, st, code := t.Get(paths[(i+j)&(len(paths)-1)], open)
			if code != wire.CodeOK {
				b.Fatal(code)
			}
			j += int(st.Version) // 0, but known only once the node is read
		}
	})
	b.Run("Exists", func(b *testing.B) {
		for i := range b.N {
			if _, code := t.Exists(paths[i&(len(paths)-1)]); code != wire.CodeOK {
				b.Fatal(code)
			}
		}
	})
	zxid := int64(1 << 40)
	b.Run("SetData", func(b *testing.B) {
		data := make([]byte, 32)
		for i := range b.N {
			zxid++
			c := &tree.Context{Zxid: zxid, Time: zxid}
			if _, code := t.SetData(c, paths[i&(len(paths)-1)], data, -1); code != wire.CodeOK {
				b.Fatal(code)
			}
		}
	})
	// Create then Delete a new leaf under a random parent: the tree keeps
	// its size. Once the parents were listed, each change also updates
	// their cached order.
	createDelete := func(b *testing.B) {
		data := make([]byte, 32)
		for i := range b.N {
			zxid++
			p := paths[i&(len(paths)-1)]
			leaf := p[:len(p)-1] + "x"
			c := &tree.Context{Zxid: zxid, Time: zxid}
			args := tree.CreateArgs{Op: wire.OpCreate, Path: leaf, Data: data, ACL: wire.OpenACLUnsafe, TTL: -1}
			if _, _, code := t.Create(c, args); code != wire.CodeOK {
				b.Fatal(code)
			}
			if code := t.Delete(c, leaf, -1); code != wire.CodeOK {
				b.Fatal(code)
			}
		}
	}
	b.Run("CreateDelete", createDelete)
	b.Run("Children", func(b *testing.B) {
		for i := range b.N {
			parent := paths[i&(len(paths)-1)][:17]
			if names, _, code := t.Children(parent, open); code != wire.CodeOK || len(names) != children {
				b.Fatal(code, len(names))
			}
		}
	})
	b.Run("CreateDeleteListed", createDelete)
	// CreateMany makes b.N new children of one new parent, as zkload's
	// create workload does: a child set that keeps growing.
	b.Run("CreateMany", func(b *testing.B) {
		zxid++
		parent := fmt.Sprintf("/many%d", zxid)
		args := tree.CreateArgs{Op: wire.OpCreate, Path: parent, ACL: wire.OpenACLUnsafe, TTL: -1}
		if _, _, code := t.Create(&tree.Context{Zxid: zxid, Time: zxid}, args); code != wire.CodeOK {
			b.Fatal(code)
		}
		paths := make([]string, b.N)
		for i := range paths {
			paths[i] = fmt.Sprintf("%s/n%010d", parent, i)
		}
		b.ResetTimer()
		for i := range b.N {
			zxid++
			args.Path = paths[i]
			if _, _, code := t.Create(&tree.Context{Zxid: zxid, Time: zxid}, args); code != wire.CodeOK {
				b.Fatal(code)
			}
		}
	})
}
