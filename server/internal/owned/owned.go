// Package owned runs named goroutines that their owner waits for when it
// shuts down, and can name the ones that are slow to end.
package owned

import "sync"

// Group is a set of owned goroutines. The zero value is ready to use.
type Group struct {
	mu      sync.Mutex // guards closed, running, total, ended
	closed  bool
	running map[string]int
	total   int           // goroutines running
	ended   chan struct{} // closed when one ends, then replaced
	wg      sync.WaitGroup
}

// Go runs f on a goroutine the group waits for. It refuses (returns false)
// once Close has been called.
func (g *Group) Go(name string, f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	if g.running == nil {
		g.running = make(map[string]int)
	}
	g.wg.Add(1)
	g.running[name]++
	g.total++
	go func() {
		defer g.wg.Done()
		defer func() {
			g.mu.Lock()
			g.running[name]--
			g.total--
			if g.ended != nil {
				close(g.ended)
				g.ended = nil
			}
			g.mu.Unlock()
		}()
		f()
	}()
	return true
}

// Close refuses further goroutines; those running go on.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait waits for every goroutine started.
func (g *Group) Wait() { g.wg.Wait() }

// WaitAtMost waits until at most n goroutines run, or until done is
// closed, and reports whether they came down to n.
func (g *Group) WaitAtMost(n int, done <-chan struct{}) bool {
	for {
		g.mu.Lock()
		if g.total <= n {
			g.mu.Unlock()
			return true
		}
		if g.ended == nil {
			g.ended = make(chan struct{})
		}
		ended := g.ended
		g.mu.Unlock()
		select {
		case <-ended:
		case <-done:
			return false
		}
	}
}

// Len returns how many goroutines run.
func (g *Group) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// Running returns the goroutines still running, by name, adding them to
// into (which may be nil).
func (g *Group) Running(into map[string]int) map[string]int {
	if into == nil {
		into = make(map[string]int)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, n := range g.running {
		if n > 0 {
			into[name] += n
		}
	}
	return into
}
