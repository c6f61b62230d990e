package wire

import (
	"fmt"
	"testing"
)

// BenchmarkAppendStrings encodes a getChildren reply's names onto a small
// buffer, as a connection's queue holds between replies.
func BenchmarkAppendStrings(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("c%015d", i)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				AppendStrings(make([]byte, 0, 512), names)
			}
		})
	}
}
