package benchmark

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// heapSampler measures the heap a listing holds: HeapInuse after a full GC
// at page boundaries, less HeapInuse after a full GC before the listing
// started (which holds the server's pre-encoded pages, the same for both
// sides and growing with the data set, so it is left out).
type heapSampler struct {
	base, max uint64
}

func newHeapSampler() *heapSampler {
	runtime.GC() // a first GC only moves sync.Pool contents to the victim cache
	return &heapSampler{base: heapInuse()}
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func (h *heapSampler) sample() {
	h.max = max(h.max, heapInuse())
}

// held is the most the listing held above the starting heap.
func (h *heapSampler) held() uint64 {
	if h.max < h.base {
		return 0
	}
	return h.max - h.base
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
			var held uint64
			for b.Loop() {
				h := newHeapSampler()
				n, err := rangeAll(heapEvery(h, 1))
				if err != nil || n != size {
					b.Fatalf("ranged over %d of %d Users: %v", n, size, err)
				}
				held = max(held, h.held())
			}
			b.ReportMetric(float64(held), "heap-bytes")
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
// heap that ranging over 10 000 holds (plus a little slack for the
// runtime's own noise): nothing grows with the number of pages.
func TestListHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("ranges over 110 000 Users")
	}
	ctx := context.Background()
	held := func(users, stride int) uint64 {
		s := newBenchServer(t, users, 600*time.Second)
		c := newBenchSDK(t, s, nil)
		h := newHeapSampler()
		n, err := benchRangeSDK(ctx, c, heapEvery(h, stride))
		if err != nil || n != users {
			t.Fatalf("ranged over %d of %d Users: %v", n, users, err)
		}
		return h.held()
	}
	small := held(10_000, 5)
	large := held(benchLargeUsers, 50)
	t.Logf("heap held ranging: 10 000 Users %d bytes, 100 000 Users %d bytes", small, large)
	const slack = 256 << 10
	if large > 2*small+slack {
		t.Errorf("ranging over 100 000 Users held %d bytes of heap, 10 000 held %d: the listing grows with the pages", large, small)
	}
}
