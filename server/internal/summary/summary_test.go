package summary

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestSummary_Empty(t *testing.T) {
	var s Summary
	if got := s.Snapshot(); got != (Snapshot{}) || got.Avg() != 0 {
		t.Fatalf("empty summary: %+v avg %v", got, got.Avg())
	}
}

func TestSummary_ExactBelowLinear(t *testing.T) {
	var s Summary
	for v := range int64(10) { // 0..9, ten samples each
		for range 10 {
			s.Add(v)
		}
	}
	got := s.Snapshot()
	want := Snapshot{Count: 100, Sum: 450, Min: 0, Max: 9, P50: 4, P95: 9, P99: 9, P999: 9}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got.Avg() != 4.5 {
		t.Fatalf("avg %v, want 4.5", got.Avg())
	}
}

// TestSummary_QuantilesWithinBucketError compares the estimates with the
// exact quantiles of random samples over a wide range.
func TestSummary_QuantilesWithinBucketError(t *testing.T) {
	tests := []struct {
		name string
		gen  func(r *rand.Rand) int64
	}{
		{"uniform 0..1000", func(r *rand.Rand) int64 { return r.Int64N(1000) }},
		{"exponential mean 50", func(r *rand.Rand) int64 { return int64(r.ExpFloat64() * 50) }},
		{"large", func(r *rand.Rand) int64 { return 1<<40 + r.Int64N(1<<40) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var s Summary
			vals := make([]int64, 20000)
			for i := range vals {
				vals[i] = tt.gen(r)
				s.Add(vals[i])
			}
			slices.Sort(vals)
			got := s.Snapshot()
			for _, c := range []struct {
				q   float64
				est int64
			}{{0.5, got.P50}, {0.95, got.P95}, {0.99, got.P99}, {0.999, got.P999}} {
				exact := vals[int(c.q*float64(len(vals)))-1]
				if diff := float64(c.est - exact); diff > float64(exact)/8+1 || -diff > float64(exact)/8+1 {
					t.Errorf("q%v: estimate %d, exact %d", c.q, c.est, exact)
				}
			}
			if got.Min != vals[0] || got.Max != vals[len(vals)-1] || got.Count != int64(len(vals)) {
				t.Errorf("min/max/count %d/%d/%d, want %d/%d/%d", got.Min, got.Max, got.Count, vals[0], vals[len(vals)-1], len(vals))
			}
		})
	}
}

func TestSummary_BucketsCoverEveryValue(t *testing.T) {
	for _, v := range []int64{0, 63, 64, 65, 127, 128, 1000, 1 << 30, 1<<62 - 1, 1 << 62, 1<<63 - 1} {
		i := index(v)
		if i < 0 || i >= buckets {
			t.Fatalf("index(%d) = %d, outside 0..%d", v, i, buckets-1)
		}
		if mid := value(i); v >= linear && (float64(mid-v) > float64(v)/16+1 || float64(v-mid) > float64(v)/16+1) {
			t.Fatalf("value(index(%d)) = %d: more than 1/16 off", v, mid)
		}
	}
}

func TestSummary_ConcurrentAddsAndReset(t *testing.T) {
	var s Summary
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				s.Add(int64(g*1000 + i))
			}
		})
	}
	wg.Wait()
	got := s.Snapshot()
	if got.Count != 4000 || got.Min != 0 || got.Max != 3999 || got.Sum != 3999*4000/2 {
		t.Fatalf("after concurrent adds: %+v", got)
	}
	s.Reset()
	if got := s.Snapshot(); got != (Snapshot{}) {
		t.Fatalf("after reset: %+v", got)
	}
}

func TestSizes(t *testing.T) {
	var z Sizes
	if l, lo, hi := z.Get(); l != -1 || lo != -1 || hi != -1 {
		t.Fatalf("empty: %d %d %d", l, lo, hi)
	}
	for _, n := range []int{16, 93, 0, 40} {
		z.Add(n)
	}
	if l, lo, hi := z.Get(); l != 40 || lo != 0 || hi != 93 {
		t.Fatalf("got last %d min %d max %d, want 40 0 93", l, lo, hi)
	}
	z.Reset()
	if l, _, _ := z.Get(); l != -1 {
		t.Fatalf("after reset last %d", l)
	}
}

func BenchmarkSummaryAdd(b *testing.B) {
	var s Summary
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var v int64
		for pb.Next() {
			s.Add(v & 1023)
			v++
		}
	})
}
