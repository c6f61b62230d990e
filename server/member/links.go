package member

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Links is a switchboard for the connections between the members of a
// cluster in one process: a test cuts and restores them to provoke
// partitions. Members given the same Links (Config.Links) register every
// Raft and forwarding connection with it; a cut link closes its live
// connections and refuses new ones in both directions. A degraded link
// (Degrade) delays what is written on it and loses messages.
type Links struct {
	mu       sync.Mutex // guards cut, conns, degraded, paused
	cut      map[[2]int]bool
	conns    map[[2]int]map[*peerConn]struct{}
	degraded map[[2]int]Degradation
	paused   map[int]chan struct{} // paused members; each channel closes at the resume
}

// Degradation is how a link misbehaves. Each write waits a random time up
// to Delay before it goes out, in order. With probability Loss a write is
// lost: on a stream that means the connection breaks there, losing the
// message and whatever else was in flight, and the members dial again.
type Degradation struct {
	Delay time.Duration
	Loss  float64
}

// NewLinks returns a switchboard with every link up.
func NewLinks() *Links {
	return &Links{cut: make(map[[2]int]bool), conns: make(map[[2]int]map[*peerConn]struct{})}
}

func linkKey(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

// Partition leaves up the links between members that share a group, and
// between members named in no group, and cuts every other link. A member
// may be in several groups: Partition([]int{1, 2}, []int{2, 3}) makes 2 a
// bridge between 1 and 3, which cannot reach each other.
func (l *Links) Partition(groups ...[]int) {
	in := make(map[int]uint64) // the groups each member is in, as bits
	for i, g := range groups {
		for _, id := range g {
			in[id] |= 1 << (i % 64)
		}
	}
	l.mu.Lock()
	var toClose []*peerConn
	l.cut = make(map[[2]int]bool)
	for a := 1; a <= 254; a++ {
		for b := a + 1; b <= 254; b++ {
			if in[a]&in[b] != 0 || in[a] == 0 && in[b] == 0 {
				continue
			}
			l.cut[[2]int{a, b}] = true
			for c := range l.conns[[2]int{a, b}] {
				toClose = append(toClose, c)
			}
		}
	}
	l.mu.Unlock()
	for _, c := range toClose {
		c.Close()
	}
}

// Cut cuts the link between members a and b.
func (l *Links) Cut(a, b int) {
	l.mu.Lock()
	k := linkKey(a, b)
	l.cut[k] = true
	var toClose []*peerConn
	for c := range l.conns[k] {
		toClose = append(toClose, c)
	}
	l.mu.Unlock()
	for _, c := range toClose {
		c.Close()
	}
}

// Degrade makes the link between members a and b misbehave as d says; a
// zero Degradation restores it.
func (l *Links) Degrade(a, b int, d Degradation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d == (Degradation{}) {
		delete(l.degraded, linkKey(a, b))
		return
	}
	if l.degraded == nil {
		l.degraded = make(map[[2]int]Degradation)
	}
	l.degraded[linkKey(a, b)] = d
}

// Pause holds member id's own reads and writes on its links until Resume:
// as a stopped process, it sends nothing and takes nothing in, while its
// connections stay open and what the others send waits in them. A member
// must be resumed before it is closed.
func (l *Links) Pause(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused == nil {
		l.paused = make(map[int]chan struct{})
	}
	if l.paused[id] == nil {
		l.paused[id] = make(chan struct{})
	}
}

// Resume lets member id's links carry what Pause held, and more.
func (l *Links) Resume(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch := l.paused[id]; ch != nil {
		close(ch)
		delete(l.paused, id)
	}
}

// Heal restores every link, cut or degraded.
func (l *Links) Heal() {
	l.mu.Lock()
	l.cut = make(map[[2]int]bool)
	l.degraded = nil
	l.mu.Unlock()
}

// beforeWrite applies the link's state to one write from a to b: it waits
// while a is paused and out a degraded link's delay, and reports false if
// the write is to be lost.
func (l *Links) beforeWrite(a, b int) bool {
	if l == nil {
		return true
	}
	l.waitResumed(a)
	l.mu.Lock()
	d, ok := l.degraded[linkKey(a, b)]
	l.mu.Unlock()
	if !ok {
		return true
	}
	return l.degrade(d)
}

// waitResumed waits while member id is paused.
func (l *Links) waitResumed(id int) {
	if l == nil {
		return
	}
	for {
		l.mu.Lock()
		hold := l.paused[id]
		l.mu.Unlock()
		if hold == nil {
			return
		}
		<-hold
	}
}

// degrade waits out a degraded link's delay, and reports false if the
// write is to be lost.
func (l *Links) degrade(d Degradation) bool {
	if d.Delay > 0 {
		time.Sleep(rand.N(d.Delay)) // the injected latency itself
	}
	return d.Loss <= 0 || rand.Float64() >= d.Loss
}

// up reports whether members a and b may talk.
func (l *Links) up(a, b int) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.cut[linkKey(a, b)]
}

// track registers a live connection between a and b; false if the link is cut.
func (l *Links) track(c *peerConn) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := linkKey(c.local, c.remoteID())
	if l.cut[k] {
		return false
	}
	if l.conns[k] == nil {
		l.conns[k] = make(map[*peerConn]struct{})
	}
	l.conns[k][c] = struct{}{}
	return true
}

func (l *Links) untrack(c *peerConn) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns[linkKey(c.local, c.remoteID())], c)
}
