//go:build !race

package testdb

const raceEnabled = false
