// Package serverfuzz turns fuzzer bytes into a well-framed ZooKeeper
// session: a ConnectRequest and a pipeline of requests of every kind a
// client may send, with the paths, flags, versions, ACLs and xids a real
// client would use mixed with the ones it should not. FuzzServer (in this
// package's test) feeds such sessions to a live server.
package serverfuzz

import (
	"fmt"

	"github.com/zkraft/zkraft/wire"
)

// Request is one framed request of a program.
type Request struct {
	Xid  int32
	Op   wire.Op
	Body []byte // the encoded request body, possibly malformed on purpose
}

// Program is a session to play: its ConnectRequest and its requests, sent
// pipelined in order.
type Program struct {
	Connect  wire.ConnectRequest
	Requests []Request
	Closes   bool // the last request is closeSession
}

// String describes the program for a failure message.
func (p Program) String() string {
	s := fmt.Sprintf("connect timeout=%d session=%#x readOnly=%v\n", p.Connect.TimeOut, p.Connect.SessionID, p.Connect.ReadOnly)
	for _, r := range p.Requests {
		s += fmt.Sprintf("  xid=%d %s (%d) body=%x\n", r.Xid, r.Op, int32(r.Op), r.Body)
	}
	return s
}

// MaxRequests bounds a program's length, so that one input stays fast.
const MaxRequests = 48

// paths mixes the paths of a small tree with ones ZooKeeper refuses and the
// system nodes.
var paths = []string{
	"/", "/a", "/a/b", "/a/b/c", "/s", "/s/n", "/e", "/t", "/c", "/c/x",
	"/zookeeper", "/zookeeper/config", "/zookeeper/quota", "/zookeeper/quota/a",
	"", "a", "/a/", "//a", "/a/./b", "/a/../b", "/a\x00b", "/\u00e9", "/a/b/c/d/e/f",
}

var acls = [][]wire.ACL{
	wire.OpenACLUnsafe,
	wire.ReadACLUnsafe,
	wire.CreatorAllACL,
	nil,
	{{Perms: 0, ID: wire.Id{Scheme: "world", ID: "anyone"}}},
	{{Perms: wire.PermAll, ID: wire.Id{Scheme: "digest", ID: "u:bogus"}}},
	{{Perms: wire.PermAll, ID: wire.Id{Scheme: "digest", ID: "nocolon"}}},
	{{Perms: wire.PermAll, ID: wire.Id{Scheme: "ip", ID: "127.0.0.1/33"}}},
	{{Perms: wire.PermAll, ID: wire.Id{Scheme: "ip", ID: "10.0.0.0/8"}}},
	{{Perms: 0x7fffffff, ID: wire.Id{Scheme: "bogus", ID: "x"}}},
	{{Perms: wire.PermAll, ID: wire.Id{Scheme: "world", ID: "nobody"}}},
}

var (
	createFlags = []int32{0, 1, 2, 3, 4, 5, 6, -1, 7, 100}
	versions    = []int32{-1, 0, 1, 2, -2, 0x7fffffff}
	ttls        = []int64{1, 0, 100, -1, 1 << 40, 0x7fffffffffffffff}
	zxids       = []int64{0, 1, -1, 1 << 40, 0x7fffffffffffffff}
	timeouts    = []int32{4000, 0, 1, -1, 100000, 0x7fffffff}
	watchModes  = []int32{0, 1, 2, -1, 3}
	watchTypes  = []int32{1, 2, 3, 0, 9}
	authSchemes = []string{"digest", "ip", "world", "super", "bogus", ""}
	authBlobs   = [][]byte{[]byte("u:p"), []byte("super:test"), []byte("bad"), nil, []byte("127.0.0.1")}
	weirdXids   = []int32{0, -2, -4, -8, 0x7fffffff, -0x80000000}
)

// input consumes fuzzer bytes; once they run out it yields zeros.
type input struct{ b []byte }

func (in *input) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *input) pick(n int) int { return int(in.byte()) % n }

