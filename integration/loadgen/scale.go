package loadgen

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// dialing is how many sessions dialMany connects at once.
const dialing = 64

// dialMany connects n sessions to the comma-separated addresses in turn,
// asking for the given session timeout, dialing concurrently. On error it
// closes those it made.
func dialMany(addrs string, n int, timeout time.Duration) ([]*session, error) {
	list := splitAddrs(addrs)
	sessions := make([]*session, n)
	errs := make([]error, n)
	sem := make(chan struct{}, dialing)
	var wg sync.WaitGroup
	for i := range sessions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			sessions[i], errs[i] = dialTimeout(list[i%len(list)], timeout, idleWriteBuffer)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(sessions)
		return nil, err
	}
	return sessions, nil
}

// closeAll closes the sessions, concurrently. Nil entries are skipped.
func closeAll(sessions []*session) {
	sem := make(chan struct{}, dialing)
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.close()
		})
	}
	wg.Wait()
}

// noBody is the empty record of closeSession and ping.
type noBody struct{}

func (noBody) Append(dst []byte) []byte   { return dst }
func (noBody) Decode([]byte) (int, error) { return 0, nil }

// ping sends a ping, whose reply the session's next read skips.
func (s *session) ping() error {
	b, start := wire.StartFrame(s.buf[:0])
	b = wire.RequestHeader{Xid: wire.XidPing, OpCode: wire.OpPing}.Append(b)
	s.buf = wire.EndFrame(b, start)
	if _, err := s.bw.Write(s.buf); err != nil {
		return err
	}
	return s.bw.Flush()
}

// keepAlive pings each session, a third of its granted timeout apart,
// until stop is closed, so that sessions nobody reads from stay alive. The
// sessions must be idle otherwise; the replies wait, small, in the
// sockets' buffers. A ping that the socket cannot take within the interval
// fails; the deadline is lifted after each, so that what the session
// sends once the pinging stops is not cut short by it.
func keepAlive(sessions []*session, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	interval := sessions[0].timeout / 3
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				for _, s := range sessions {
					s.nc.SetWriteDeadline(time.Now().Add(interval))
					s.ping()
					s.nc.SetWriteDeadline(time.Time{})
				}
			}
		}
	})
	return &wg
}

// splitAddrs splits a comma-separated address list.
func splitAddrs(addrs string) []string { return slices.Collect(strings.SplitSeq(addrs, ",")) }

// FanOut measures how fast one change reaches many watchers: Watchers
// sessions each leave a watch on one node (exists with a watch), then
// another session sets the node, and the time from sending that setData to
// each watcher's notification is taken. Each of Rounds rounds sets the
// watches anew.
type FanOut struct {
	Addr     string // comma-separated: watcher i connects to the (i mod n)th
	Root     string
	Watchers int
	Rounds   int
}

// Delays are the times from a change to its notifications, sorted.
type Delays []time.Duration

// First, Median and Last summarise the delays.
func (d Delays) First() time.Duration  { return d[0] }
func (d Delays) Median() time.Duration { return d[len(d)/2] }
func (d Delays) Last() time.Duration   { return d[len(d)-1] }

