package loadgen

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// Fill is a tree to build: Parents nodes under Root, each with Children
// children, every name NameLen characters and every node DataLen bytes of
// data, created by Sessions sessions keeping InFlight creates outstanding
// each. It is the load the memory figures are measured with (1000 x 1000,
// 16-character names, 32 bytes: a million znodes).
type Fill struct {
	Addr     string
	Root     string
	Parents  int
	Children int
	NameLen  int
	DataLen  int
	Sessions int
	InFlight int
}

// Nodes returns how many znodes the fill creates.
func (f Fill) Nodes() int { return f.Parents * (1 + f.Children) }

// name returns the i-th name of the given kind ('p' or 'c'), NameLen
// characters: the kind, then i zero-padded.
func (f Fill) name(kind byte, i int) string {
	digits := fmt.Sprint(i)
	pad := max(f.NameLen-1-len(digits), 0)
	return string(kind) + strings.Repeat("0", pad) + digits
}

// LastPath returns the path of the last node Run creates.
func (f Fill) LastPath() string {
	if f.Children == 0 {
		return f.parent(f.Parents - 1)
	}
	return f.parent(f.Parents-1) + "/" + f.name('c', f.Children-1)
}

// parent returns the path of the i-th parent.
func (f Fill) parent(i int) string { return f.Root + "/" + f.name('p', i) }

// listedNode is the node an OpGetChildren run lists, with its children.
func listedNode(cfg Config) Fill {
	return Fill{Addr: cfg.Addr, Root: cfg.Root, Parents: 1, Children: cfg.Children, NameLen: 16,
		Sessions: 4, InFlight: 64}
}

// Run creates the parents, then their children, and returns how long it
// took. Every create must succeed.
func (f Fill) Run() (time.Duration, error) {
	start := time.Now()
	parents := make([]string, f.Parents)
	for i := range parents {
		parents[i] = f.parent(i)
	}
	if err := f.create(len(parents), func(i int) string { return parents[i] }); err != nil {
		return 0, err
	}
	children := make([]string, f.Children)
	for i := range children {
		children[i] = "/" + f.name('c', i)
	}
	err := f.create(f.Parents*f.Children, func(i int) string {
		return parents[i/f.Children] + children[i%f.Children]
	})
	return time.Since(start), err
}

// create makes n nodes, the i-th at path(i), spread over the sessions.
func (f Fill) create(n int, path func(int) string) error {
	sessions := min(max(f.Sessions, 1), max(n, 1))
	data := make([]byte, f.DataLen)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			conn, err := dial(firstAddr(f.Addr))
			if err != nil {
				errs[s] = err
				return
			}
			defer conn.close()
			// Session s creates nodes s, s+sessions, s+2*sessions, ...
			var mine []int
			for i := s; i < n; i += sessions {
				mine = append(mine, i)
			}
			errs[s] = conn.pipeline(len(mine), max(f.InFlight, 1), func(k int) {
				conn.send(wire.OpCreate, &wire.CreateRequest{Path: path(mine[k]), Data: data, ACL: wire.OpenACLUnsafe})
			}, func(k int, code wire.Code) error {
				if code != wire.CodeOK {
					return fmt.Errorf("create %s: %v", path(mine[k]), code)
				}
				return nil
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pipeline sends n requests with send, keeping up to inFlight outstanding,
// and checks each reply's code, in order, with check.
func (s *session) pipeline(n, inFlight int, send func(int), check func(int, wire.Code) error) error {
	return s.pipelineReplies(n, inFlight, send, func(k int, h wire.ReplyHeader, _ []byte) error {
		return check(k, h.Err)
	})
}

// pipelineReplies is pipeline with each reply's header and body (valid
// only during the call) handed to check.
func (s *session) pipelineReplies(n, inFlight int, send func(int), check func(int, wire.ReplyHeader, []byte) error) error {
	sent := 0
	for ; sent < min(n, inFlight); sent++ {
		send(sent)
	}
	for done := 0; done < n; done++ {
		if s.fr.Buffered() < wire.ReplyHeaderSize+4 {
			if err := s.bw.Flush(); err != nil {
				return err
			}
		}
		h, body, err := s.recvFrame()
		if err != nil {
			return err
		}
		if err := check(done, h, body); err != nil {
			return err
		}
		if sent < n {
			send(sent)
			sent++
		}
	}
	return nil
}
