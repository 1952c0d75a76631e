package hist

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestBucketsCoverEveryValueInOrder(t *testing.T) {
	prevHi := int64(-1)
	for i := 0; i < numBuckets; i++ {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, prevHi+1)
		}
		if hi < lo {
			t.Fatalf("bucket %d: hi %d < lo %d", i, hi, lo)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d,%d] maps to %d,%d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		prevHi = hi
	}
	if prevHi != MaxValue {
		t.Fatalf("last bucket ends at %d, want %d", prevHi, MaxValue)
	}
}

func TestQuantileWithinOnePercentOfExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]int64, 100_000)
	for i := range vals {
		// log-uniform between 1µs and 1s, like latencies
		v := int64(1000 * float64(uint64(1)<<r.IntN(20)) * (1 + r.Float64()))
		vals[i] = v
		h.Record(v)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		idx := int(q*float64(len(vals))+0.999999) - 1
		exact := vals[idx]
		got := h.Quantile(q)
		if got < exact || float64(got) > float64(exact)*1.01 {
			t.Errorf("q%.3f = %d, exact %d (want within +1%%)", q, got, exact)
		}
	}
	if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
		t.Errorf("min/max = %d/%d, want %d/%d", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
	}
	if h.Count() != uint64(len(vals)) {
		t.Errorf("count = %d", h.Count())
	}
}

func TestQuantileSmallExactValues(t *testing.T) {
	var h Histogram
	for v := int64(1); v <= 100; v++ {
		h.Record(v)
	}
	cases := map[float64]int64{0.5: 50, 0.9: 90, 0.99: 99, 1: 100, 0: 1}
	for q, want := range cases {
		if got := h.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %d, want %d", q, got, want)
		}
	}
	if h.Mean() != 50.5 {
		t.Errorf("Mean = %v", h.Mean())
	}
}

func TestEmptyHistogramAnswersZero(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram must answer zeros")
	}
}

func TestHugeAndNegativeValuesAreClamped(t *testing.T) {
	var h Histogram
	h.Record(-5)
	h.Record(MaxValue * 4)
	if h.Min() != 0 {
		t.Errorf("min = %d", h.Min())
	}
	if got := h.Quantile(0.99); got > MaxValue*4 || got < MaxValue/2 {
		t.Errorf("p99 = %d", got)
	}
}

func TestMergeEqualsRecordingEverything(t *testing.T) {
	var a, b, all Histogram
	for v := int64(0); v < 5000; v += 7 {
		a.Record(v * 1000)
		all.Record(v * 1000)
	}
	for v := int64(3); v < 9000; v += 11 {
		b.Record(v * 999)
		all.Record(v * 999)
	}
	a.Merge(&b)
	if a.Summarize() != all.Summarize() {
		t.Fatalf("merged %+v, want %+v", a.Summarize(), all.Summarize())
	}
}

func TestConcurrentRecordCountsEverything(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 1000; i++ {
				h.Record(int64(g*1000 + i))
			}
		})
	}
	wg.Wait()
	if h.Count() != 8000 || h.Max() != 7999 || h.Min() != 0 {
		t.Fatalf("count %d min %d max %d", h.Count(), h.Min(), h.Max())
	}
}

func TestFormatNs(t *testing.T) {
	cases := map[int64]string{
		512:           "512ns",
		1_500:         "1.50µs",
		12_340_000:    "12.3ms",
		2_500_000_000: "2.50s",
	}
	for in, want := range cases {
		if got := FormatNs(in); got != want {
			t.Errorf("FormatNs(%d) = %q, want %q", in, got, want)
		}
	}
}
