package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/zkraft/zkraft/server"
)

// maxPending bounds the paths kept for one stream between two events;
// past it the stream sends a resync instead (the page reloads what it
// shows).
const maxPending = 512

// pace is the least time between two events of one stream: changes in
// between are merged into one event.
const pace = 100 * time.Millisecond

// watchEvery is the least time between two looks at the watches: each
// copies and sorts every watch this member holds, under the lock the
// client connections take to set theirs.
const watchEvery = time.Second

// keepAlive is how often an idle stream sends a comment, so that proxies
// keep it open.
const keepAlive = 15 * time.Second

// Event is what one server-sent "change" event carries: the paths that
// changed since the last event, and whether the sessions or the watches
// changed. Resync means more changed than was kept: reload everything
// shown.
type Event struct {
	Zxid     int64    `json:"zxid"`
	Paths    []string `json:"paths"`
	Sessions bool     `json:"sessions"`
	Watches  bool     `json:"watches"`
	Resync   bool     `json:"resync"`
}

// hub fans the server's changes out to the open event streams. It observes
// the server only while a stream is open, so a console nobody looks at
// costs the server nothing.
type hub struct {
	src Source

	mu      sync.Mutex // guards the fields below
	streams map[*stream]struct{}
	stop    func() // ends the observation; nil while no stream is open
}

func newHub(src Source) *hub { return &hub{src: src, streams: make(map[*stream]struct{})} }

// stream is one open event stream's pending changes.
type stream struct {
	mu      sync.Mutex
	pending Event
	ready   chan struct{} // holds a token while pending has news
}

// join opens a stream, and starts observing the server with the first.
func (h *hub) join() *stream {
	s := &stream{ready: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams[s] = struct{}{}
	if h.stop == nil {
		h.stop = h.src.Observe(h.observed)
	}
	return s
}

// leave closes a stream, and stops observing with the last.
func (h *hub) leave(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, s)
	if len(h.streams) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// observed runs inside the server's apply: it only merges and signals.
func (h *hub) observed(c server.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.streams {
		s.add(c)
	}
}

func (s *stream) add(c server.Change) {
	s.mu.Lock()
	p := &s.pending
	p.Zxid = max(p.Zxid, c.Zxid)
	p.Sessions = p.Sessions || c.Sessions
	p.Resync = p.Resync || c.Restored
	for _, path := range c.Paths {
		if !p.Resync && !slices.Contains(p.Paths, path) {
			p.Paths = append(p.Paths, path)
		}
	}
	if len(p.Paths) > maxPending {
		p.Paths, p.Resync = nil, true
	}
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// take returns the pending changes and starts afresh.
func (s *stream) take() Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.pending
	s.pending = Event{}
	return e
}

// events streams "change" events (text/event-stream) until the client
// goes. The first event, "hello", carries the zxid the page starts from.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	s := c.hub.join()
	defer c.hub.leave(s)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	watches := watchLook{src: c.src, last: c.src.Watches(), next: time.Now()}
	if !send(w, rc, "hello", Event{Zxid: c.zxid(), Paths: []string{}}) {
		return
	}
	idle := time.NewTimer(keepAlive)
	defer idle.Stop()
	for {
		// Take the channel before looking, so that no change between the
		// look and the wait goes unseen.
		changed := c.src.Changed()
		e := s.take()
		e.Watches = watches.changed()
		if len(e.Paths) > 0 || e.Sessions || e.Watches || e.Resync {
			if e.Paths == nil {
				e.Paths = []string{}
			}
			if !send(w, rc, "change", e) {
				return
			}
			idle.Reset(keepAlive)
			select { // merge what comes in the next moment into one event
			case <-r.Context().Done():
				return
			case <-time.After(pace):
			}
			select { // whatever changed meanwhile may be a watch
			case <-changed:
				watches.owed = true
			default:
			}
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-idle.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			idle.Reset(keepAlive)
		case <-s.ready:
		case <-changed: // a watch set or removed, or anything else
			watches.owed = true
		case <-watches.due():
		}
	}
}

// watchLook tells a stream whether the watches changed, looking at most
// once every watchEvery.
type watchLook struct {
	src  Source
	last []server.Watch
	owed bool      // something changed since the last look
	next time.Time // when the next look may be taken
}

// changed looks, if a look is owed and allowed, and reports a change.
func (l *watchLook) changed() bool {
	if !l.owed || time.Now().Before(l.next) {
		return false
	}
	l.owed, l.next = false, time.Now().Add(watchEvery)
	now := l.src.Watches()
	if slices.Equal(now, l.last) {
		return false
	}
	l.last = now
	return true
}

// due is when an owed look may be taken; nil when none is owed.
func (l *watchLook) due() <-chan time.Time {
	if !l.owed {
		return nil
	}
	return time.After(time.Until(l.next))
}

// zxid is the last zxid applied on this member.
func (c *Console) zxid() int64 {
	v := c.src.Local()
	for _, m := range v.Members {
		if m.ID == v.Self {
			return m.Applied
		}
	}
	return 0
}

func send(w http.ResponseWriter, rc *http.ResponseController, name string, e Event) bool {
	b, _ := json.Marshal(e) // plain fields: cannot fail
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return false
	}
	return rc.Flush() == nil
}
