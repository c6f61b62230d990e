// Package loadgen drives a ZooKeeper-compatible server with a fixed load:
// several sessions, each keeping a fixed number of requests in flight over
// one connection (requests are pipelined, replies come back in order), for
// a fixed time, recording every request's latency. It speaks the protocol
// through zkraft's wire package, so the client costs little next to the
// server it measures, and the same code measures zkraft and Apache
// ZooKeeper alike.
package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// Op is a workload.
type Op string

// Workloads.
const (
	OpCreate  Op = "create"  // create a new persistent node per request
	OpSetData Op = "setData" // set Size bytes on the session's node, any version
	OpGetData Op = "getData" // read the session's node (Size bytes)
	// OpGetChildren lists one node with Children children (16-character
	// names), shared by all sessions.
	OpGetChildren Op = "getChildren"
	// OpMulti sends a multi of MultiOps setData sub-ops (32 bytes each) on
	// the session's own MultiOps nodes.
	OpMulti Op = "multi"
	// OpMix reads the session's node (getData, Size bytes) and sets it in
	// WritePercent of the requests, spread evenly.
	OpMix Op = "mix"
)

// Config is one run.
type Config struct {
	Addr     string        // server address, or a comma-separated list: session i uses the (i mod n)th
	Op       Op            // workload
	Sessions int           // concurrent sessions (connections)
	InFlight int           // requests each session keeps outstanding
	Duration time.Duration // measured time
	Warmup   time.Duration // unmeasured load first (Java servers need it)
	Size     int           // data bytes for setData and getData
	Root     string        // an existing node under which the run works
	// Children is the number of children of the node OpGetChildren lists.
	Children int
	// MultiOps is the number of sub-ops in each OpMulti request.
	MultiOps int
	// WritePercent is the share of setData in OpMix, 0 to 100.
	WritePercent int
	// Window, if set, is called as the measured time begins, and the
	// function it returns as it ends, or as the sessions end if they all
	// end (fail) sooner; Window is not called at all if they end before
	// the measured time begins. Both return before Run does. It measures
	// something else over the same time (a server's CPU use).
	Window func() (end func())
}

// Result is a run's measurements.
type Result struct {
	Op        Op
	Ops       int           // requests answered during the measured time
	Elapsed   time.Duration // measured time
	Latencies []time.Duration
}

// OpsPerSec returns the throughput.
func (r *Result) OpsPerSec() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// Percentile returns the latency at quantile q (0..1).
func (r *Result) Percentile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.Latencies))), len(r.Latencies)-1)
	return r.Latencies[i]
}

// Run runs cfg's workload and returns its measurements.
func Run(cfg Config) (*Result, error) {
	if cfg.Op == OpGetChildren {
		if _, err := listedNode(cfg).Run(); err != nil {
			return nil, err
		}
	}
	sessions := make([]*session, cfg.Sessions)
	addrs := strings.Split(cfg.Addr, ",")
	for i := range sessions {
		s, err := dial(addrs[i%len(addrs)])
		if err != nil {
			return nil, err
		}
		defer s.close()
		sessions[i] = s
		if err := s.prepare(cfg, i); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	results := make([][]time.Duration, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { results[i], errs[i] = s.run(cfg, i, measureFrom, end) })
	}
	stopped := make(chan struct{}) // closed once every session has ended
	var window sync.WaitGroup
	if cfg.Window != nil {
		window.Go(func() {
			// Points in time to measure at, or the sessions' end if sooner.
			select {
			case <-time.After(time.Until(measureFrom)):
			case <-stopped:
				return
			}
			ended := cfg.Window()
			select {
			case <-time.After(time.Until(end)):
			case <-stopped:
			}
			ended()
		})
	}
	wg.Wait()
	close(stopped)
	window.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := &Result{Op: cfg.Op, Elapsed: cfg.Duration}
	for _, l := range results {
		res.Latencies = append(res.Latencies, l...)
	}
	res.Ops = len(res.Latencies)
	slices.Sort(res.Latencies)
	return res, nil
}

// session is one pipelined connection.
type session struct {
	nc  net.Conn
	bw  *bufio.Writer
	fr  *wire.FrameReader
	xid int32
	buf []byte
	// timeout is the session timeout the server granted.
	timeout time.Duration
	// pushed is when the read deadline was last moved (recvFrame).
	pushed time.Time
}

// replyWait bounds the wait for a reply, and connectWait the wait for a
// connect's answer: a server whose host vanished sends no FIN or RST, and
// the tool's sessions have no TCP keepalive. (Variables for the tests.)
var (
	replyWait   = time.Minute
	connectWait = 30 * time.Second
)

