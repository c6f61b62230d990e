//go:build race

package lockrecipe_test

// raceEnabled reports a -race build.
const raceEnabled = true
