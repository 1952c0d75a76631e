// Package hist records latencies in an HDR-style log-linear histogram with fixed
// memory and a relative error below 1%, safe for concurrent recording.
package hist

import (
	"math"
	"math/bits"
	"strconv"
	"sync/atomic"
	"time"
)

const (
	subBits    = 7                  // 128 sub-buckets per power of two: relative error < 1/128
	subCount   = 1 << subBits       // 128
	linearTop  = 2 * subCount       // values below this are counted exactly
	maxShift   = 40 - (subBits + 1) // largest tracked value is just under 2^40 ns (about 18 min)
	numBuckets = linearTop + maxShift*subCount
	// MaxValue is the largest value tracked exactly by bucket; larger values are clamped.
	MaxValue = int64(1)<<40 - 1
)

// Histogram counts non-negative int64 values (nanoseconds by convention).
// The zero value is ready to use; all methods are safe for concurrent use.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Int64
	min    atomic.Int64 // stored as value+1 so that zero means "unset"
	max    atomic.Int64
}

// bucketOf maps a value to its bucket index.
func bucketOf(v int64) int {
	if v < 0 {
		v = 0
	}
	if v > MaxValue {
		v = MaxValue
	}
	if v < linearTop {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - (subBits + 1) // v>>shift lies in [subCount, 2*subCount)
	top := int(v >> shift)
	return linearTop + (shift-1)*subCount + (top - subCount)
}

// bucketRange returns the smallest and largest value that fall into bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < linearTop {
		return int64(i), int64(i)
	}
	j := i - linearTop
	shift := j/subCount + 1
	top := int64(j%subCount + subCount)
	lo = top << shift
	hi = lo + (int64(1) << shift) - 1
	return lo, hi
}

// Record adds one value.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		cur := h.min.Load()
		if cur != 0 && cur-1 <= v {
			break
		}
		if h.min.CompareAndSwap(cur, v+1) {
			break
		}
	}
	for {
		cur := h.max.Load()
		if cur >= v {
			break
		}
		if h.max.CompareAndSwap(cur, v) {
			break
		}
	}
}

// RecordDuration adds one duration.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value counted in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(o.total.Load())
	h.sum.Add(o.sum.Load())
	if m := o.min.Load(); m != 0 {
		for {
			cur := h.min.Load()
			if cur != 0 && cur <= m {
				break
			}
			if h.min.CompareAndSwap(cur, m) {
				break
			}
		}
	}
	if m := o.max.Load(); m > h.max.Load() {
		for {
			cur := h.max.Load()
			if cur >= m || h.max.CompareAndSwap(cur, m) {
				break
			}
		}
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Max is the largest recorded value, 0 when empty.
func (h *Histogram) Max() int64 { return h.max.Load() }

// Min is the smallest recorded value, 0 when empty.
func (h *Histogram) Min() int64 {
	if m := h.min.Load(); m != 0 {
		return m - 1
	}
	return 0
}

// Mean is the arithmetic mean, 0 when empty.
func (h *Histogram) Mean() float64 {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return float64(h.sum.Load()) / float64(n)
}

// Quantile returns the value at quantile q (0..1): the highest value of the bucket
// that holds the ceil(q*n)-th smallest value, capped by the recorded maximum, so the
// answer is never below the true quantile and at most 1% above it. Empty: 0.
func (h *Histogram) Quantile(q float64) int64 {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min()
	}
	if q >= 1 {
		return h.Max()
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			_, hi := bucketRange(i)
			if mx := h.Max(); hi > mx {
				hi = mx
			}
			if mn := h.Min(); hi < mn {
				hi = mn
			}
			return hi
		}
	}
	return h.Max()
}

// Summary is a snapshot of the usual percentiles, in nanoseconds.
type Summary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ns"`
	P50   int64   `json:"p50_ns"`
	P90   int64   `json:"p90_ns"`
	P99   int64   `json:"p99_ns"`
	Max   int64   `json:"max_ns"`
}

// Summarize takes a snapshot of h.
func (h *Histogram) Summarize() Summary {
	return Summary{
		Count: h.Count(),
		Mean:  h.Mean(),
		P50:   h.Quantile(0.50),
		P90:   h.Quantile(0.90),
		P99:   h.Quantile(0.99),
		Max:   h.Max(),
	}
}

// FormatNs prints a nanosecond value as a duration with three significant digits.
func FormatNs(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return trim(float64(d)/float64(time.Second), "s")
	case d >= time.Millisecond:
		return trim(float64(d)/float64(time.Millisecond), "ms")
	case d >= time.Microsecond:
		return trim(float64(d)/float64(time.Microsecond), "µs")
	default:
		return trim(float64(d), "ns")
	}
}

func trim(v float64, unit string) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + unit
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + unit
	default:
		return strconv.FormatFloat(v, 'f', 2, 64) + unit
	}
}