func (in *input) bytes(max int) []byte {
	n := in.pick(max + 1)
	n = min(n, len(in.b))
	out := in.b[:n]
	in.b = in.b[n:]
	return out
}

func (in *input) path() string { return paths[in.pick(len(paths))] }

func (in *input) paths(max int) []string {
	var ps []string
	for range in.pick(max + 1) {
		ps = append(ps, in.path())
	}
	return ps
}

func (in *input) version() int32 { return versions[in.pick(len(versions))] }

// Decode turns fuzzer bytes into a program.
func Decode(data []byte) Program {
	in := &input{b: data}
	var p Program
	c := in.byte()
	p.Connect = wire.ConnectRequest{
		TimeOut:     timeouts[int(c&7)%len(timeouts)],
		ReadOnly:    c&8 != 0,
		HasReadOnly: c&16 == 0,
		Passwd:      make([]byte, 16),
	}
	if c&32 != 0 {
		p.Connect.LastZxidSeen = zxids[in.pick(len(zxids))]
	}
	if c&64 != 0 {
		p.Connect.SessionID = int64(in.byte())<<32 | 0x1234 // a session the server does not know
	}
	xid := int32(0)
	for len(in.b) > 0 && len(p.Requests) < MaxRequests {
		xid++
		x := xid
		if in.pick(16) == 0 {
			x = weirdXids[in.pick(len(weirdXids))]
		}
		op, body := in.request()
		p.Requests = append(p.Requests, Request{Xid: x, Op: op, Body: body})
		if op == wire.OpCloseSession {
			p.Closes = true
			break
		}
	}
	return p
}

// request decodes one request.
func (in *input) request() (wire.Op, []byte) {
	switch in.pick(18) {
	case 0:
		ops := []wire.Op{wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer}
		op := ops[in.pick(len(ops))]
		return op, (&wire.CreateRequest{Path: in.path(), Data: in.bytes(8), ACL: acls[in.pick(len(acls))],
			Flags: createFlags[in.pick(len(createFlags))]}).Append(nil)
	case 1:
		return wire.OpCreateTTL, (&wire.CreateTTLRequest{Path: in.path(), Data: in.bytes(8), ACL: acls[in.pick(len(acls))],
			Flags: createFlags[in.pick(len(createFlags))], TTL: ttls[in.pick(len(ttls))]}).Append(nil)
	case 2:
		return wire.OpDelete, (&wire.DeleteRequest{Path: in.path(), Version: in.version()}).Append(nil)
	case 3:
		ops := []wire.Op{wire.OpExists, wire.OpGetData, wire.OpGetChildren, wire.OpGetChildren2}
		op := ops[in.pick(len(ops))]
		return op, (&wire.PathWatchRequest{Path: in.path(), Watch: in.pick(2) == 0}).Append(nil)
	case 4:
		return wire.OpSetData, (&wire.SetDataRequest{Path: in.path(), Data: in.bytes(8), Version: in.version()}).Append(nil)
	case 5:
		return wire.OpGetACL, (&wire.PathRequest{Path: in.path()}).Append(nil)
	case 6:
		return wire.OpSetACL, (&wire.SetACLRequest{Path: in.path(), ACL: acls[in.pick(len(acls))], Version: in.version()}).Append(nil)
	case 7:
		ops := []wire.Op{wire.OpSync, wire.OpGetEphemerals, wire.OpGetAllChildrenNumber, wire.OpDeleteContainer}
		return ops[in.pick(len(ops))], (&wire.PathRequest{Path: in.path()}).Append(nil)
	case 8:
		return wire.OpCheck, (&wire.CheckVersionRequest{Path: in.path(), Version: in.version()}).Append(nil)
	case 9:
		return in.multi()
	case 10:
		if in.pick(2) == 0 {
			return wire.OpSetWatches, (&wire.SetWatches{RelativeZxid: zxids[in.pick(len(zxids))],
				DataWatches: in.paths(3), ExistWatches: in.paths(3), ChildWatches: in.paths(3)}).Append(nil)
		}
		return wire.OpSetWatches2, (&wire.SetWatches2{RelativeZxid: zxids[in.pick(len(zxids))],
			DataWatches: in.paths(2), ExistWatches: in.paths(2), ChildWatches: in.paths(2),
			PersistentWatches: in.paths(2), PersistentRecursiveWatches: in.paths(2)}).Append(nil)
	case 11:
		if in.pick(2) == 0 {
			return wire.OpAddWatch, (&wire.AddWatchRequest{Path: in.path(), Mode: watchModes[in.pick(len(watchModes))]}).Append(nil)
		}
		op := []wire.Op{wire.OpRemoveWatches, wire.OpCheckWatches}[in.pick(2)]
		return op, (&wire.RemoveWatchesRequest{Path: in.path(), Type: watchTypes[in.pick(len(watchTypes))]}).Append(nil)
	case 12:
		return wire.OpAuth, (&wire.AuthPacket{Scheme: authSchemes[in.pick(len(authSchemes))],
			Auth: authBlobs[in.pick(len(authBlobs))]}).Append(nil)
	case 13:
		return []wire.Op{wire.OpPing, wire.OpWhoAmI}[in.pick(2)], nil
	case 14:
		return wire.OpSASL, (&wire.SASLRequest{Token: in.bytes(8)}).Append(nil)
	case 15:
		members := []string{"", "server.9=127.0.0.1:1:2:participant;127.0.0.1:3", "bogus", "1"}
		return wire.OpReconfig, (&wire.ReconfigRequest{JoiningServers: members[in.pick(len(members))],
			LeavingServers: members[in.pick(len(members))], CurConfigID: zxids[in.pick(len(zxids))]}).Append(nil)
	case 16:
		// A body that need not decode, for a known opcode or any number.
		op := wire.Op(in.pick(110) - 12)
		if in.pick(4) == 0 {
			op = wire.Op(int32(in.byte())<<24 | int32(in.byte()))
		}
		return op, in.bytes(24)
	}
	return wire.OpCloseSession, nil
}

