//go:build race

package apiserver_test

// raceEnabled: the race detector is on. sync.Pool then drops a quarter of
// what is put back at random, so allocation counts are not the program's.
const raceEnabled = true
