package loadgen

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// run keeps cfg.InFlight requests outstanding until end, then drains them,
// and returns the latencies of the requests sent after measureFrom.
func (s *session) run(cfg Config, i int, measureFrom, end time.Time) ([]time.Duration, error) {
	next := s.requests(cfg, i)
	sentAt := make([]time.Time, cfg.InFlight) // ring, in send order
	head, outstanding := 0, 0
	lat := make([]time.Duration, 0, 1<<16)
	for ; outstanding < cfg.InFlight; outstanding++ {
		sentAt[(head+outstanding)%cfg.InFlight] = time.Now()
		next()
	}
	if err := s.bw.Flush(); err != nil {
		return nil, err
	}
	for outstanding > 0 {
		code, err := s.recv()
		if err != nil {
			return nil, err
		}
		if code != wire.CodeOK {
			return nil, fmt.Errorf("%s: server answered %v", cfg.Op, code)
		}
		now := time.Now()
		if sent := sentAt[head]; !sent.Before(measureFrom) && sent.Before(end) {
			lat = append(lat, now.Sub(sent))
		}
		head = (head + 1) % cfg.InFlight
		outstanding--
		if now.Before(end) {
			sentAt[(head+outstanding)%cfg.InFlight] = now
			next()
			outstanding++
		}
		if s.fr.Buffered() < wire.ReplyHeaderSize+4 {
			if err := s.bw.Flush(); err != nil {
				return nil, err
			}
		}
	}
	return lat, nil
}

// requests returns a function that sends the workload's next request.
func (s *session) requests(cfg Config, i int) func() {
	path := s.nodePath(cfg, i)
	switch cfg.Op {
	case OpCreate:
		n := 0
		prefix := cfg.Root + "/c" + strconv.Itoa(i) + "-"
		return func() {
			n++
			s.send(wire.OpCreate, &wire.CreateRequest{Path: prefix + strconv.Itoa(n), ACL: wire.OpenACLUnsafe})
		}
	case OpSetData:
		req := &wire.SetDataRequest{Path: path, Data: make([]byte, cfg.Size), Version: -1}
		return func() { s.send(wire.OpSetData, req) }
	case OpGetChildren:
		req := &wire.PathWatchRequest{Path: listedNode(cfg).parent(0)}
		return func() { s.send(wire.OpGetChildren, req) }
	case OpMulti:
		req := &wire.MultiRequest{}
		data := make([]byte, 32)
		for k := range cfg.MultiOps {
			req.Ops = append(req.Ops, wire.MultiOp{Type: wire.OpSetData,
				Req: &wire.SetDataRequest{Path: s.multiPath(cfg, i, k), Data: data, Version: -1}})
		}
		return func() { s.send(wire.OpMulti, req) }
	case OpMix:
		get := &wire.PathWatchRequest{Path: path}
		set := &wire.SetDataRequest{Path: path, Data: make([]byte, cfg.Size), Version: -1}
		n := 0
		return func() {
			// Bresenham: WritePercent sets in every 100 requests, evenly apart.
			n++
			if n*cfg.WritePercent/100 != (n-1)*cfg.WritePercent/100 {
				s.send(wire.OpSetData, set)
			} else {
				s.send(wire.OpGetData, get)
			}
		}
	default:
		req := &wire.PathWatchRequest{Path: path}
		return func() { s.send(wire.OpGetData, req) }
	}
}
