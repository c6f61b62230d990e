package wire

// Id is an ACL identity: a scheme and an id within it (world:anyone, digest:user:hash, ip:10.0.0.0/8, ...).
type Id struct {
	Scheme string
	ID     string
}

// Append appends the encoding of id.
func (id Id) Append(dst []byte) []byte {
	dst = AppendString(dst, id.Scheme)
	return AppendString(dst, id.ID)
}

func (id *Id) decode(d *Decoder) {
	id.Scheme = d.String()
	id.ID = d.String()
}

// Decode reads an Id from src.
func (id *Id) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { id.decode(d) })
}

// ACL is one access-control entry: permission bits granted to an identity.
type ACL struct {
	Perms int32
	ID    Id
}

// Append appends the encoding of a.
func (a ACL) Append(dst []byte) []byte {
	dst = AppendInt(dst, a.Perms)
	return a.ID.Append(dst)
}

func (a *ACL) decode(d *Decoder) {
	a.Perms = d.Int()
	a.ID.decode(d)
}

// Decode reads an ACL from src.
func (a *ACL) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { a.decode(d) })
}

// Well-known ACL lists (ZooDefs.Ids).
var (
	// OpenACLUnsafe gives every permission to everyone.
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: Id{Scheme: "world", ID: "anyone"}}}
	// CreatorAllACL gives every permission to the creator's authenticated ids.
	CreatorAllACL = []ACL{{Perms: PermAll, ID: Id{Scheme: "auth", ID: ""}}}
	// ReadACLUnsafe gives read permission to everyone.
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: Id{Scheme: "world", ID: "anyone"}}}
)

// AppendACLs appends a vector of ACL entries (count 0 for nil, never -1).
func AppendACLs(dst []byte, acl []ACL) []byte {
	dst = AppendInt(dst, int32(len(acl)))
	for _, a := range acl {
		dst = a.Append(dst)
	}
	return dst
}

// openACLEncoded is the encoding of OpenACLUnsafe.
var openACLEncoded = AppendACLs(nil, OpenACLUnsafe)

// ACLs reads a vector of ACL entries; null and empty both read as nil. The
// open list, what most nodes are created with, reads as OpenACLUnsafe
// itself, not decoded again (a slice and two strings): a decoded list must
// not be changed in place.
func (d *Decoder) ACLs() []ACL {
	if d.prefixed(openACLEncoded) {
		return OpenACLUnsafe
	}
	n := d.VectorLen(12)
	if n == 0 {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		out[i].decode(d)
	}
	if d.err != nil {
		return nil
	}
	return out
}

// Stat is a znode's metadata as clients see it (68 bytes on the wire).
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// StatSize is the encoded size of a Stat.
const StatSize = 68

// Append appends the encoding of s.
func (s *Stat) Append(dst []byte) []byte {
	dst = AppendLong(dst, s.Czxid)
	dst = AppendLong(dst, s.Mzxid)
	dst = AppendLong(dst, s.Ctime)
	dst = AppendLong(dst, s.Mtime)
	dst = AppendInt(dst, s.Version)
	dst = AppendInt(dst, s.Cversion)
	dst = AppendInt(dst, s.Aversion)
	dst = AppendLong(dst, s.EphemeralOwner)
	dst = AppendInt(dst, s.DataLength)
	dst = AppendInt(dst, s.NumChildren)
	return AppendLong(dst, s.Pzxid)
}

func (s *Stat) decode(d *Decoder) {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.DataLength = d.Int()
	s.NumChildren = d.Int()
	s.Pzxid = d.Long()
}

// Decode reads a Stat from src.
func (s *Stat) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { s.decode(d) })
}

// RequestHeader precedes every request after the connect request.
type RequestHeader struct {
	Xid    int32
	OpCode Op
}

// RequestHeaderSize is the encoded size of a RequestHeader.
const RequestHeaderSize = 8

