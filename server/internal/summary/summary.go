// Package summary keeps ZooKeeper-style summaries of integer samples
// (latencies in milliseconds, sizes in bytes): count, sum, min, max and
// quantiles, recorded lock-free with a few atomic adds so that the request
// path can afford one per request.
//
// Quantiles come from a fixed set of buckets: one per value below 64, then
// eight per power of two, so that an estimate is exact below 64 and within
// 1/16 of the true value above it (the bucket's midpoint is reported).
// Unlike ZooKeeper's Dropwizard reservoir, which favours the last few
// minutes, the figures cover everything since the start or the last Reset.
package summary

import (
	"math"
	"math/bits"
	"sync/atomic"
)

const (
	linear     = 64 // values below this have a bucket each
	subBuckets = 8  // buckets per power of two above linear
	// buckets covers values up to 2^63: 64 linear buckets, then 8 for
	// each power of two from 2^6 to 2^62.
	buckets = linear + subBuckets*(63-6)
)

// Summary is a concurrent summary of non-negative integer samples. The
// zero value is empty and ready to use.
type Summary struct {
	count, sum atomic.Int64
	min        atomic.Int64 // value+1, so that 0 means no sample yet
	max        atomic.Int64
	bucket     [buckets]atomic.Int64
}

// Add records one sample; a negative one counts as 0.
func (s *Summary) Add(v int64) {
	v = max(v, 0)
	s.count.Add(1)
	s.sum.Add(v)
	s.bucket[index(v)].Add(1)
	for cur := s.max.Load(); v > cur && !s.max.CompareAndSwap(cur, v); cur = s.max.Load() {
	}
	for cur := s.min.Load(); (cur == 0 || v+1 < cur) && !s.min.CompareAndSwap(cur, v+1); cur = s.min.Load() {
	}
}

// Reset forgets every sample. Samples recorded while it runs may be
// partly kept.
func (s *Summary) Reset() {
	s.count.Store(0)
	s.sum.Store(0)
	s.min.Store(0)
	s.max.Store(0)
	for i := range s.bucket {
		s.bucket[i].Store(0)
	}
}

// Snapshot is a summary's figures at one moment.
type Snapshot struct {
	Count, Sum, Min, Max int64
	// P50, P95, P99 and P999 are the estimated 0.5, 0.95, 0.99 and 0.999
	// quantiles; all 0 while Count is 0.
	P50, P95, P99, P999 int64
}

// Avg returns Sum/Count, 0 for no samples.
func (s Snapshot) Avg() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.Count)
}

// Snapshot returns the summary's figures. Taken while samples arrive, they
// are each up to date but not necessarily all of the same instant.
func (s *Summary) Snapshot() Snapshot {
	var counts [buckets]int64
	var n int64
	for i := range s.bucket {
		counts[i] = s.bucket[i].Load()
		n += counts[i]
	}
	out := Snapshot{Count: s.count.Load(), Sum: s.sum.Load(), Max: s.max.Load(), Min: max(s.min.Load()-1, 0)}
	if n == 0 {
		return out
	}
	qs := [...]float64{0.5, 0.95, 0.99, 0.999}
	var vals [len(qs)]int64
	var seen int64
	q := 0
	for i := 0; i < buckets && q < len(qs); i++ {
		seen += counts[i]
		for q < len(qs) && float64(seen) >= math.Ceil(qs[q]*float64(n)) {
			vals[q] = min(max(value(i), out.Min), out.Max)
			q++
		}
	}
	out.P50, out.P95, out.P99, out.P999 = vals[0], vals[1], vals[2], vals[3]
	return out
}

// index returns the bucket of v (v >= 0).
func index(v int64) int {
	if v < linear {
		return int(v)
	}
	exp := bits.Len64(uint64(v)) - 1 // 6..62
	sub := int(v>>(exp-3)) & (subBuckets - 1)
	return linear + (exp-6)*subBuckets + sub
}

// value returns the value a bucket stands for: itself below linear, else
// the middle of the bucket's range.
func value(i int) int64 {
	if i < linear {
		return int64(i)
	}
	exp := (i-linear)/subBuckets + 6
	sub := int64((i - linear) % subBuckets)
	lo := int64(1)<<exp + sub<<(exp-3)
	return lo + int64(1)<<(exp-4)
}

// Sizes tracks the last, smallest and largest of a series of sizes, as
// ZooKeeper's BufferStats: -1 for each until the first.
type Sizes struct {
	last, min, max atomic.Int64 // value+1: 0 means none yet
}

// Add records one size.
func (z *Sizes) Add(n int) {
	v := int64(n) + 1
	z.last.Store(v)
	for cur := z.max.Load(); v > cur && !z.max.CompareAndSwap(cur, v); cur = z.max.Load() {
	}
	for cur := z.min.Load(); (cur == 0 || v < cur) && !z.min.CompareAndSwap(cur, v); cur = z.min.Load() {
	}
}

// Reset forgets every size.
func (z *Sizes) Reset() {
	z.last.Store(0)
	z.min.Store(0)
	z.max.Store(0)
}

// Get returns the last, smallest and largest size, -1 each before any.
func (z *Sizes) Get() (last, smallest, largest int64) {
	return z.last.Load() - 1, z.min.Load() - 1, z.max.Load() - 1
}
