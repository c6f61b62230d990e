package wire

import "fmt"

// MultiHeader precedes each sub-op of a multi request and each result of a
// multi reply; a header with Done set ends the list (9 bytes on the wire).
type MultiHeader struct {
	Type Op
	Done bool
	Err  Code
}

// MultiHeaderSize is the encoded size of a MultiHeader.
const MultiHeaderSize = 9

// appendMultiEnd appends the terminator every multi request and reply ends
// with: MultiHeader{-1, true, -1}.
func appendMultiEnd(dst []byte) []byte {
	return MultiHeader{Type: OpError, Done: true, Err: -1}.Append(dst)
}

// Append appends the encoding of h.
func (h MultiHeader) Append(dst []byte) []byte {
	dst = AppendInt(dst, int32(h.Type))
	dst = AppendBool(dst, h.Done)
	return AppendInt(dst, int32(h.Err))
}

func (h *MultiHeader) decode(d *Decoder) {
	h.Type = Op(d.Int())
	h.Done = d.Bool()
	h.Err = Code(d.Int())
}

// Decode reads a MultiHeader from src.
func (h *MultiHeader) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { h.decode(d) })
}

// nextMultiHeader reads the header of the next sub-op or result. It reports
// false at the terminator, and fails with ErrBadMulti if the input ends
// before a terminator was read.
func nextMultiHeader(d *Decoder) (MultiHeader, bool) {
	var h MultiHeader
	if d.Err() != nil {
		return h, false
	}
	if d.Remaining() < MultiHeaderSize {
		d.Fail(fmt.Errorf("%w: input ends before the terminator", ErrBadMulti))
		return h, false
	}
	h.decode(d)
	return h, !h.Done
}

// MultiOp is one sub-op of a multi request: its opcode and its request
// record (*CreateRequest, *CreateTTLRequest, *DeleteRequest,
// *SetDataRequest, *CheckVersionRequest, or *PathWatchRequest for the read
// sub-ops getData and getChildren). Req must not be nil.
type MultiOp struct {
	Type Op
	Req  Record
}

// MultiRequest is the body of multi (14) and multiRead (22). Read is set by
// Decode when the sub-ops are reads (getData, getChildren), which only
// multiRead may carry; it is not part of the encoding, and an empty multi
// decodes with Read false. A server must still check that the header's
// opcode agrees with Read.
type MultiRequest struct {
	Ops  []MultiOp
	Read bool
}

// Append appends the encoding of m: each sub-op as a MultiHeader{Type,
// false, -1} and its record, then the terminator {-1, true, -1}.
func (m *MultiRequest) Append(dst []byte) []byte {
	for _, op := range m.Ops {
		dst = MultiHeader{Type: op.Type, Err: -1}.Append(dst)
		dst = op.Req.Append(dst)
	}
	return appendMultiEnd(dst)
}

// subOpKind reports whether a multi sub-op type is a read; ok is false
// for types a multi may not carry.
func subOpKind(t Op) (read, ok bool) {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return false, true
	case OpGetData, OpGetChildren:
		return true, true
	}
	return false, false
}

// decodeSubOp reads the record of a sub-op of type t (one subOpKind
// knows) into a fresh record. Each type is decoded as itself, not through
// an interface, which would move d to the heap.
func decodeSubOp(t Op, d *Decoder) Record {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer:
		r := &CreateRequest{}
		r.decode(d)
		if r.Flags == FlagPersistentWithTTL || r.Flags == FlagPersistentSequentialWithTTL {
			d.Fail(fmt.Errorf("%w: create sub-op with ttl flag %d and no ttl", ErrBadMulti, r.Flags))
		}
		return r
	case OpCreateTTL:
		r := &CreateTTLRequest{}
		r.decode(d)
		return r
	case OpDelete:
		r := &DeleteRequest{}
		r.decode(d)
		return r
	case OpSetData:
		r := &SetDataRequest{}
		r.decode(d)
		return r
	case OpCheck:
		r := &CheckVersionRequest{}
		r.decode(d)
		return r
	}
	r := &PathWatchRequest{}
	r.decode(d)
	return r
}

// firstOps is the room a decoded multi starts with: most carry a few
// sub-ops, and growing from one would take three allocations for three.
const firstOps = 4

