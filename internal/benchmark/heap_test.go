package benchmark

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"
)

// heapSampler measures the heap a listing holds: HeapInuse after a full GC
// at page boundaries, less HeapInuse after a full GC before the listing
// started (which holds the server's pre-encoded pages, the same for both
// sides and growing with the data set, so it is left out); and likewise
// the live heap (runtime/metrics' /gc/heap/live:bytes), which counts
// objects rather than spans and so moves less with where they fall.
type heapSampler struct {
	base, max         uint64 // HeapInuse
	liveBase, liveMax uint64
}

func newHeapSampler() *heapSampler {
	inuse, live := heapInuse()
	return &heapSampler{base: inuse, liveBase: live}
}

// heapInuse returns HeapInuse and the live heap after two full GCs: the
// first only moves sync.Pool contents to the victim cache, the second
// drops them. Pooled buffers (the loopback server's, net/http's) are one
// per P at most, not more with more pages; counted, they made the live
// heap of a long listing look 40-70 KiB larger with GOMAXPROCS 4.
func heapInuse() (inuse, live uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return m.HeapInuse, sample[0].Value.Uint64()
}

func (h *heapSampler) sample() {
	inuse, live := heapInuse()
	h.max = max(h.max, inuse)
	h.liveMax = max(h.liveMax, live)
}

// held is the most HeapInuse the listing held above the starting heap.
func (h *heapSampler) held() uint64 {
	return above(h.max, h.base)
}

// liveHeld is the most live heap the listing held above the starting heap.
func (h *heapSampler) liveHeld() uint64 {
	return above(h.liveMax, h.liveBase)
}

func above(x, base uint64) uint64 {
	if x < base {
		return 0
	}
	return x - base
}

// heapEvery returns a callback for the range helpers that samples the heap
// at the first User of every pageStride-th page, while that page is held.
func heapEvery(h *heapSampler, pageStride int) func(n int) {
	return func(n int) {
		if n%(benchPageSize*pageStride) == 0 {
			h.sample()
		}
	}
}

// BenchmarkListHeap reports heap-bytes, the most heap the range over every
// User holds (see heapSampler), sampled at every page. It must be flat in
// the number of pages. Its time is dominated by the GCs and means nothing.
func BenchmarkListHeap(b *testing.B) {
	ctx := context.Background()
	for _, size := range benchListSizes() {
		s := newBenchServer(b, size, 600*time.Second)
		warmBenchServer(b, s)
		run := func(b *testing.B, rangeAll func(each func(int)) (int, error)) {
			var held, live uint64
			for b.Loop() {
				h := newHeapSampler()
				n, err := rangeAll(heapEvery(h, 1))
				if err != nil || n != size {
					b.Fatalf("ranged over %d of %d Users: %v", n, size, err)
				}
				held = max(held, h.held())
				live = max(live, h.liveHeld())
			}
			b.ReportMetric(float64(held), "heap-bytes")
			b.ReportMetric(float64(live), "live-bytes")
		}
		b.Run("users="+strconv.Itoa(size), func(b *testing.B) {
			runImpls(b, func(b *testing.B) { // impl=sdk
				c := newBenchSDK(b, s, nil)
				run(b, func(each func(int)) (int, error) { return benchRangeSDK(ctx, c, each) })
			}, func(b *testing.B) { // impl=baseline
				c := newBenchBaseline(b, s, nil)
				run(b, func(each func(int)) (int, error) { return benchRangeBaseline(ctx, c, each) })
			})
		})
	}
}

// TestListHeapFlat: ranging over 100 000 Users holds less than twice the
// HeapInuse that ranging over 10 000 holds (plus a little slack for the
// runtime's own noise: HeapInuse counts spans, and where the pages' objects
// fall moves it by tens of KiB), and at most 32 KiB more live heap: the
// repeated-link guard keeps 8 bytes per page followed (8 KiB for 1000
// pages, twice that while its slice grows), the page in flight when a
// sample is taken adds up to 8 KiB more with GOMAXPROCS 4 or more, and
// nothing else grows with the number of pages (a leak of 36 bytes per page
// would fail). Measured, 15 runs each under -race: +13 KiB at most with
// GOMAXPROCS 2, +23 KiB with 4; in use 1.0-2.4x.
func TestListHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("ranges over 110 000 Users")
	}
	ctx := context.Background()
	held := func(users, stride int) (inuse, live uint64) {
		s := newBenchServer(t, users, 600*time.Second)
		c := newBenchSDK(t, s, nil)
		h := newHeapSampler()
		n, err := benchRangeSDK(ctx, c, heapEvery(h, stride))
		if err != nil || n != users {
			t.Fatalf("ranged over %d of %d Users: %v", n, users, err)
		}
		return h.held(), h.liveHeld()
	}
	small, smallLive := held(10_000, 5)
	large, largeLive := held(benchLargeUsers, 50)
	t.Logf("heap held ranging: 10 000 Users %d bytes in use, %d live; 100 000 Users %d in use (%.2fx), %d live (%.2fx)",
		small, smallLive, large, float64(large)/float64(small), largeLive, float64(largeLive)/float64(smallLive))
	const slack = 256 << 10
	if large > 2*small+slack {
		t.Errorf("ranging over 100 000 Users held %d bytes of heap, 10 000 held %d: the listing grows with the pages", large, small)
	}
	const liveGrowth = 32 << 10
	if largeLive > smallLive+liveGrowth {
		t.Errorf("ranging over 100 000 Users held %d bytes of live heap, 10 000 held %d: more than the link guard's %d bytes grows with the pages", largeLive, smallLive, liveGrowth)
	}
}
