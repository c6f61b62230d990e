package console

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/wire"
)

// writeTimeout bounds one write: connecting, authenticating, the request.
const writeTimeout = 10 * time.Second

// maxBody bounds a write's JSON body: 1 MiB of data (jute.maxbuffer) in
// base64, and room for the rest.
const maxBody = 2 << 20

// WriteRequest is the body of a create (POST) or setData (PUT).
type WriteRequest struct {
	// Path is the node to create (for a sequential node, the prefix).
	Path string `json:"path"`
	// Data is the node's data, as Encoding says: "text" (the default) or
	// "base64".
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
	// Mode is a create's: "persistent" (the default),
	// "persistent_sequential" or "container". A node of the console's own
	// session would vanish with it, so ephemeral modes are refused.
	Mode string `json:"mode"`
	// ACL is a create's; empty means world:anyone with every permission.
	ACL []ACL `json:"acl"`
	// Version is a setData's expected version; -1 (or absent) matches any.
	Version *int32 `json:"version"`
}

// write wraps a write handler: refused unless writes are enabled, a JSON
// body where one is expected, and the outcome of the request in JSON.
func (c *Console) write(op func(ctx context.Context, conn *zk.Conn, r *http.Request, req WriteRequest) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.opts.Writes {
			httpError(w, http.StatusForbidden, "", "the console is read-only: writes are enabled by its Writes option (zkraft -console-writes)")
			return
		}
		var req WriteRequest
		if r.Method != http.MethodDelete {
			// A JSON content type also keeps other sites' forms out: a
			// cross-site request with it needs the browser's preflight.
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				httpError(w, http.StatusUnsupportedMediaType, "", "the body must be application/json")
				return
			}
			dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				httpError(w, http.StatusBadRequest, "", "bad JSON body: "+err.Error())
				return
			}
		}
		if r.Method != http.MethodPost {
			req.Path = r.URL.Query().Get("path")
		}
		if msg := validPath(req.Path); msg != "" {
			httpError(w, http.StatusBadRequest, wire.CodeBadArguments.String(), fmt.Sprintf("path %q: %s", req.Path, msg))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
		defer cancel()
		conn, err := c.dial(ctx)
		if err != nil {
			httpError(w, http.StatusBadGateway, "", err.Error())
			return
		}
		defer conn.Close()
		out, err := op(ctx, conn, r, req)
		if err != nil {
			writeFailed(w, err)
			return
		}
		writeJSON(w, out)
	}
}

// dial opens a session with the member's client port and authenticates it
// with the console's credentials.
func (c *Console) dial(ctx context.Context) (*zk.Conn, error) {
	quiet := zk.WithLogger(slog.NewLogLogger(slog.DiscardHandler, slog.LevelError))
	conn, events, err := zk.Connect(strings.Split(c.src.ConnectString(), ","), writeTimeout, quiet)
	if err != nil {
		return nil, fmt.Errorf("console: connect to %s: %w", c.src.ConnectString(), err)
	}
	for {
		select {
		case e := <-events:
			if e.State != zk.StateHasSession {
				continue
			}
			for _, a := range c.opts.Auth {
				if err := conn.AddAuth(a.Scheme, []byte(a.Credential)); err != nil {
					conn.Close()
					return nil, fmt.Errorf("console: addAuth %s: %w", a.Scheme, err)
				}
			}
			return conn, nil
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("console: connect to %s: %w", c.src.ConnectString(), ctx.Err())
		}
	}
}

// create makes a node; it answers the path created.
func (c *Console) create(_ context.Context, conn *zk.Conn, _ *http.Request, req WriteRequest) (any, error) {
	data, err := req.data()
	if err != nil {
		return nil, err
	}
	var flags int32
	switch req.Mode {
	case "", "persistent":
	case "persistent_sequential":
		flags = zk.FlagSequence
	case "container":
		flags = zk.FlagContainer
	default:
		return nil, badRequest(fmt.Sprintf("mode %q: want persistent, persistent_sequential or container", req.Mode))
	}
	acl := zk.WorldACL(zk.PermAll)
	if len(req.ACL) > 0 {
		if acl, err = zkACL(req.ACL); err != nil {
			return nil, err
		}
	}
	var created string
	if flags == zk.FlagContainer {
		created, err = conn.CreateContainer(req.Path, data, flags, acl)
	} else {
		created, err = conn.Create(req.Path, data, flags, acl)
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"path": created}, nil
}

// setData replaces a node's data; it answers the new Stat.
func (c *Console) setData(_ context.Context, conn *zk.Conn, _ *http.Request, req WriteRequest) (any, error) {
	data, err := req.data()
	if err != nil {
		return nil, err
	}
	version := int32(-1)
	if req.Version != nil {
		version = *req.Version
	}
	st, err := conn.Set(req.Path, data, version)
	if err != nil {
		return nil, err
	}
	return map[string]int32{"version": st.Version}, nil
}

// delete deletes a node (?version, default -1: any).
func (c *Console) delete(_ context.Context, conn *zk.Conn, r *http.Request, req WriteRequest) (any, error) {
	version := int64(-1)
	if s := r.URL.Query().Get("version"); s != "" {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("version %q is not a number", s))
		}
		version = v
	}
	if err := conn.Delete(req.Path, int32(version)); err != nil {
		return nil, err
	}
	return map[string]string{"deleted": req.Path}, nil
}

func (req WriteRequest) data() ([]byte, error) {
	switch req.Encoding {
	case "", "text":
		return []byte(req.Data), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(req.Data)
		if err != nil {
			return nil, badRequest("data is not base64: " + err.Error())
		}
		return b, nil
	}
	return nil, badRequest(fmt.Sprintf("encoding %q: want text or base64", req.Encoding))
}

// zkACL parses ACL entries with zkCli's permission letters.
func zkACL(acl []ACL) ([]zk.ACL, error) {
	out := make([]zk.ACL, 0, len(acl))
	for _, a := range acl {
		var p int32
		for _, ch := range a.Perms {
			i := strings.IndexRune("cdrwa", ch)
			if i < 0 {
				return nil, badRequest(fmt.Sprintf("permission %q: want letters of cdrwa", a.Perms))
			}
			p |= []int32{zk.PermCreate, zk.PermDelete, zk.PermRead, zk.PermWrite, zk.PermAdmin}[i]
		}
		out = append(out, zk.ACL{Perms: p, Scheme: a.Scheme, ID: a.ID})
	}
	return out, nil
}

// badRequest is a write the console refuses before sending it.
type badRequest string

func (e badRequest) Error() string { return string(e) }

// writeFailed answers a failed write with the status its ZooKeeper error
// means.
func writeFailed(w http.ResponseWriter, err error) {
	var bad badRequest
	status := http.StatusBadGateway
	switch {
	case errors.As(err, &bad):
		status = http.StatusBadRequest
	case errors.Is(err, zk.ErrNoAuth):
		status = http.StatusForbidden
	case errors.Is(err, zk.ErrNoNode):
		status = http.StatusNotFound
	case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNotEmpty):
		status = http.StatusConflict
	case errors.Is(err, zk.ErrInvalidACL), errors.Is(err, zk.ErrBadArguments), errors.Is(err, zk.ErrNoChildrenForEphemerals):
		status = http.StatusBadRequest
	}
	httpError(w, status, "", err.Error())
}
