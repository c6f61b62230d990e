package owned

import (
	"testing"
)

func TestGroup(t *testing.T) {
	var g Group
	release := make(chan struct{})
	started := make(chan struct{})
	if !g.Go("worker", func() { close(started); <-release }) {
		t.Fatal("Go refused before Close")
	}
	<-started
	if got := g.Running(nil); got["worker"] != 1 {
		t.Fatalf("Running = %v, want worker: 1", got)
	}
	g.Close()
	if g.Go("late", func() {}) {
		t.Fatal("Go ran a goroutine after Close")
	}
	close(release)
	g.Wait()
	if got := g.Running(map[string]int{"other": 2}); len(got) != 1 || got["other"] != 2 {
		t.Fatalf("Running after Wait = %v, want only the map passed in", got)
	}
}

// WaitAtMost returns once enough goroutines have ended, and not before;
// done ends the wait early.
func TestGroup_WaitAtMost(t *testing.T) {
	var g Group
	release := make(chan struct{})
	for range 3 {
		g.Go("worker", func() { <-release })
	}
	if g.Len() != 3 {
		t.Fatalf("Len = %d, want 3", g.Len())
	}
	stop := make(chan struct{})
	close(stop)
	if g.WaitAtMost(0, stop) {
		t.Fatal("WaitAtMost(0) returned true while three run")
	}
	if !g.WaitAtMost(3, nil) {
		t.Fatal("WaitAtMost(3) with three running")
	}
	close(release)
	if !g.WaitAtMost(0, nil) {
		t.Fatal("WaitAtMost(0) after all ended")
	}
	if g.Len() != 0 {
		t.Fatalf("Len = %d after all ended", g.Len())
	}
}
