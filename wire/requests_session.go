package wire

// This file holds the request bodies that act on the session or the
// ensemble rather than on one znode: auth, sasl, setWatches, watch
// management and reconfig.

// ReconfigRequest is the body of reconfig (16). The three server lists are
// jute ustrings; a null string (-1, which go-zookeeper sends for a nil list)
// decodes as "", and "" is written with length 0.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// Append appends the encoding of r.
func (r *ReconfigRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.JoiningServers)
	dst = AppendString(dst, r.LeavingServers)
	dst = AppendString(dst, r.NewMembers)
	return AppendLong(dst, r.CurConfigID)
}

func (r *ReconfigRequest) decode(d *Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Long()
}

// Decode reads a ReconfigRequest from src.
func (r *ReconfigRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// RemoveWatchesRequest is the body of checkWatches (17) and removeWatches
// (18). Type is a watcher type (WatcherTypeChildren, ...).
type RemoveWatchesRequest struct {
	Path string
	Type int32
}

// Append appends the encoding of r.
func (r *RemoveWatchesRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt(dst, r.Type)
}

func (r *RemoveWatchesRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Type = d.Int()
}

// Decode reads a RemoveWatchesRequest from src.
func (r *RemoveWatchesRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// AddWatchRequest is the body of addWatch (106). Mode is
// AddWatchModePersistent or AddWatchModePersistentRecursive.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// Append appends the encoding of r.
func (r *AddWatchRequest) Append(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt(dst, r.Mode)
}

func (r *AddWatchRequest) decode(d *Decoder) {
	r.Path = d.String()
	r.Mode = d.Int()
}

// Decode reads an AddWatchRequest from src.
func (r *AddWatchRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// AuthPacket is the body of auth (100): credentials for a scheme such as
// "digest" (Auth = "user:password"). Type is always 0 in practice.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Append appends the encoding of p.
func (p *AuthPacket) Append(dst []byte) []byte {
	dst = AppendInt(dst, p.Type)
	dst = AppendString(dst, p.Scheme)
	return AppendBuffer(dst, p.Auth)
}

func (p *AuthPacket) decode(d *Decoder) {
	p.Type = d.Int()
	p.Scheme = d.String()
	p.Auth = d.Buffer()
}

// Decode reads an AuthPacket from src.
func (p *AuthPacket) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { p.decode(d) })
}

// SASLRequest is the body of sasl (102) from a client (GetSASLRequest in
// zookeeper.jute): one SASL token.
type SASLRequest struct {
	Token []byte
}

// Append appends the encoding of r.
func (r *SASLRequest) Append(dst []byte) []byte { return AppendBuffer(dst, r.Token) }

func (r *SASLRequest) decode(d *Decoder) { r.Token = d.Buffer() }

// Decode reads a SASLRequest from src.
func (r *SASLRequest) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { r.decode(d) })
}

// SetWatches is the body of setWatches (101): the watches a reconnecting
// client still holds, and the last zxid it saw, so that the server can fire
// the events it missed. Empty lists are written as count 0.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Append appends the encoding of s.
func (s *SetWatches) Append(dst []byte) []byte {
	dst = AppendLong(dst, s.RelativeZxid)
	dst = AppendStrings(dst, s.DataWatches)
	dst = AppendStrings(dst, s.ExistWatches)
	return AppendStrings(dst, s.ChildWatches)
}

func (s *SetWatches) decode(d *Decoder) {
	s.RelativeZxid = d.Long()
	s.DataWatches = d.Strings()
	s.ExistWatches = d.Strings()
	s.ChildWatches = d.Strings()
}

// Decode reads a SetWatches from src.
func (s *SetWatches) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { s.decode(d) })
}

// SetWatches2 is the body of setWatches2 (105): SetWatches plus the
// persistent and persistent-recursive watches (3.6+).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Append appends the encoding of s.
func (s *SetWatches2) Append(dst []byte) []byte {
	dst = AppendLong(dst, s.RelativeZxid)
	dst = AppendStrings(dst, s.DataWatches)
	dst = AppendStrings(dst, s.ExistWatches)
	dst = AppendStrings(dst, s.ChildWatches)
	dst = AppendStrings(dst, s.PersistentWatches)
	return AppendStrings(dst, s.PersistentRecursiveWatches)
}

func (s *SetWatches2) decode(d *Decoder) {
	s.RelativeZxid = d.Long()
	s.DataWatches = d.Strings()
	s.ExistWatches = d.Strings()
	s.ChildWatches = d.Strings()
	s.PersistentWatches = d.Strings()
	s.PersistentRecursiveWatches = d.Strings()
}

// Decode reads a SetWatches2 from src.
func (s *SetWatches2) Decode(src []byte) (int, error) {
	return decodeWith(src, func(d *Decoder) { s.decode(d) })
}
