package wire

// This file holds the bodies of successful replies. An error reply (reply
// header err != 0) has no body at all, except for multi (see multi.go).

// CreateResponse is the reply body of create (1): the path actually
// created, with any sequence suffix.
type CreateResponse struct {
	Path string
}

// Append appends the encoding of r.
func (r *CreateResponse) Append(dst []byte) []byte { return AppendString(dst, r.Path) }

func (r *CreateResponse) decode(d *Decoder) { r.Path = d.String() }

// Decode reads a CreateResponse from src.
func (r *CreateResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// Create2Response is the reply body of create2 (15), createContainer (19)
// and createTTL (21): the path created and the new node's Stat.
type Create2Response struct {
	Path string
	Stat Stat
}

// Append appends the encoding of r.
func (r *Create2Response) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return r.Stat.Append(dst)
}

func (r *Create2Response) decode(d *Decoder) {
	r.Path = d.String()
	r.Stat.decode(d)
}

// Decode reads a Create2Response from src.
func (r *Create2Response) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// StatResponse is the reply body of exists (3), setData (5) and setACL (7).
type StatResponse struct {
	Stat Stat
}

// Append appends the encoding of r.
func (r *StatResponse) Append(dst []byte) []byte { return r.Stat.Append(dst) }

func (r *StatResponse) decode(d *Decoder) { r.Stat.decode(d) }

// Decode reads a StatResponse from src.
func (r *StatResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// GetDataResponse is the reply body of getData (4) and of reconfig (16),
// which returns the new configuration as data. Data may be nil (null).
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Append appends the encoding of r.
func (r *GetDataResponse) Append(dst []byte) []byte {
	dst = AppendBuffer(dst, r.Data)
	return r.Stat.Append(dst)
}

func (r *GetDataResponse) decode(d *Decoder) {
	r.Data = d.Buffer()
	r.Stat.decode(d)
}

// Decode reads a GetDataResponse from src.
func (r *GetDataResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// GetACLResponse is the reply body of getACL (6).
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Append appends the encoding of r.
func (r *GetACLResponse) Append(dst []byte) []byte {
	dst = AppendACLs(dst, r.ACL)
	return r.Stat.Append(dst)
}

func (r *GetACLResponse) decode(d *Decoder) {
	r.ACL = d.ACLs()
	r.Stat.decode(d)
}

// Decode reads a GetACLResponse from src.
func (r *GetACLResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// GetChildrenResponse is the reply body of getChildren (8) and of
// getEphemerals (103), whose reply has the same layout (a list of paths).
type GetChildrenResponse struct {
	Children []string
}

// Append appends the encoding of r.
func (r *GetChildrenResponse) Append(dst []byte) []byte { return AppendStrings(dst, r.Children) }

func (r *GetChildrenResponse) decode(d *Decoder) { r.Children = d.Strings() }

// Decode reads a GetChildrenResponse from src.
func (r *GetChildrenResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// GetChildren2Response is the reply body of getChildren2 (12).
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Append appends the encoding of r.
func (r *GetChildren2Response) Append(dst []byte) []byte {
	dst = AppendStrings(dst, r.Children)
	return r.Stat.Append(dst)
}

func (r *GetChildren2Response) decode(d *Decoder) {
	r.Children = d.Strings()
	r.Stat.decode(d)
}

// Decode reads a GetChildren2Response from src.
func (r *GetChildren2Response) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// SyncResponse is the reply body of sync (9): the request's path, echoed.
type SyncResponse struct {
	Path string
}

// Append appends the encoding of r.
func (r *SyncResponse) Append(dst []byte) []byte { return AppendString(dst, r.Path) }

func (r *SyncResponse) decode(d *Decoder) { r.Path = d.String() }

// Decode reads a SyncResponse from src.
func (r *SyncResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// GetAllChildrenNumberResponse is the reply body of getAllChildrenNumber
// (104): the number of descendants of the node.
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Append appends the encoding of r.
func (r *GetAllChildrenNumberResponse) Append(dst []byte) []byte {
	return AppendInt(dst, r.TotalNumber)
}

func (r *GetAllChildrenNumberResponse) decode(d *Decoder) { r.TotalNumber = d.Int() }

// Decode reads a GetAllChildrenNumberResponse from src.
func (r *GetAllChildrenNumberResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// ErrorResponse is a bare result code (4 bytes): the body of a failed
// result inside a multi reply, and the body of addWatch's (106) reply,
// where it is always CodeOK.
type ErrorResponse struct {
	Err Code
}

// Append appends the encoding of r.
func (r ErrorResponse) Append(dst []byte) []byte { return AppendInt(dst, int32(r.Err)) }

func (r *ErrorResponse) decode(d *Decoder) { r.Err = Code(d.Int()) }

// Decode reads an ErrorResponse from src.
func (r *ErrorResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// ClientInfo is one authenticated identity of a session, as whoAmI reports it.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Append appends the encoding of c.
func (c ClientInfo) Append(dst []byte) []byte {
	dst = AppendString(dst, c.AuthScheme)
	return AppendString(dst, c.User)
}

func (c *ClientInfo) decode(d *Decoder) {
	c.AuthScheme = d.String()
	c.User = d.String()
}

// Decode reads a ClientInfo from src.
func (c *ClientInfo) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { c.decode(d) })
}

// WhoAmIResponse is the reply body of whoAmI (107). An empty list is
// written as count 0.
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Append appends the encoding of r.
func (r *WhoAmIResponse) Append(dst []byte) []byte {
	dst = AppendInt(dst, int32(len(r.ClientInfo)))
	for _, c := range r.ClientInfo {
		dst = c.Append(dst)
	}
	return dst
}

func (r *WhoAmIResponse) decode(d *Decoder) {
	r.ClientInfo = nil
	n := d.VectorLen(8) // two ustring length prefixes
	if n == 0 {
		return
	}
	infos := make([]ClientInfo, n)
	for i := range infos {
		infos[i].decode(d)
	}
	if d.Err() == nil {
		r.ClientInfo = infos
	}
}

// Decode reads a WhoAmIResponse from src.
func (r *WhoAmIResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// SASLResponse is the reply body of sasl (102) (SetSASLResponse in
// zookeeper.jute): the server's SASL token.
type SASLResponse struct {
	Token []byte
}

// Append appends the encoding of r.
func (r *SASLResponse) Append(dst []byte) []byte { return AppendBuffer(dst, r.Token) }

func (r *SASLResponse) decode(d *Decoder) { r.Token = d.Buffer() }

// Decode reads a SASLResponse from src.
func (r *SASLResponse) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}
