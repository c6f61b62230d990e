//go:build !race

package servertest_test

// raceEnabled reports a -race build.
const raceEnabled = false
