package chaos

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// linkProxies stand on the links between member processes, as
// member.Links does between members in one process: every member dials each
// other member's Raft and forwarding addresses through proxies of its own
// (zkraft -peer-via), so that the traffic of one link can be cut, delayed
// and broken without touching the rest, or the members' clients.
type linkProxies struct {
	mu      sync.Mutex // guards links, conns, closed
	links   map[[2]int]link
	conns   map[[2]int]map[net.Conn]struct{} // both ends of each proxied connection
	proxies []*proxy
	closed  bool
	wg      sync.WaitGroup
}

// link is what a link between two members does to its traffic: nothing,
// cut it, or delay each chunk up to delay and lose one (breaking its
// connection) with probability loss.
type link struct {
	cut   bool
	delay time.Duration
	loss  float64
}

// proxy carries the connections that member from dials to one of member
// to's addresses (target).
type proxy struct {
	from, to int
	ln       net.Listener
	target   string
}

func pairKey(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

func newLinkProxies() *linkProxies {
	return &linkProxies{links: make(map[[2]int]link), conns: make(map[[2]int]map[net.Conn]struct{})}
}

// add starts a proxy for member from's connections to target, an address
// of member to, and returns the address from should dial instead.
func (l *linkProxies) add(from, to int, target string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	p := &proxy{from: from, to: to, ln: ln, target: target}
	l.mu.Lock()
	l.proxies = append(l.proxies, p)
	l.mu.Unlock()
	l.wg.Go(func() { l.serve(p) })
	return ln.Addr().String(), nil
}

func (l *linkProxies) serve(p *proxy) {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		l.wg.Go(func() { l.carry(p, in) })
	}
}

// carry connects in to the proxy's target and pumps both ways until either
// side ends, the link is cut, or a chunk is lost.
func (l *linkProxies) carry(p *proxy, in net.Conn) {
	key := pairKey(p.from, p.to)
	if l.state(key).cut {
		in.Close() // a cut link refuses new connections: the dial "succeeds", the stream ends at once
		return
	}
	out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		in.Close() // the member is down: as if it refused
		return
	}
	if !l.track(key, in, out) {
		return
	}
	defer l.untrack(key, in, out)
	var wg sync.WaitGroup
	wg.Go(func() { l.pump(key, in, out) })
	l.pump(key, out, in)
	wg.Wait()
}

// pump copies src to dst through the link's faults; when it stops, both
// connections close, which stops the other direction too.
func (l *linkProxies) pump(key [2]int, src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s := l.state(key)
			if s.delay > 0 {
				time.Sleep(rand.N(s.delay)) // the injected latency itself
			}
			if s.cut || s.loss > 0 && rand.Float64() < s.loss {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (l *linkProxies) state(key [2]int) link {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.links[key]
}

func (l *linkProxies) track(key [2]int, conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.links[key].cut {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	if l.conns[key] == nil {
		l.conns[key] = make(map[net.Conn]struct{})
	}
	for _, c := range conns {
		l.conns[key][c] = struct{}{}
	}
	return true
}

func (l *linkProxies) untrack(key [2]int, conns ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		delete(l.conns[key], c)
	}
}

// set makes the links between members (as pairKey) behave as s, closing
// the connections of those it cuts.
func (l *linkProxies) set(states map[[2]int]link) {
	l.mu.Lock()
	var toClose []net.Conn
	l.links = states
	for key, s := range states {
		if s.cut {
			for c := range l.conns[key] {
				toClose = append(toClose, c)
			}
		}
	}
	l.mu.Unlock()
	for _, c := range toClose {
		c.Close()
	}
}

// partition cuts the links between members that share no group, except
// between two members named in no group (as member.Links.Partition), and
// restores every other link.
func (l *linkProxies) partition(members int, groups ...[]int) {
	in := make([]uint64, members)
	for g, group := range groups {
		for _, m := range group {
			in[m] |= 1 << (g % 64)
		}
	}
	states := make(map[[2]int]link)
	for a := range members {
		for b := a + 1; b < members; b++ {
			if in[a]&in[b] == 0 && (in[a] != 0 || in[b] != 0) {
				states[[2]int{a, b}] = link{cut: true}
			}
		}
	}
	l.set(states)
}

// degrade makes the link between members a and b delay and lose, keeping
// the other links as they are.
func (l *linkProxies) degrade(a, b int, delay time.Duration, loss float64) {
	l.mu.Lock()
	states := make(map[[2]int]link, len(l.links)+1)
	for k, s := range l.links {
		states[k] = s
	}
	l.mu.Unlock()
	states[pairKey(a, b)] = link{delay: delay, loss: loss}
	l.set(states)
}

func (l *linkProxies) heal() { l.set(make(map[[2]int]link)) }

// close stops every proxy and connection, and waits for their goroutines.
func (l *linkProxies) close() {
	l.mu.Lock()
	l.closed = true
	var toClose []io.Closer
	for _, p := range l.proxies {
		toClose = append(toClose, p.ln)
	}
	for _, conns := range l.conns {
		for c := range conns {
			toClose = append(toClose, c)
		}
	}
	l.mu.Unlock()
	for _, c := range toClose {
		c.Close()
	}
	l.wg.Wait()
}
