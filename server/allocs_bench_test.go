package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/wire"
)

// BenchmarkRequestAllocs measures what one request costs the whole process
// in allocations, end to end: an in-memory standalone server on loopback,
// driven by 8 sessions that each keep 8 requests in flight. One op is one
// request answered; allocs/op and B/op are the process's own (the server's
// goroutines, Raft's, and the client's, which allocates nothing per
// request), from runtime.MemStats over the measured requests. ops/s is the
// throughput, which on a shared machine varies far more than the counts.
//
//	go test -run '^$' -bench RequestAllocs -benchtime 100000x ./server
func BenchmarkRequestAllocs(b *testing.B) {
	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0", MaxClientCnxns: -1})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	const sessions, inFlight = 8, 8
	runs := 0
	for _, w := range allocWorkloads {
		b.Run(w.name, func(b *testing.B) {
			runs++
			root := "/allocs-" + w.name + "-" + strconv.Itoa(runs)
			clients := make([]*allocClient, sessions)
			for i := range clients {
				c, err := dialAllocClient(srv.ConnectString())
				if err != nil {
					b.Fatal(err)
				}
				defer c.nc.Close()
				clients[i] = c
			}
			if err := clients[0].setup(root, w); err != nil {
				b.Fatal(err)
			}
			for i, c := range clients {
				if err := c.prepare(root, i, w); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			start := time.Now()
			errs := make([]error, sessions)
			var wg sync.WaitGroup
			for i, c := range clients {
				n := b.N / sessions
				if i < b.N%sessions {
					n++
				}
				wg.Go(func() { errs[i] = c.run(n, inFlight) })
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			runtime.ReadMemStats(&after)
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/req")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/req")
			b.ReportMetric(n/elapsed.Seconds(), "ops/s")
		})
	}
}

// allocWorkload is one kind of request. Every session sends its own
// (next), on nodes setup (once) and prepare (each session) made.
type allocWorkload struct {
	name     string
	op       wire.Op
	size     int // data bytes of setData and getData
	children int // children of the node getChildren lists
}

var allocWorkloads = []allocWorkload{
	{name: "create", op: wire.OpCreate},
	{name: "setData-1KiB", op: wire.OpSetData, size: 1024},
	{name: "getData-1KiB", op: wire.OpGetData, size: 1024},
	{name: "getChildren-100", op: wire.OpGetChildren, children: 100},
	{name: "exists-watch", op: wire.OpExists},
	{name: "multi-3", op: wire.OpMulti},
}

// allocClient is one pipelined session that allocates nothing per request:
// each request's frame is built in a reused buffer.
type allocClient struct {
	nc   net.Conn
	bw   *bufio.Writer
	fr   *wire.FrameReader
	xid  int32
	buf  []byte
	path []byte // create: the next node's path
	// body is the request body after the header; for create, the body
	// after the path.
	body []byte
	op   wire.Op
	seq  int
}

func dialAllocClient(addr string) (*allocClient, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &allocClient{nc: nc, bw: bufio.NewWriterSize(nc, 64<<10), fr: wire.NewFrameReader(nc, 64<<20)}
	req := wire.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}
	b, start := wire.StartFrame(nil)
	if _, err := nc.Write(wire.EndFrame(req.Append(b), start)); err != nil {
		nc.Close()
		return nil, err
	}
	frame, err := c.fr.Next()
	var resp wire.ConnectResponse
	if err == nil {
		_, err = resp.Decode(frame)
	}
	if err != nil || resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("connect: no session (%v)", err)
	}
	return c, nil
}

// setup makes the nodes all sessions share: the root, and for
// getChildren the listed node's children.
func (c *allocClient) setup(root string, w allocWorkload) error {
	paths := []string{root}
	if w.children > 0 {
		for k := range w.children {
			paths = append(paths, fmt.Sprintf("%s/child-%012d", root, k))
		}
	}
	return c.createAll(paths, nil)
}

