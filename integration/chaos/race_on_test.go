//go:build race

package chaos_test

// raceEnabled reports a -race build.
const raceEnabled = true
