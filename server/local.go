package server

import (
	"crypto/sha1"
	"encoding/base64"
	"log/slog"
	"strings"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// local runs a request that does not go through Raft: reads, sync, auth,
// watch management. Every earlier write of the connection has been applied.
func (c *conn) local(req request, body []byte) (string, bool) {
	rec, known := c.requests.For(req.op)
	if !known {
		// ZooKeeper answers an opcode it does not know with UNIMPLEMENTED
		// and closes the connection.
		c.rejected(slog.LevelWarn, rejectUnsupportedOp, slog.Int("op", int(req.op)))
		c.reply(req, c.srv.fsm.LastZxid(), wire.CodeUnimplemented, nil)
		c.finish()
		<-c.done
		return "unsupported opcode", false
	}
	if rec != nil {
		if _, err := rec.Decode(body); err != nil {
			c.rejected(slog.LevelDebug, rejectBadRequest, slog.String("op", req.op.String()), slog.String("err", err.Error()))
			c.reply(req, c.srv.fsm.LastZxid(), wire.CodeMarshallingError, nil)
			return "", true
		}
	}
	switch r := rec.(type) {
	case *wire.AuthPacket:
		return c.addAuth(req, r)
	case *wire.SetWatches:
		c.setWatches(req, r.RelativeZxid, watchLists{data: r.DataWatches, exist: r.ExistWatches, child: r.ChildWatches})
	case *wire.SetWatches2:
		c.setWatches(req, r.RelativeZxid, watchLists{data: r.DataWatches, exist: r.ExistWatches, child: r.ChildWatches,
			persistent: r.PersistentWatches, recursive: r.PersistentRecursiveWatches})
	case *wire.RemoveWatchesRequest:
		c.removeWatches(req, r)
	case *wire.AddWatchRequest:
		c.addWatch(req, r)
	case *wire.SASLRequest:
		// No SASL mechanism is configured. ZooKeeper 3.8.0 without one
		// answers a token with OK, zxid 0 and a null token, and the client
		// gains no identity; a null token makes it drop the connection.
		if r.Token == nil {
			c.rejected(slog.LevelWarn, rejectSASL)
			return "null SASL token", false
		}
		c.reply(req, 0, wire.CodeOK, &wire.SASLResponse{})
	case *wire.PathRequest:
		if req.op == wire.OpSync {
			if err := c.srv.node.Sync(c.done); err != nil {
				c.log.Warn("closing connection: sync failed", "err", err)
				return "sync failed", false
			}
		}
		c.read(req, rec)
	default:
		c.read(req, rec)
	}
	return "", true
}

// read answers a read against the local tree. The read, the watch it sets
// and the queuing of its reply happen under the FSM's read lock, so no write
// can fire that watch, or queue its event, between them.
func (c *conn) read(req request, rec wire.Record) {
	s := c.srv
	s.node.Current(c.done)
	s.fsm.Read(func(t *tree.Tree) {
		code, resp := c.readLocked(t, req.op, rec)
		c.reply(req, s.fsm.LastZxid(), code, resp)
	})
	// What they point to (data, names) is not kept alive.
	c.requests.Clear()
	c.replies = readReplies{}
}

// readReplies are the reply records of the most frequent reads, reused from
// one request to the next by the reader goroutine: a record handed on as a
// wire.Record goes to the heap, one allocation per reply. Nothing keeps
// them past the request: its reply is encoded into the outbound queue
// before read returns.
type readReplies struct {
	data      wire.GetDataResponse
	stat      wire.StatResponse
	children  wire.GetChildrenResponse
	children2 wire.GetChildren2Response
}

func (c *conn) readLocked(t *tree.Tree, op wire.Op, rec wire.Record) (wire.Code, wire.Record) {
	switch op {
	case wire.OpGetData:
		r := rec.(*wire.PathWatchRequest)
		data, st, code := t.Get(r.Path, c.ids())
		if code != wire.CodeOK {
			return code, nil
		}
		if r.Watch {
			c.srv.watches.add(c, r.Path, tableData)
		}
		c.replies.data = wire.GetDataResponse{Data: data, Stat: st}
		return code, &c.replies.data
	case wire.OpExists:
		r := rec.(*wire.PathWatchRequest)
		st, code := t.Exists(r.Path)
		if r.Watch && code != wire.CodeBadArguments {
			c.srv.watches.add(c, r.Path, tableData)
		}
		if code != wire.CodeOK {
			return code, nil
		}
		c.replies.stat = wire.StatResponse{Stat: st}
		return code, &c.replies.stat
	case wire.OpGetChildren, wire.OpGetChildren2:
		return c.children(t, op, rec.(*wire.PathWatchRequest))
	case wire.OpGetACL:
		acl, st, code := t.ACL(rec.(*wire.PathRequest).Path, c.ids())
		return code, &wire.GetACLResponse{ACL: acl, Stat: st}
	case wire.OpGetAllChildrenNumber:
		n, code := t.AllChildrenNumber(rec.(*wire.PathRequest).Path, c.ids())
		return code, &wire.GetAllChildrenNumberResponse{TotalNumber: n}
	case wire.OpGetEphemerals:
		return wire.CodeOK, &wire.GetChildrenResponse{Children: t.Ephemerals(c.session, rec.(*wire.PathRequest).Path)}
	case wire.OpMultiRead:
		return c.multiRead(t, rec.(*wire.MultiRequest))
	case wire.OpSync:
		// Answered here once syncBarrier (run before the read lock) has
		// brought this member up to date with the leader.
		return wire.CodeOK, &wire.SyncResponse{Path: rec.(*wire.PathRequest).Path}
	case wire.OpWhoAmI:
		return wire.CodeOK, &wire.WhoAmIResponse{ClientInfo: clientInfo(c.ids())}
	}
	return wire.CodeUnimplemented, nil
}

func (c *conn) children(t *tree.Tree, op wire.Op, r *wire.PathWatchRequest) (wire.Code, wire.Record) {
	names, st, code := t.Children(r.Path, c.ids())
	if code != wire.CodeOK {
		return code, nil
	}
	if r.Watch {
		c.srv.watches.add(c, r.Path, tableChild)
	}
	if op == wire.OpGetChildren {
		c.replies.children = wire.GetChildrenResponse{Children: names}
		return code, &c.replies.children
	}
	c.replies.children2 = wire.GetChildren2Response{Children: names, Stat: st}
	return code, &c.replies.children2
}

// multiRead answers each getData or getChildren sub-op independently,
// without watches; a failed one gives an error result.
func (c *conn) multiRead(t *tree.Tree, m *wire.MultiRequest) (wire.Code, wire.Record) {
	if !m.Read && len(m.Ops) > 0 {
		// ZooKeeper 3.8.0 has already made its empty response when it meets
		// the write sub-op, and sends it with the error.
		return wire.CodeMarshallingError, errorBody{&wire.MultiResponse{}}
	}
	results := make([]wire.MultiResult, len(m.Ops))
	limit := c.srv.cfg.MaxQueuedBytes
	size := wire.ReplyHeaderSize + wire.MultiHeaderSize
	for i, op := range m.Ops {
		path := op.Req.(*wire.PathWatchRequest).Path
		var code wire.Code
		if op.Type == wire.OpGetData {
			results[i].Data, results[i].Stat, code = t.Get(path, c.ids())
		} else {
			results[i].Children, _, code = t.Children(path, c.ids())
		}
		results[i].Type = op.Type
		if code != wire.CodeOK {
			results[i] = wire.MultiResult{Type: wire.OpError, Err: code}
		}
		if size += resultSize(&results[i], limit-size); size > limit {
			// Each sub-op may name the same large node: the reply could be
			// thousands of times the request. It would close the connection
			// once queued (MaxQueuedBytes) anyway; do not build it.
			c.rejected(slog.LevelWarn, rejectReplyTooLarge, slog.Int("ops", len(m.Ops)), slog.Int("max_queued_bytes", limit))
			c.close("reply too large")
			return wire.CodeOK, nil
		}
	}
	return wire.CodeOK, &wire.MultiResponse{Results: results}
}

// resultSize returns the encoded size of a multiRead result, or a size
// above limit as soon as it knows it is.
func resultSize(r *wire.MultiResult, limit int) int {
	size := wire.MultiHeaderSize
	switch {
	case r.Type == wire.OpError:
		return size + 4
	case r.Type == wire.OpGetData:
		return size + 4 + len(r.Data) + wire.StatSize
	}
	size += 4
	for _, name := range r.Children {
		if size += 4 + len(name); size > limit {
			break
		}
	}
	return size
}

// addAuth handles an auth packet. digest adds user:base64(sha1(user:pass))
// (and super, if that matches the configured super digest); ip adds the
// connection's address; any other scheme fails and closes the connection.
func (c *conn) addAuth(req request, p *wire.AuthPacket) (string, bool) {
	var ids []wire.Id
	switch p.Scheme {
	case tree.SchemeDigest:
		id := digestID(string(p.Auth))
		if super := c.srv.cfg.SuperDigest; super != "" && id == super {
			ids = append(ids, wire.Id{Scheme: tree.SchemeSuper, ID: ""})
		}
		ids = append(ids, wire.Id{Scheme: tree.SchemeDigest, ID: id})
	case tree.SchemeIP:
		ids = append(ids, wire.Id{Scheme: tree.SchemeIP, ID: c.ip})
	default:
		c.rejected(slog.LevelWarn, rejectAuthFailed, slog.String("scheme", p.Scheme))
		c.srv.stats.authFailed.Add(1)
		c.reply(req, 0, wire.CodeAuthFailed, nil)
		c.finish()
		<-c.done
		return "authentication failed", false
	}
	auth := append([]wire.Id(nil), c.ids()...)
	for _, id := range ids {
		if !containsID(auth, id) {
			auth = append(auth, id)
		}
	}
	c.setAuth(javaSetOrder(auth))
	c.reply(req, 0, wire.CodeOK, nil)
	return "", true
}

// digestID is ZooKeeper's DigestAuthenticationProvider.generateDigest.
func digestID(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func containsID(ids []wire.Id, id wire.Id) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func clientInfo(ids []wire.Id) []wire.ClientInfo {
	out := make([]wire.ClientInfo, 0, len(ids))
	for _, id := range ids {
		user := id.ID
		if id.Scheme == tree.SchemeDigest {
			user, _, _ = strings.Cut(id.ID, ":")
		}
		out = append(out, wire.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return out
}