// prepare makes the session's own nodes and the request it will send.
func (c *allocClient) prepare(root string, i int, w allocWorkload) error {
	own := root + "/s" + strconv.Itoa(i)
	c.op = w.op
	var rec wire.Record
	switch w.op {
	case wire.OpCreate:
		c.path = []byte(own + "-")
		// A create's body with an empty path, less the path's length.
		rec = &wire.CreateRequest{ACL: wire.OpenACLUnsafe}
		c.body = rec.Append(nil)[4:]
		return nil
	case wire.OpSetData:
		rec = &wire.SetDataRequest{Path: own, Data: make([]byte, w.size), Version: -1}
	case wire.OpGetData:
		rec = &wire.PathWatchRequest{Path: own}
	case wire.OpExists:
		rec = &wire.PathWatchRequest{Path: own, Watch: true}
	case wire.OpGetChildren:
		c.body = (&wire.PathWatchRequest{Path: root}).Append(nil)
		return nil
	case wire.OpMulti:
		m := &wire.MultiRequest{}
		var paths []string
		for k := range 3 {
			p := own + "-" + strconv.Itoa(k)
			paths = append(paths, p)
			m.Ops = append(m.Ops, wire.MultiOp{Type: wire.OpSetData,
				Req: &wire.SetDataRequest{Path: p, Data: make([]byte, 32), Version: -1}})
		}
		c.body = m.Append(nil)
		return c.createAll(paths, nil)
	}
	c.body = rec.Append(nil)
	return c.createAll([]string{own}, make([]byte, w.size))
}

// createAll creates paths in order, pipelined.
func (c *allocClient) createAll(paths []string, data []byte) error {
	for _, p := range paths {
		c.send(wire.OpCreate, (&wire.CreateRequest{Path: p, Data: data, ACL: wire.OpenACLUnsafe}).Append(nil))
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	for _, p := range paths {
		if err := c.recv(); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

func (c *allocClient) send(op wire.Op, body []byte) {
	c.xid++
	b, start := wire.StartFrame(c.buf[:0])
	b = wire.RequestHeader{Xid: c.xid, OpCode: op}.Append(b)
	b = append(b, body...)
	c.buf = wire.EndFrame(b, start)
	c.bw.Write(c.buf)
}

// next sends the workload's next request.
func (c *allocClient) next() {
	if c.op != wire.OpCreate {
		c.send(c.op, c.body)
		return
	}
	c.seq++
	n := len(c.path)
	c.path = strconv.AppendInt(c.path, int64(c.seq), 10)
	c.xid++
	b, start := wire.StartFrame(c.buf[:0])
	b = wire.RequestHeader{Xid: c.xid, OpCode: c.op}.Append(b)
	b = wire.AppendInt(b, int32(len(c.path)))
	b = append(b, c.path...)
	b = append(b, c.body...)
	c.buf = wire.EndFrame(b, start)
	c.bw.Write(c.buf)
	c.path = c.path[:n]
}

// recv reads the next reply, skipping notifications, and fails unless it is OK.
func (c *allocClient) recv() error {
	for {
		frame, err := c.fr.Next()
		if err != nil {
			return err
		}
		var h wire.ReplyHeader
		if _, err := h.Decode(frame); err != nil {
			return err
		}
		if h.Xid == wire.XidNotification {
			continue
		}
		if h.Err != wire.CodeOK {
			return fmt.Errorf("xid %d: %v", h.Xid, h.Err)
		}
		return nil
	}
}

// run sends n requests keeping inFlight outstanding, and reads every reply.
func (c *allocClient) run(n, inFlight int) error {
	sent, outstanding := 0, 0
	for ; sent < n && outstanding < inFlight; sent++ {
		c.next()
		outstanding++
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	for outstanding > 0 {
		if err := c.recv(); err != nil {
			return err
		}
		outstanding--
		if sent < n {
			c.next()
			sent++
			outstanding++
		}
		if c.fr.Buffered() < wire.ReplyHeaderSize+4 {
			if err := c.bw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}
