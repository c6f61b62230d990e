package tree_test

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// BenchmarkMemoryPerZnode builds the tree zkload -fill builds on a server
// (parents x children, 16-character names, 32 bytes of data each) and
// reports the live heap it holds per znode, with and without a snapshot
// open: what the tree's layout costs, without Raft's log or the server
// around it; and how long a full collection takes with the tree in the
// heap (gc-ms) and how many heap objects there are (objects/znode), which
// is what the collector's work grows with. b.N is ignored past one tree;
// run with -benchtime 1x.
//
//	go test -run '^$' -bench MemoryPerZnode -benchtime 1x ./tree
func BenchmarkMemoryPerZnode(b *testing.B) {
	for _, size := range []struct{ parents, children int }{{100, 1000}, {1000, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", size.parents, size.children), func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				t := fillTree(b, size.parents, size.children)
				nodes := float64(size.parents * (1 + size.children))
				b.ReportMetric(float64(liveHeap()-before)/nodes, "heap-B/znode")
				start := time.Now()
				for range 5 {
					runtime.GC()
				}
				b.ReportMetric(time.Since(start).Seconds()*1000/5, "gc-ms")
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapObjects)/nodes, "objects/znode")
				snap := t.Snapshot(nil)
				b.ReportMetric(float64(liveHeap()-before)/nodes, "with-snapshot-B/znode")
				snap.Close()
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

// fillTree builds zkload -fill's tree: parents x children, 16-character
// names, 32 bytes of data, each create's path and data decoded anew as a
// server's are.
func fillTree(b *testing.B, parents, children int) *tree.Tree {
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
		args := tree.CreateArgs{Op: wire.OpCreate, Path: strings.Clone(path),
			Data: append([]byte(nil), data...), ACL: wire.OpenACLUnsafe, TTL: -1}
		if _, _, code := t.Create(c, args); code != wire.CodeOK {
			b.Fatalf("create %s: %v", path, code)
		}
	}
	for p := range parents {
		parent := "/" + name('p', p)
		create(parent)
		for c := range children {
			create(parent + "/" + name('c', c))
		}
	}
	return t
}

// BenchmarkSnapshotRestore measures a snapshot of zkload -fill's tree:
// opening it (what stops the tree's writers), writing it out while a
// writer changes the tree as fast as it can (how long that writer ever
// waited for the lock (p99 and max), and how many of its changes the tree kept a copy
// for), and restoring a tree from it (what a restart waits for).
//
//	go test -run '^$' -bench SnapshotRestore -benchtime 3x ./tree
func BenchmarkSnapshotRestore(b *testing.B) {
	for _, size := range []struct{ parents, children int }{{100, 1000}, {1000, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", size.parents, size.children), func(b *testing.B) {
			t := fillTree(b, size.parents, size.children)
			var mu sync.RWMutex
			var open, write, restore time.Duration
			var waits []time.Duration
			var changes, kept int
			var buf bytes.Buffer
			zxid := int64(1 << 40)
			for range b.N {
				buf.Reset()
				start := time.Now()
				mu.Lock()
				snap := t.Snapshot(&mu)
				mu.Unlock()
				open += time.Since(start)

				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						path := fmt.Sprintf("/p%015d/c%015d", i%size.parents, (i/size.parents*7919)%size.children)
						asked := time.Now()
						mu.Lock()
						waits = append(waits, time.Since(asked))
						zxid++
						if _, code := t.SetData(&tree.Context{Zxid: zxid, Time: zxid}, path, []byte("x"), -1); code != wire.CodeOK {
							b.Errorf("setData %s: %v", path, code)
						}
						mu.Unlock()
						changes++
					}
				})
				start = time.Now()
				_, err := snap.WriteTo(&buf)
				write += time.Since(start)
				close(stop)
				wg.Wait()
				if err != nil {
					b.Fatal(err)
				}
				kept += snap.Preserved()
				snap.Close()

				start = time.Now()
				back, err := tree.Restore(bytes.NewReader(buf.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				restore += time.Since(start)
				if back.Len() != t.Len() {
					b.Fatalf("restored %d nodes of %d", back.Len(), t.Len())
				}
			}
			n := float64(b.N)
			b.ReportMetric(open.Seconds()*1000/n, "open-ms")
			b.ReportMetric(write.Seconds()*1000/n, "write-ms")
			slices.Sort(waits)
			b.ReportMetric(waits[len(waits)*99/100].Seconds()*1000, "p99-wait-ms")
			b.ReportMetric(waits[len(waits)-1].Seconds()*1000, "max-wait-ms")
			b.ReportMetric(float64(changes)/n, "changes/write")
			b.ReportMetric(float64(kept)/n, "kept/write")
			b.ReportMetric(restore.Seconds()*1000/n, "restore-ms")
			b.ReportMetric(float64(buf.Len())/(1<<20), "MiB")
		})
	}
}
