package wire

// This file holds the request bodies of the znode operations. Session-level
// requests (auth, setWatches, sasl, reconfig, watch management) are in
// requests_session.go, multi in multi.go.

// CreateRequest is the body of create (1), create2 (15) and
// createContainer (19). Flags is a CreateMode flag (FlagPersistent, ...).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// Append appends the encoding of r.
func (r *CreateRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	dst = AppendACLs(dst, r.ACL)
	return AppendInt(dst, r.Flags)
}

func (r *CreateRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = d.Int()
}

// Decode reads a CreateRequest from src.
func (r *CreateRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// CreateTTLRequest is the body of createTTL (21): a CreateRequest followed by
// the node's time to live in milliseconds.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// Append appends the encoding of r.
func (r *CreateTTLRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	dst = AppendACLs(dst, r.ACL)
	dst = AppendInt(dst, r.Flags)
	return AppendLong(dst, r.TTL)
}

func (r *CreateTTLRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = d.Int()
	r.TTL = d.Long()
}

// Decode reads a CreateTTLRequest from src.
func (r *CreateTTLRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// DeleteRequest is the body of delete (2). Version -1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Append appends the encoding of r.
func (r *DeleteRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt(dst, r.Version)
}

func (r *DeleteRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Version = d.Int()
}

// Decode reads a DeleteRequest from src.
func (r *DeleteRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// CheckVersionRequest is the body of a check (13) sub-op; it is valid only
// inside a multi.
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Append appends the encoding of r.
func (r *CheckVersionRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt(dst, r.Version)
}

func (r *CheckVersionRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Version = d.Int()
}

// Decode reads a CheckVersionRequest from src.
func (r *CheckVersionRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// PathWatchRequest is the body of exists (3), getData (4), getChildren (8)
// and getChildren2 (12): a path and whether to leave a watch on it.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

// Append appends the encoding of r.
func (r *PathWatchRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendBool(dst, r.Watch)
}

func (r *PathWatchRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
}

// Decode reads a PathWatchRequest from src.
func (r *PathWatchRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// PathRequest is the body of getACL (6), sync (9), deleteContainer (20),
// getEphemerals (103, where Path is a prefix) and getAllChildrenNumber (104).
type PathRequest struct {
	Path string
}

// Append appends the encoding of r.
func (r *PathRequest) Append(dst []byte) []byte { return AppendString(dst, r.Path) }

func (r *PathRequest) decode(d *Decoder) { r.Path = d.String() }

// Decode reads a PathRequest from src.
func (r *PathRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// SetDataRequest is the body of setData (5). Version -1 matches any version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Append appends the encoding of r.
func (r *SetDataRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	return AppendInt(dst, r.Version)
}

func (r *SetDataRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// Decode reads a SetDataRequest from src.
func (r *SetDataRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// SetACLRequest is the body of setACL (7). Version is compared with the
// node's aversion; -1 matches any.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Append appends the encoding of r.
func (r *SetACLRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendACLs(dst, r.ACL)
	return AppendInt(dst, r.Version)
}

func (r *SetACLRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = d.ACLs()
	r.Version = d.Int()
}

// Decode reads a SetACLRequest from src.
func (r *SetACLRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}
