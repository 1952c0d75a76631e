package usage_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apistack/platform/libs/apiserver/usage"
)

// BenchmarkAdd is the cost a request limited by identity pays for its usage count: one
// principal (the common case of a few keys, each sending many requests) and 1,000.
func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run("principals="+strconv.Itoa(n), func(b *testing.B) {
			c := usage.New(usage.Config{})
			ids := make([]string, n)
			for i := range ids {
				ids[i] = "key-" + strconv.Itoa(i)
			}
			for _, id := range ids {
				_ = c.Add(id, true)
			}
			// Steady state: the principals were met before, and a flush made them read-only.
			if err := c.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = c.Add(ids[i%n], true)
				i++
			}
		})
	}
}
