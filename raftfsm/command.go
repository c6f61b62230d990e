package raftfsm

import (
	"errors"
	"fmt"

	"github.com/zkraft/zkraft/wire"
)

// ErrBadCommand means a log entry is not a command this package can decode.
var ErrBadCommand = errors.New("raftfsm: bad command")

// Type is a command's type byte. Types with the Ignorable bit set may be
// skipped by an older FSM that does not know them; any other unknown type
// makes Apply panic, since replicas would otherwise diverge.
type Type uint8

// Command types.
const (
	// TypeRequest is a client's write request (create, delete, setData,
	// setACL, multi, reconfig, deleteContainer).
	TypeRequest Type = 1
	// TypeCreateSession creates a session with a proposer-chosen id,
	// timeout and password.
	TypeCreateSession Type = 2
	// TypeCloseSession closes a session, deleting its ephemerals: a client's
	// close, or the leader's decision that it expired.
	TypeCloseSession Type = 3
	// TypeReap deletes an empty container or expired TTL node, proposed by
	// the leader's container manager.
	TypeReap Type = 4
	// TypeReconfig is a client's reconfig as the leader decided it: Code is
	// its outcome, and when that is OK, Body holds the new configuration's
	// server lines (each ending in a new line); the version line is the
	// command's zxid, added as it applies. With Session 0 it is the
	// leader's own: the first leader of a cluster that allows reconfig
	// versions the configuration zoo.cfg gave, as ZooKeeper's does.
	TypeReconfig Type = 5

	// Ignorable marks a command type older FSMs may skip.
	Ignorable Type = 0x80
)

const flagExtendedTypes = 1

// Command is one entry of the replicated log.
type Command struct {
	Type Type
	// Origin and ReqID identify the request on the member that proposed it,
	// so that member can answer its client when its own FSM applies it.
	Origin uint64
	ReqID  uint64
	// Session is the calling session; for TypeCreateSession and
	// TypeCloseSession, the session created or closed. 0 means the server.
	Session int64
	// Time is the proposer's wall clock in ms since the epoch: ctime, mtime
	// and TTL ages come from it, never from the applying member's clock.
	Time int64
	// ExtendedTypes says whether the proposer allows TTL nodes.
	ExtendedTypes bool
	// Auth holds the caller's identities for ACL checks.
	Auth []wire.Id
	// Op and Body are a TypeRequest's opcode and jute request body.
	Op   wire.Op
	Body []byte
	// Timeout (ms) and Passwd are a TypeCreateSession's.
	Timeout int32
	Passwd  []byte
	// Path is a TypeReap's node.
	Path string
	// Code is a TypeReconfig's outcome.
	Code wire.Code
}

// Append appends the command's encoding: its type byte, the common header,
// then the type's own fields.
func (c *Command) Append(dst []byte) []byte {
	dst = append(dst, byte(c.Type))
	dst = wire.AppendLong(dst, int64(c.Origin))
	dst = wire.AppendLong(dst, int64(c.ReqID))
	dst = wire.AppendLong(dst, c.Session)
	dst = wire.AppendLong(dst, c.Time)
	var flags int32
	if c.ExtendedTypes {
		flags |= flagExtendedTypes
	}
	dst = wire.AppendInt(dst, flags)
	dst = wire.AppendInt(dst, int32(len(c.Auth)))
	for _, id := range c.Auth {
		dst = id.Append(dst)
	}
	// The Ignorable bit does not change a known type's fields: Apply
	// dispatches on the type without it, so the codec must too.
	switch c.Type &^ Ignorable {
	case TypeRequest:
		dst = wire.AppendInt(dst, int32(c.Op))
		dst = append(dst, c.Body...)
	case TypeCreateSession:
		dst = wire.AppendInt(dst, c.Timeout)
		dst = wire.AppendBuffer(dst, c.Passwd)
	case TypeReap:
		dst = wire.AppendString(dst, c.Path)
	case TypeReconfig:
		dst = wire.AppendInt(dst, int32(c.Code))
		dst = append(dst, c.Body...)
	}
	return dst
}

// Encode returns the command's encoding in a fresh slice.
func (c *Command) Encode() []byte { return c.Append(make([]byte, 0, 64+len(c.Body))) }

// Decode reads a command. A TypeRequest's or TypeReconfig's Body aliases src.
func (c *Command) Decode(src []byte) error { return c.decode(src, nil) }

// decode is Decode, taking the auth ids from auths when it holds them.
func (c *Command) decode(src []byte, auths authTable) error {
	if len(src) < 1 {
		return fmt.Errorf("%w: empty", ErrBadCommand)
	}
	c.Type = Type(src[0])
	d := wire.NewDecoder(src[1:])
	c.Origin = uint64(d.Long())
	c.ReqID = uint64(d.Long())
	c.Session = d.Long()
	c.Time = d.Long()
	flags := d.Int()
	c.ExtendedTypes = flags&flagExtendedTypes != 0
	c.Auth = auths.decode(d, src[1:])
	switch c.Type &^ Ignorable {
	case TypeRequest:
		c.Op = wire.Op(d.Int())
		if d.Err() == nil {
			c.Body = src[1+d.Offset():]
		}
	case TypeCreateSession:
		c.Timeout = d.Int()
		c.Passwd = d.Buffer()
	case TypeReap:
		c.Path = d.String()
	case TypeReconfig:
		c.Code = wire.Code(d.Int())
		if d.Err() == nil {
			c.Body = src[1+d.Offset():]
		}
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: type %d: %w", ErrBadCommand, c.Type, err)
	}
	return nil
}

// authTable interns the auth ids of decoded commands, keyed by their
// encoding: a member's commands carry the same few lists (one a client
// address or identity) over and over, and decoding each afresh costs a
// slice and two strings an id. Commands share the lists: nothing changes a
// Command's Auth in place. A nil table interns nothing.
type authTable map[string][]wire.Id

// maxAuthLists bounds an authTable: past it, the table starts again.
const maxAuthLists = 1024

// decode reads a vector of ids from d, which reads src, the table's own
// copy if it holds one.
func (t authTable) decode(d *wire.Decoder, src []byte) []wire.Id {
	if t == nil {
		return decodeIDs(d)
	}
	start := d.Offset()
	for range d.VectorLen(8) {
		d.StringBytes()
		d.StringBytes()
	}
	if d.Err() != nil {
		return nil
	}
	key := src[start:d.Offset()] // the ids' encoding
	if ids, ok := t[string(key)]; ok {
		return ids
	}
	ids := decodeIDs(wire.NewDecoder(key))
	if len(t) >= maxAuthLists {
		clear(t)
	}
	t[string(key)] = ids
	return ids
}

func decodeIDs(d *wire.Decoder) []wire.Id {
	ids := make([]wire.Id, d.VectorLen(8))
	for i := range ids {
		ids[i].Scheme = d.String()
		ids[i].ID = d.String()
	}
	return ids
}