// Write buffers: a session under load pipelines requests (multis of a
// hundred among them) through a large one; the thousands of sessions of a
// storm or a fan-out each send a few small requests, and a large buffer
// apiece cost the dialers more than their connects (zeroed, then
// collected).
const (
	loadWriteBuffer = 64 << 10
	idleWriteBuffer = 1 << 10
)

func dial(addr string) (*session, error) { return dialTimeout(addr, 30*time.Second, loadWriteBuffer) }

// dialTimeout opens a session asking for the given session timeout, with
// a write buffer of the given size; the server's answer is in the
// session's timeout.
func dialTimeout(addr string, timeout time.Duration, writeBuffer int) (*session, error) {
	// No TCP keepalive, as ZooKeeper's clients dial: Go's default turns it
	// on with four system calls a connection, a tenth of a dial's cost.
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: -1}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &session{nc: nc, bw: bufio.NewWriterSize(nc, writeBuffer), fr: wire.NewFrameReader(nc, 64<<20)}
	nc.SetDeadline(time.Now().Add(connectWait))
	req := wire.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)}
	b, start := wire.StartFrame(nil)
	b = wire.EndFrame(req.Append(b), start)
	if _, err := nc.Write(b); err != nil {
		nc.Close()
		return nil, err
	}
	frame, err := s.fr.Next()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	var resp wire.ConnectResponse
	if _, err := resp.Decode(frame); err != nil || resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("connect to %s: no session", addr)
	}
	s.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	nc.SetDeadline(time.Time{})
	return s, nil
}

// close ends the session with closeSession, so that the server forgets it
// at once rather than when it expires, and closes the connection.
func (s *session) close() {
	s.pushed = time.Now() // recvFrame leaves this deadline be
	s.nc.SetDeadline(s.pushed.Add(5 * time.Second))
	s.send(wire.OpCloseSession, noBody{})
	if s.bw.Flush() == nil {
		s.recv()
	}
	s.nc.Close()
}

func (s *session) nodePath(cfg Config, i int) string {
	return cfg.Root + "/s" + strconv.Itoa(i)
}

// multiPath returns the path of the k-th node of session i's multis.
func (s *session) multiPath(cfg Config, i, k int) string {
	return s.nodePath(cfg, i) + "-" + strconv.Itoa(k)
}

// prepare creates the nodes the session works on: one for setData, getData
// and mix, MultiOps for multi.
func (s *session) prepare(cfg Config, i int) error {
	var paths []string
	switch cfg.Op {
	case OpCreate, OpGetChildren:
		return nil
	case OpMulti:
		for k := range cfg.MultiOps {
			paths = append(paths, s.multiPath(cfg, i, k))
		}
	default:
		paths = []string{s.nodePath(cfg, i)}
	}
	data := make([]byte, cfg.Size)
	return s.pipeline(len(paths), 64, func(k int) {
		s.send(wire.OpCreate, &wire.CreateRequest{Path: paths[k], Data: data, ACL: wire.OpenACLUnsafe})
	}, func(k int, code wire.Code) error {
		if code != wire.CodeOK && code != wire.CodeNodeExists {
			return fmt.Errorf("prepare %s: %v", paths[k], code)
		}
		return nil
	})
}

func (s *session) send(op wire.Op, rec wire.Record) {
	s.xid++
	b, start := wire.StartFrame(s.buf[:0])
	b = wire.RequestHeader{Xid: s.xid, OpCode: op}.Append(b)
	b = rec.Append(b)
	s.buf = wire.EndFrame(b, start)
	s.bw.Write(s.buf)
}

// recv reads the next reply, skipping notifications, and returns its code.
func (s *session) recv() (wire.Code, error) {
	h, _, err := s.recvFrame()
	return h.Err, err
}

// recvFrame reads the next reply, skipping notifications and pings'
// replies, and returns its header and body. The body is valid until the
// next read. A reply that does not come within replyWait is an error.
// The deadline moves at most once a second: a timer reset per reply would
// cost the load it measures.
func (s *session) recvFrame() (wire.ReplyHeader, []byte, error) {
	if now := time.Now(); now.Sub(s.pushed) > time.Second {
		s.nc.SetReadDeadline(now.Add(replyWait))
		s.pushed = now
	}
	for {
		var h wire.ReplyHeader
		frame, err := s.fr.Next()
		if err != nil {
			return h, nil, err
		}
		n, err := h.Decode(frame)
		if err != nil {
			return h, nil, err
		}
		if h.Xid != wire.XidNotification && h.Xid != wire.XidPing {
			return h, frame[n:], nil
		}
	}
}
