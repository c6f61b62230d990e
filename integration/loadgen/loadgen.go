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
	wg.Wait()
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
}

func dial(addr string) (*session, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	s := &session{nc: nc, bw: bufio.NewWriterSize(nc, 64<<10), fr: wire.NewFrameReader(nc, 64<<20)}
	req := wire.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}
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
	return s, nil
}

func (s *session) close() { s.nc.Close() }

func (s *session) nodePath(cfg Config, i int) string {
	return cfg.Root + "/s" + strconv.Itoa(i)
}

// prepare creates the session's node for setData and getData.
func (s *session) prepare(cfg Config, i int) error {
	if cfg.Op == OpCreate {
		return nil
	}
	s.send(wire.OpCreate, &wire.CreateRequest{Path: s.nodePath(cfg, i), Data: make([]byte, cfg.Size), ACL: wire.OpenACLUnsafe})
	if err := s.bw.Flush(); err != nil {
		return err
	}
	code, err := s.recv()
	if err != nil {
		return err
	}
	if code != wire.CodeOK && code != wire.CodeNodeExists {
		return fmt.Errorf("prepare %s: %v", s.nodePath(cfg, i), code)
	}
	return nil
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
	for {
		frame, err := s.fr.Next()
		if err != nil {
			return 0, err
		}
		var h wire.ReplyHeader
		if _, err := h.Decode(frame); err != nil {
			return 0, err
		}
		if h.Xid != wire.XidNotification {
			return h.Err, nil
		}
	}
}