// multi decodes a multi or multiRead of up to eight operations, with an
// operation type that does not belong now and then.
func (in *input) multi() (wire.Op, []byte) {
	read := in.pick(3) == 0
	var m wire.MultiRequest
	m.Read = read
	for range in.pick(9) {
		var op wire.MultiOp
		switch k := in.pick(7); {
		case read && k < 3:
			op = wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: in.path()}}
		case read:
			op = wire.MultiOp{Type: wire.OpGetChildren, Req: &wire.PathWatchRequest{Path: in.path()}}
		case k == 0:
			op = wire.MultiOp{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: in.path(), Data: in.bytes(4),
				ACL: acls[in.pick(len(acls))], Flags: createFlags[in.pick(len(createFlags))]}}
		case k == 1:
			op = wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: in.path(), Version: in.version()}}
		case k == 2:
			op = wire.MultiOp{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: in.path(), Data: in.bytes(4), Version: in.version()}}
		case k == 3:
			op = wire.MultiOp{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: in.path(), Version: in.version()}}
		case k == 4:
			op = wire.MultiOp{Type: wire.OpCreate2, Req: &wire.CreateRequest{Path: in.path(), ACL: wire.OpenACLUnsafe}}
		case k == 5:
			op = wire.MultiOp{Type: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{Path: in.path(), ACL: wire.OpenACLUnsafe,
				Flags: createFlags[in.pick(len(createFlags))], TTL: ttls[in.pick(len(ttls))]}}
		default:
			op = wire.MultiOp{Type: wire.OpGetData, Req: &wire.PathWatchRequest{Path: in.path()}} // a read in a write multi
		}
		m.Ops = append(m.Ops, op)
	}
	if read {
		return wire.OpMultiRead, m.Append(nil)
	}
	return wire.OpMulti, m.Append(nil)
}
