package tree_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// BenchmarkMemoryPerZnode builds the tree zkload -fill builds on a server
// (parents x children, 16-character names, 32 bytes of data each) and
// reports the live heap it holds per znode, with and without a snapshot
// captured: what the tree's layout costs, without Raft's log or the
// server around it. b.N is ignored past one tree; run with -benchtime 1x.
//
//	go test -run '^$' -bench MemoryPerZnode -benchtime 1x ./tree
func BenchmarkMemoryPerZnode(b *testing.B) {
	for _, size := range []struct{ parents, children int }{{100, 1000}, {1000, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", size.parents, size.children), func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				t := tree.New()
				data := make([]byte, 32)
				name := func(kind byte, i int) string {
					digits := fmt.Sprint(i)
					return string(kind) + strings.Repeat("0", 15-len(digits)) + digits
				}
				zxid := int64(1)
				create := func(path string) {
					zxid++
					c := &tree.Context{Zxid: zxid, Time: zxid}
					// As a server does: each request's path and data decoded anew.
					args := tree.CreateArgs{Op: wire.OpCreate, Path: strings.Clone(path),
						Data: append([]byte(nil), data...), ACL: wire.OpenACLUnsafe, TTL: -1}
					if _, _, code := t.Create(c, args); code != wire.CodeOK {
						b.Fatalf("create %s: %v", path, code)
					}
				}
				for p := range size.parents {
					parent := "/" + name('p', p)
					create(parent)
					for c := range size.children {
						create(parent + "/" + name('c', c))
					}
				}
				nodes := float64(size.parents * (1 + size.children))
				b.ReportMetric(float64(liveHeap()-before)/nodes, "heap-B/znode")
				snap := t.Snapshot()
				b.ReportMetric(float64(liveHeap()-before)/nodes, "with-snapshot-B/znode")
				runtime.KeepAlive(snap)
				runtime.KeepAlive(t)
			}
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
