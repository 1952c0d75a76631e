//go:build !unix

package testdb

import "testing"

// lock is a no-op where flock is unavailable; run full-data tests with -p 1 there.
func lock(testing.TB, string) func() { return func() {} }