// Run returns each round's delays.
func (f FanOut) Run() ([]Delays, error) {
	watchers, err := dialMany(f.Addr, f.Watchers, 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer closeAll(watchers)
	writer, err := dial(firstAddr(f.Addr))
	if err != nil {
		return nil, err
	}
	defer writer.close()
	node := f.Root + "/fanout"
	if err := writer.do(wire.OpCreate, &wire.CreateRequest{Path: node, ACL: wire.OpenACLUnsafe}, wire.CodeOK); err != nil {
		return nil, err
	}
	var rounds []Delays
	for range f.Rounds {
		d, err := f.round(watchers, writer, node)
		if err != nil {
			return nil, err
		}
		rounds = append(rounds, d)
	}
	return rounds, nil
}

func (f FanOut) round(watchers []*session, writer *session, node string) (Delays, error) {
	arrived := make([]time.Time, len(watchers))
	errs := make([]error, len(watchers))
	var armed, done sync.WaitGroup
	armed.Add(len(watchers))
	for i, w := range watchers {
		done.Go(func() {
			w.nc.SetDeadline(time.Now().Add(time.Minute))
			err := w.do(wire.OpExists, &wire.PathWatchRequest{Path: node, Watch: true}, wire.CodeOK)
			armed.Done()
			if err == nil {
				err = w.awaitEvent(wire.EventNodeDataChanged, node)
			}
			arrived[i], errs[i] = time.Now(), err
		})
	}
	armed.Wait()
	sent := time.Now()
	if err := writer.do(wire.OpSetData, &wire.SetDataRequest{Path: node, Version: -1}, wire.CodeOK); err != nil {
		return nil, err
	}
	done.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d := make(Delays, len(arrived))
	for i, t := range arrived {
		d[i] = t.Sub(sent)
	}
	slices.Sort(d)
	return d, nil
}

// do sends one request and checks its reply's code.
func (s *session) do(op wire.Op, req wire.Record, want wire.Code) error {
	s.send(op, req)
	if err := s.bw.Flush(); err != nil {
		return err
	}
	code, err := s.recv()
	if err == nil && code != want {
		err = fmt.Errorf("%v: server answered %v", op, code)
	}
	return err
}

// awaitEvent reads frames until a notification of the given type for path.
func (s *session) awaitEvent(typ wire.EventType, path string) error {
	for {
		frame, err := s.fr.Next()
		if err != nil {
			return err
		}
		var h wire.ReplyHeader
		n, err := h.Decode(frame)
		if err != nil {
			return err
		}
		if h.Xid != wire.XidNotification {
			continue // a ping's reply
		}
		var ev wire.WatcherEvent
		if _, err := ev.Decode(frame[n:]); err != nil {
			return err
		}
		if ev.Type == typ && ev.Path == path {
			return nil
		}
	}
}

// Storm connects Sessions sessions at once, then, with them still
// connected, has Expiring further sessions (asking for Timeout) each own
// an ephemeral node that one watcher session watches, and cuts their
// connections: their sessions expire, their nodes go and the watcher is
// told.
type Storm struct {
	Addr     string
	Root     string
	Sessions int
	Expiring int
	Timeout  time.Duration
}

// StormResult is what a storm measured.
type StormResult struct {
	Connect time.Duration // to connect all Sessions
	// Granted is the session timeout the server granted the expiring sessions.
	Granted time.Duration
	// FirstGone and LastGone are the times from cutting the connections to
	// the watcher's first and last notification of a deleted ephemeral.
	FirstGone, LastGone time.Duration
}

// ConnectsPerSec returns the rate at which the sessions connected.
func (r StormResult) ConnectsPerSec(sessions int) float64 {
	return float64(sessions) / r.Connect.Seconds()
}

// Run runs the storm; it closes every session it opened before it returns.
func (st Storm) Run() (StormResult, error) {
	var res StormResult
	start := time.Now()
	crowd, err := dialMany(st.Addr, st.Sessions, 30*time.Second)
	if err != nil {
		return res, err
	}
	res.Connect = time.Since(start)
	defer closeAll(crowd)
	stopCrowd := make(chan struct{})
	defer keepAlive(crowd, stopCrowd).Wait()
	defer close(stopCrowd)

	owners, err := dialMany(st.Addr, st.Expiring, st.Timeout)
	if err != nil {
		return res, err
	}
	res.Granted = owners[0].timeout
	stopOwners := make(chan struct{})
	pinging := keepAlive(owners, stopOwners)
	stopPinging := sync.OnceFunc(func() { close(stopOwners); pinging.Wait() })
	cut := sync.OnceFunc(func() {
		stopPinging()
		for _, o := range owners {
			o.nc.Close() // no closeSession: the sessions are to expire
		}
	})
	paths := make([]string, len(owners))
	errs := make([]error, len(owners))
	var wg sync.WaitGroup
	for i, o := range owners {
		paths[i] = st.Root + "/e" + strconv.Itoa(i)
		wg.Go(func() {
			errs[i] = o.do(wire.OpCreate, &wire.CreateRequest{Path: paths[i], ACL: wire.OpenACLUnsafe,
				Flags: wire.FlagEphemeral}, wire.CodeOK)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cut()
		return res, err
	}
	watcher, err := dial(firstAddr(st.Addr))
	if err != nil {
		cut()
		return res, err
	}
	defer watcher.close()
	err = watcher.pipeline(len(paths), 256, func(k int) {
		watcher.send(wire.OpExists, &wire.PathWatchRequest{Path: paths[k], Watch: true})
	}, func(k int, code wire.Code) error {
		if code != wire.CodeOK {
			return fmt.Errorf("exists %s: %v", paths[k], code)
		}
		return nil
	})
	if err != nil {
		cut()
		return res, err
	}
	// The owners' last requests, all at once just before the cut, so that
	// their sessions' timeouts run from the cut.
	stopPinging()
	for i, o := range owners {
		wg.Go(func() { errs[i] = o.do(wire.OpExists, &wire.PathWatchRequest{Path: paths[i]}, wire.CodeOK) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cut()
		return res, err
	}
	watcher.nc.SetReadDeadline(time.Now().Add(4*res.Granted + time.Minute))
	cutAt := time.Now()
	cut()
	gone := make(map[string]bool, len(paths))
	for len(gone) < len(paths) {
		frame, err := watcher.fr.Next()
		if err != nil {
			return res, fmt.Errorf("%d of %d ephemerals gone: %w", len(gone), len(paths), err)
		}
		var h wire.ReplyHeader
		n, _ := h.Decode(frame)
		if h.Xid != wire.XidNotification {
			continue
		}
		var ev wire.WatcherEvent
		if _, err := ev.Decode(frame[n:]); err != nil || ev.Type != wire.EventNodeDeleted {
			continue
		}
		if len(gone) == 0 {
			res.FirstGone = time.Since(cutAt)
		}
		gone[ev.Path] = true
	}
	res.LastGone = time.Since(cutAt)
	return res, nil
}

// HoldWatches has one session leave n data watches, each on a node of its
// own that does not exist (exists with a watch, as a client waiting for a
// node does), and returns a function that closes the session: what a
// server's memory per watch is measured with.
func HoldWatches(addr, root string, n int) (release func(), err error) {
	s, err := dial(firstAddr(addr))
	if err != nil {
		return nil, err
	}
	err = s.pipeline(n, 256, func(k int) {
		s.send(wire.OpExists, &wire.PathWatchRequest{Path: fmt.Sprintf("%s/w%015d", root, k), Watch: true})
	}, func(k int, code wire.Code) error {
		if code != wire.CodeNoNode {
			return fmt.Errorf("exists with a watch: %v", code)
		}
		return nil
	})
	if err != nil {
		s.close()
		return nil, err
	}
	stop := make(chan struct{})
	pinging := keepAlive([]*session{s}, stop)
	return func() { close(stop); pinging.Wait(); s.close() }, nil
}

// HoldSessions opens n idle sessions, kept alive, and returns a function
// that closes them: what a server's memory per session is measured with.
func HoldSessions(addr string, n int) (release func(), err error) {
	sessions, err := dialMany(addr, n, 30*time.Second)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	pinging := keepAlive(sessions, stop)
	return func() { close(stop); pinging.Wait(); closeAll(sessions) }, nil
}
