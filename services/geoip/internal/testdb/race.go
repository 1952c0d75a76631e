//go:build race

package testdb

const raceEnabled = true