func (m *MultiRequest) decode(d *Decoder) {
	m.Ops, m.Read = nil, false
	for i := 0; ; i++ {
		h, more := nextMultiHeader(d)
		if !more {
			return
		}
		read, ok := subOpKind(h.Type)
		switch {
		case !ok:
			d.Fail(fmt.Errorf("%w: sub-op type %d", ErrBadMulti, h.Type))
			return
		case i > 0 && read != m.Read:
			d.Fail(fmt.Errorf("%w: mixes read and write sub-ops", ErrBadMulti))
			return
		}
		m.Read = read
		rec := decodeSubOp(h.Type, d)
		if d.Err() != nil {
			return
		}
		if m.Ops == nil {
			m.Ops = make([]MultiOp, 0, firstOps)
		}
		m.Ops = append(m.Ops, MultiOp{Type: h.Type, Req: rec})
	}
}

// Decode reads a MultiRequest from src. Like ZooKeeper, it stops at the
// first header with Done set, whatever its type and err, and ignores the err
// of sub-op headers; Append always writes the canonical -1 values.
func (m *MultiRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { m.decode(d) })
}

// MultiResult is one result of a multi reply. Which fields are meaningful
// depends on Type: OpCreate has Path; OpCreate2 has Path and Stat; OpSetData
// has Stat; OpGetData has Data and Stat; OpGetChildren has Children;
// OpDelete and OpCheck have nothing; OpError has Err.
type MultiResult struct {
	Type     Op
	Err      Code
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
}

// Append appends the encoding of r: MultiHeader{Type, false, Err} and the
// body its type calls for (none for an unknown type, which Decode rejects).
func (r *MultiResult) Append(dst []byte) []byte {
	dst = MultiHeader{Type: r.Type, Err: r.Err}.Append(dst)
	switch r.Type {
	case OpCreate:
		dst = AppendString(dst, r.Path)
	case OpCreate2:
		dst = AppendString(dst, r.Path)
		dst = r.Stat.Append(dst)
	case OpSetData:
		dst = r.Stat.Append(dst)
	case OpGetData:
		dst = AppendBuffer(dst, r.Data)
		dst = r.Stat.Append(dst)
	case OpGetChildren:
		dst = AppendStrings(dst, r.Children)
	case OpError:
		dst = AppendInt(dst, int32(r.Err))
	}
	return dst
}

// decodeBody reads the body that follows header h. For OpError the code is
// taken from the body, as clients do, not from the header.
func (r *MultiResult) decodeBody(d *Decoder, h MultiHeader) {
	*r = MultiResult{Type: h.Type, Err: h.Err}
	switch h.Type {
	case OpCreate:
		r.Path = d.String()
	case OpCreate2:
		r.Path = d.String()
		r.Stat.decode(d)
	case OpDelete, OpCheck:
	case OpSetData:
		r.Stat.decode(d)
	case OpGetData:
		r.Data = d.Buffer()
		r.Stat.decode(d)
	case OpGetChildren:
		r.Children = d.Strings()
	case OpError:
		r.Err = Code(d.Int())
	default:
		d.Fail(fmt.Errorf("%w: result type %d", ErrBadMulti, h.Type))
	}
}

// Decode reads one result, header and body, from src; a terminator header
// there is ErrBadMulti.
func (r *MultiResult) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) {
		var h MultiHeader
		h.decode(d)
		if d.Err() == nil && h.Done {
			d.Fail(fmt.Errorf("%w: terminator where a result was expected", ErrBadMulti))
		}
		r.decodeBody(d, h)
	})
}

// MultiResponse is the reply body of multi (14) and multiRead (22). A
// failed multi still has reply header err 0: every result is then of type
// OpError, CodeOK before the failing op, its code for it, and
// CodeRuntimeInconsistency after it.
type MultiResponse struct {
	Results []MultiResult
}

// Append appends the encoding of m: each result, then the terminator
// {-1, true, -1}.
func (m *MultiResponse) Append(dst []byte) []byte {
	for i := range m.Results {
		dst = m.Results[i].Append(dst)
	}
	return appendMultiEnd(dst)
}

func (m *MultiResponse) decode(d *Decoder) {
	m.Results = nil
	for {
		h, more := nextMultiHeader(d)
		if !more {
			return
		}
		var r MultiResult
		r.decodeBody(d, h)
		if d.Err() != nil {
			return
		}
		m.Results = append(m.Results, r)
	}
}

// Decode reads a MultiResponse from src. It fails with ErrBadMulti on a
// result type ZooKeeper never sends or a missing terminator.
func (m *MultiResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { m.decode(d) })
}
