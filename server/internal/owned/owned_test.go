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
