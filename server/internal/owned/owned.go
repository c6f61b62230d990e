// Package owned runs named goroutines that their owner waits for when it
// shuts down, and can name the ones that are slow to end.
package owned

import "sync"

// Group is a set of owned goroutines. The zero value is ready to use.
type Group struct {
	mu      sync.Mutex // guards closed, running
	closed  bool
	running map[string]int
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
	go func() {
		defer g.wg.Done()
		defer func() {
			g.mu.Lock()
			g.running[name]--
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
