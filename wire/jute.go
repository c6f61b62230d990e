package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
)

// Errors returned by decoding.
var (
	// ErrShortBuffer means the input ended before the record did, or a length
	// prefix promised more bytes than the input holds.
	ErrShortBuffer = errors.New("wire: short buffer")
	// ErrNegativeLength means a length prefix was negative where only -1 (null) is allowed.
	ErrNegativeLength = errors.New("wire: negative length")
	// ErrFrameTooLarge means a frame's length prefix is negative or above the limit.
	ErrFrameTooLarge = errors.New("wire: frame length out of range")
	// ErrUnknownOp means a request carries an opcode this package has no record for.
	ErrUnknownOp = errors.New("wire: unknown opcode")
	// ErrBadMulti means a multi request or reply is malformed: a sub-op or
	// result of the wrong kind, a create sub-op with a TTL flag but no TTL, or
	// a missing terminator.
	ErrBadMulti = errors.New("wire: malformed multi")
)

// AppendInt appends a jute int (big-endian int32).
func AppendInt(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

// AppendLong appends a jute long (big-endian int64).
func AppendLong(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// AppendBool appends a jute boolean (one byte, 0 or 1).
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendBuffer appends a jute buffer. A nil slice is written as length -1
// (null), an empty non-nil slice as length 0: the two are different values.
func AppendBuffer(dst []byte, b []byte) []byte {
	if b == nil {
		return AppendInt(dst, -1)
	}
	dst = AppendInt(dst, int32(len(b)))
	return append(dst, b...)
}

// AppendString appends a jute ustring. Go strings cannot be null, so the
// empty string is written with length 0.
func AppendString(dst []byte, s string) []byte {
	dst = AppendInt(dst, int32(len(s)))
	return append(dst, s...)
}

// AppendStrings appends a vector of ustrings. A nil slice is written as an
// empty vector (count 0), never as a null vector: go-zookeeper reads the
// count as unsigned and would try to allocate 4 G elements for -1.
func AppendStrings(dst []byte, ss []string) []byte {
	// Grown once: a list of 100k names is megabytes, and growing by
	// appends copied it ten times over.
	n := 4 + 4*len(ss)
	for _, s := range ss {
		n += len(s)
	}
	dst = slices.Grow(dst, n)
	dst = AppendInt(dst, int32(len(ss)))
	for _, s := range ss {
		dst = AppendString(dst, s)
	}
	return dst
}

// Decoder reads jute primitives from a byte slice. The first error sticks:
// after it, every read returns a zero value and Err reports the error, so a
// record's decode can read all its fields and check once at the end.
type Decoder struct {
	buf   []byte
	off   int
	err   error
	alias bool // Buffer returns slices of buf rather than copies
}

// NewDecoder returns a Decoder reading src from its start.
func NewDecoder(src []byte) *Decoder { return &Decoder{buf: src} }

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Offset returns how many bytes have been consumed.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns how many bytes are left unread.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// prefixed reports whether the unread bytes start with p, and if so
// consumes them: a caller that knows a common encoding (the open ACL list)
// can skip decoding it.
func (d *Decoder) prefixed(p []byte) bool {
	if d.err != nil || !bytes.HasPrefix(d.buf[d.off:], p) {
		return false
	}
	d.off += len(p)
	return true
}

// Fail records err as the decoder's error unless one is already recorded.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.err = ErrShortBuffer
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Int reads a jute int.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads a jute long.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a jute boolean; any non-zero byte is true, as in Java.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// length reads a length prefix: -1 gives (0, true) for null; any other
// negative value, or one larger than what is left, is an error.
func (d *Decoder) length() (n int, null bool) {
	v := d.Int()
	if d.err != nil {
		return 0, false
	}
	if v == -1 {
		return 0, true
	}
	if v < 0 {
		d.err = ErrNegativeLength
		return 0, false
	}
	if int(v) > d.Remaining() {
		d.err = ErrShortBuffer
		return 0, false
	}
	return int(v), false
}

// Buffer reads a jute buffer into a fresh slice, never aliasing the input
// unless the decoder was made to (Requests.DecodeAliasing). Null (-1) gives
// nil; length 0 gives an empty non-nil slice.
func (d *Decoder) Buffer() []byte {
	b := d.BufferAliasing()
	if b == nil || d.alias {
		return b
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// BufferAliasing reads a jute buffer as Buffer does, but as a slice of the
// input, for a caller that copies what it keeps before the input changes.
func (d *Decoder) BufferAliasing() []byte {
	n, null := d.length()
	if null || d.err != nil {
		return nil
	}
	b := d.take(n)
	return b[:len(b):len(b)]
}

// String reads a jute ustring; null reads as "".
func (d *Decoder) String() string { return string(d.StringBytes()) }

// StringBytes reads a jute ustring's bytes without copying them: they alias
// the input. Null reads as nil.
func (d *Decoder) StringBytes() []byte {
	n, null := d.length()
	if null || d.err != nil {
		return nil
	}
	return d.take(n)
}

// VectorLen reads a vector's count and checks that count elements of at
// least minSize bytes each can fit in what is left. Null (-1) reads as 0.
func (d *Decoder) VectorLen(minSize int) int {
	v := d.Int()
	if d.err != nil || v == -1 {
		return 0
	}
	if v < 0 {
		d.err = ErrNegativeLength
		return 0
	}
	if minSize > 0 && int64(v) > int64(d.Remaining())/int64(minSize) {
		d.err = ErrShortBuffer
		return 0
	}
	return int(v)
}

// Strings reads a vector of ustrings. Null and empty both read as nil.
func (d *Decoder) Strings() []string {
	n := d.VectorLen(4)
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.String())
	}
	return out
}

// decodeWith runs fill against a fresh decoder over src and returns the
// number of bytes it consumed and the first error. Callers pass a function
// literal (func(d *Decoder) { r.decode(d) }), not the method value
// r.decode: once decodeWith is inlined the literal is called directly and
// the Decoder stays on the stack, where a method value would move it to the
// heap, an allocation for every record decoded.
func decodeWith(src []byte, fill func(d *Decoder)) (int, error) {
	d := Decoder{buf: src}
	fill(&d)
	return d.off, d.err
}

// MaxBuffer is ZooKeeper's default jute.maxbuffer: the largest frame a
// server accepts (0xfffff = 1,048,575 bytes).
const MaxBuffer = 0xfffff
