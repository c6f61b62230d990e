package chroot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// Admin makes and removes the roots of namespaces on a server, over one
// session of its own, authenticated with digest credentials
// ("user:password"; a superuser's passes every ACL). It is safe for
// concurrent use; calls are made one at a time.
type Admin struct {
	addr, digest string

	mu sync.Mutex // guards c, and serializes calls
	c  *client    // nil until needed, and after a failure
}

// NewAdmin returns an Admin of the server at addr; it connects when first
// used, and again after its connection or session is lost.
func NewAdmin(addr, digest string) *Admin { return &Admin{addr: addr, digest: digest} }

// do runs f on a connected client, once more on a new connection if the
// first fails below the protocol (a lost connection, an idle session
// expired).
func (a *Admin) do(f func(c *client) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	for range 2 {
		if a.c == nil {
			if a.c, err = dial(a.addr, a.digest); err != nil {
				return err
			}
		}
		a.c.conn.SetDeadline(time.Now().Add(30 * time.Second))
		if err = f(a.c); err == nil {
			return nil
		}
		var code codeError
		if errors.As(err, &code) && code.code != wire.CodeSessionExpired {
			return err // the server's answer: trying again changes nothing
		}
		a.c.conn.Close()
		a.c = nil
	}
	return err
}

// Close ends the Admin's session.
func (a *Admin) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c != nil {
		a.c.close()
		a.c = nil
	}
}

// codeError is a request the server refused.
type codeError struct {
	op   string
	path string
	code wire.Code
}

func (e codeError) Error() string { return fmt.Sprintf("chroot: %s %s: %v", e.op, e.path, e.code) }

// Create makes the node at root, and any missing ancestor, as persistent
// nodes open to all. Nodes already there are no error.
func (a *Admin) Create(root string) error {
	return a.do(func(c *client) error {
		create := func(p string) (wire.Code, error) {
			return c.call(c.next(), wire.OpCreate, &wire.CreateRequest{Path: p, Data: []byte{}, ACL: wire.OpenACLUnsafe}, nil)
		}
		code, err := create(root) // one write when the parent is there, as it mostly is
		if err != nil || code == wire.CodeOK || code == wire.CodeNodeExists {
			return err
		}
		for i := 1; i <= len(root); i++ {
			if i < len(root) && root[i] != '/' {
				continue
			}
			code, err := create(root[:i])
			if err != nil {
				return err
			}
			if code != wire.CodeOK && code != wire.CodeNodeExists {
				return codeError{"create", root[:i], code}
			}
		}
		return nil
	})
}

// maxMultiBytes bounds a multi of deletes well below jute.maxbuffer.
const maxMultiBytes = 256 << 10

// Remove deletes the node at root and everything below it. paths, if
// given, lists them children before parents (as the caller last saw the
// tree): they go in multis of up to 256 KiB of deletes, and whatever changed
// meanwhile (ephemerals of closing sessions, reaped containers) is then
// removed node by node.
func (a *Admin) Remove(root string, paths []string) error {
	return a.do(func(c *client) error {
		for len(paths) > 0 {
			req := &wire.MultiRequest{}
			n, size := 0, 0
			for ; n < len(paths) && size < maxMultiBytes; n++ {
				req.Ops = append(req.Ops, wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: paths[n], Version: -1}})
				size += len(paths[n]) + 24 // the path, its length, the op's header and version
			}
			var resp wire.MultiResponse
			code, err := c.call(c.next(), wire.OpMulti, req, &resp)
			if err != nil {
				return err
			}
			if code != wire.CodeOK || len(resp.Results) == 0 || resp.Results[0].Type == wire.OpError {
				break // the tree changed: node by node
			}
			paths = paths[n:]
		}
		return c.removeAll(root)
	})
}

// client is a minimal synchronous ZooKeeper client, enough to remove a
// tree: one request at a time, events skipped.
type client struct {
	conn   net.Conn
	frames *wire.FrameReader
	xid    int32
	events []wire.WatcherEvent // notifications received, in order
}

func dial(addr, digest string) (*client, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	c := &client{conn: conn, frames: wire.NewFrameReader(conn, 64<<20)}
	req := &wire.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}
	if err := c.send(req.Append(nil)); err != nil {
		conn.Close()
		return nil, err
	}
	frame, err := c.frames.Next()
	var resp wire.ConnectResponse
	if err == nil {
		_, err = resp.Decode(frame)
	}
	if err == nil && resp.SessionID == 0 {
		err = fmt.Errorf("chroot: no session from %s", addr)
	}
	if err == nil && digest != "" {
		auth := &wire.AuthPacket{Scheme: "digest", Auth: []byte(digest)}
		var code wire.Code
		if code, err = c.call(wire.XidAuth, wire.OpAuth, auth, nil); err == nil && code != wire.CodeOK {
			err = fmt.Errorf("chroot: auth: %v", code)
		}
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *client) send(body []byte) error {
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	_, err := c.conn.Write(append(frame, body...))
	return err
}

// call sends one request and decodes its reply into resp when it succeeds.
func (c *client) call(xid int32, op wire.Op, req, resp wire.Record) (wire.Code, error) {
	body := wire.RequestHeader{Xid: xid, OpCode: op}.Append(nil)
	if req != nil {
		body = req.Append(body)
	}
	if err := c.send(body); err != nil {
		return 0, err
	}
	for {
		frame, err := c.frames.Next()
		if err != nil {
			return 0, err
		}
		var h wire.ReplyHeader
		n, err := h.Decode(frame)
		if err != nil {
			return 0, err
		}
		if h.Xid == wire.XidNotification {
			var ev wire.WatcherEvent
			if _, err := ev.Decode(frame[n:]); err == nil {
				c.events = append(c.events, ev)
			}
			continue
		}
		if h.Xid != xid {
			continue
		}
		if h.Err == wire.CodeOK && resp != nil {
			if _, err := resp.Decode(frame[n:]); err != nil {
				return 0, err
			}
		}
		return h.Err, nil
	}
}

func (c *client) next() int32 { c.xid++; return c.xid }

// removeAll deletes the children of path, depth first, then path.
func (c *client) removeAll(path string) error {
	var children wire.GetChildrenResponse
	code, err := c.call(c.next(), wire.OpGetChildren, &wire.PathWatchRequest{Path: path}, &children)
	switch {
	case err != nil:
		return err
	case code == wire.CodeNoNode:
		return nil
	case code != wire.CodeOK:
		return codeError{"list", path, code}
	}
	for _, name := range children.Children {
		if err := c.removeAll(path + "/" + name); err != nil {
			return err
		}
	}
	code, err = c.call(c.next(), wire.OpDelete, &wire.DeleteRequest{Path: path, Version: -1}, nil)
	switch {
	case err != nil:
		return err
	case code == wire.CodeNotEmpty: // a child came meanwhile
		return c.removeAll(path)
	case code != wire.CodeOK && code != wire.CodeNoNode:
		return codeError{"delete", path, code}
	}
	return nil
}

func (c *client) close() {
	c.call(c.next(), wire.OpCloseSession, nil, nil)
	c.conn.Close()
}