// Append appends the encoding of h.
func (h RequestHeader) Append(dst []byte) []byte {
	dst = AppendInt(dst, h.Xid)
	return AppendInt(dst, int32(h.OpCode))
}

// Decode reads a RequestHeader from src.
func (h *RequestHeader) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) {
		h.Xid = d.Int()
		h.OpCode = Op(d.Int())
	})
}

// ReplyHeader precedes every reply and notification after the connect response.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// ReplyHeaderSize is the encoded size of a ReplyHeader.
const ReplyHeaderSize = 16

// Append appends the encoding of h.
func (h ReplyHeader) Append(dst []byte) []byte {
	dst = AppendInt(dst, h.Xid)
	dst = AppendLong(dst, h.Zxid)
	return AppendInt(dst, int32(h.Err))
}

// Decode reads a ReplyHeader from src.
func (h *ReplyHeader) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) {
		h.Xid = d.Int()
		h.Zxid = d.Long()
		h.Err = Code(d.Int())
	})
}

// ConnectRequest is the first frame a client sends, without a request header.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	// ReadOnly is the optional trailing byte; HasReadOnly says whether it was
	// present (Java, C and kazoo send it; go-zookeeper does not).
	ReadOnly    bool
	HasReadOnly bool
}

// Append appends the encoding of r; the readOnly byte only if HasReadOnly.
func (r *ConnectRequest) Append(dst []byte) []byte {
	dst = AppendInt(dst, r.ProtocolVersion)
	dst = AppendLong(dst, r.LastZxidSeen)
	dst = AppendInt(dst, r.TimeOut)
	dst = AppendLong(dst, r.SessionID)
	dst = AppendBuffer(dst, r.Passwd)
	if r.HasReadOnly {
		dst = AppendBool(dst, r.ReadOnly)
	}
	return dst
}

// Decode reads a ConnectRequest from src, with or without the readOnly byte.
func (r *ConnectRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) {
		r.ProtocolVersion = d.Int()
		r.LastZxidSeen = d.Long()
		r.TimeOut = d.Int()
		r.SessionID = d.Long()
		r.Passwd = d.Buffer()
		r.HasReadOnly = d.err == nil && d.Remaining() > 0
		if r.HasReadOnly {
			r.ReadOnly = d.Bool()
		}
	})
}

// ConnectResponse is the first frame a server sends, without a reply header.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	// ReadOnly is sent only when HasReadOnly: the server mirrors whether the
	// client's request carried the byte.
	ReadOnly    bool
	HasReadOnly bool
}

// Append appends the encoding of r.
func (r *ConnectResponse) Append(dst []byte) []byte {
	dst = AppendInt(dst, r.ProtocolVersion)
	dst = AppendInt(dst, r.TimeOut)
	dst = AppendLong(dst, r.SessionID)
	dst = AppendBuffer(dst, r.Passwd)
	if r.HasReadOnly {
		dst = AppendBool(dst, r.ReadOnly)
	}
	return dst
}

// Decode reads a ConnectResponse from src, with or without the readOnly byte.
func (r *ConnectResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) {
		r.ProtocolVersion = d.Int()
		r.TimeOut = d.Int()
		r.SessionID = d.Long()
		r.Passwd = d.Buffer()
		r.HasReadOnly = d.err == nil && d.Remaining() > 0
		if r.HasReadOnly {
			r.ReadOnly = d.Bool()
		}
	})
}

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State int32
	Path  string
}

// Append appends the encoding of e.
func (e *WatcherEvent) Append(dst []byte) []byte {
	dst = AppendInt(dst, int32(e.Type))
	dst = AppendInt(dst, e.State)
	return AppendString(dst, e.Path)
}

// Decode reads a WatcherEvent from src.
func (e *WatcherEvent) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) {
		e.Type = EventType(d.Int())
		e.State = d.Int()
		e.Path = d.String()
	})
}
