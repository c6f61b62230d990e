package tree

import "github.com/zkraft/zkraft/wire"

// Multi applies the write ops of a multi atomically. Each op is checked
// against the tree as changed by the ops before it; if one fails, every change
// is undone, no trigger fires, and every result has type OpError with code OK
// before the failed op, the failure's code at it, and RUNTIMEINCONSISTENCY
// after it. On success the results carry ZooKeeper's result types: create for
// a plain create, create2 (with Stat) for a container or TTL create.
func (t *Tree) Multi(c *Context, ops []wire.MultiOp) []wire.MultiResult {
	t.undo = make([]func(), 0, 2*len(ops))
	defer func() { t.undo, t.held = nil, t.held[:0] }()
	mark := len(c.Triggers)
	results := make([]wire.MultiResult, len(ops))
	for i, op := range ops {
		res, code := t.multiOp(c, op)
		if code != wire.CodeOK {
			for j := len(t.undo) - 1; j >= 0; j-- {
				t.undo[j]() // puts back the nodes held
			}
			c.Triggers = c.Triggers[:mark]
			return failedMulti(len(ops), i, code)
		}
		results[i] = res
	}
	for _, id := range t.held {
		t.releaseNode(id, t.nodes.at(id))
	}
	return results
}

func failedMulti(n, failed int, code wire.Code) []wire.MultiResult {
	results := make([]wire.MultiResult, n)
	for i := range results {
		results[i].Type = wire.OpError
		switch {
		case i == failed:
			results[i].Err = code
		case i > failed:
			results[i].Err = wire.CodeRuntimeInconsistency
		}
	}
	return results
}

func (t *Tree) multiOp(c *Context, op wire.MultiOp) (wire.MultiResult, wire.Code) {
	switch r := op.Req.(type) {
	case *wire.CreateRequest:
		return t.multiCreate(c, CreateArgs{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags, TTL: -1})
	case *wire.CreateTTLRequest:
		return t.multiCreate(c, CreateArgs{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags, TTL: r.TTL})
	case *wire.DeleteRequest:
		return wire.MultiResult{Type: wire.OpDelete}, t.Delete(c, r.Path, r.Version)
	case *wire.SetDataRequest:
		st, code := t.SetData(c, r.Path, r.Data, r.Version)
		return wire.MultiResult{Type: wire.OpSetData, Stat: st}, code
	case *wire.CheckVersionRequest:
		return wire.MultiResult{Type: wire.OpCheck}, t.CheckVersion(c, r.Path, r.Version)
	}
	return wire.MultiResult{}, wire.CodeBadArguments
}

// multiCreate runs a multi's create sub-op. As in ZooKeeper, the sub-op's
// wire type is not what decides: the flags do (a TTL flag makes a createTTL,
// the container flag a createContainer, anything else a plain create), and a
// TTL only counts for a TTL flag.
func (t *Tree) multiCreate(c *Context, a CreateArgs) (wire.MultiResult, wire.Code) {
	m, _ := parseFlags(a.Flags)
	switch {
	case m.ttlMode:
		a.Op = wire.OpCreateTTL
	case m.kind == KindContainer:
		a.Op, a.TTL = wire.OpCreateContainer, -1
	default:
		a.Op, a.TTL = wire.OpCreate, -1
	}
	path, st, code := t.Create(c, a)
	if a.Op == wire.OpCreate {
		return wire.MultiResult{Type: wire.OpCreate, Path: path}, code
	}
	return wire.MultiResult{Type: wire.OpCreate2, Path: path, Stat: st}, code
}
