package wire

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestRequests_DecodeAliasing checks that DecodeAliasing reads what Decode
// reads, with the data in place in the input and capped there, so that
// appending to it cannot write over the input.
func TestRequests_DecodeAliasing(t *testing.T) {
	tests := []struct {
		name string
		op   Op
		rec  Record
		data func(Record) []byte // the buffer expected to alias the input
	}{
		{"setData", OpSetData, &SetDataRequest{Path: "/a", Data: []byte("payload"), Version: 3},
			func(r Record) []byte { return r.(*SetDataRequest).Data }},
		{"create", OpCreate, &CreateRequest{Path: "/b", Data: []byte("xyz"), ACL: OpenACLUnsafe, Flags: 1},
			func(r Record) []byte { return r.(*CreateRequest).Data }},
		{"multi", OpMulti, &MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{Path: "/c", Data: []byte("in multi"), ACL: OpenACLUnsafe}},
			{OpSetData, &SetDataRequest{Path: "/c", Data: []byte("second"), Version: -1}},
		}}, func(r Record) []byte { return r.(*MultiRequest).Ops[1].Req.(*SetDataRequest).Data }},
		{"sasl", OpSASL, &SASLRequest{Token: []byte("token")},
			func(r Record) []byte { return r.(*SASLRequest).Token }},
		{"auth", OpAuth, &AuthPacket{Scheme: "digest", Auth: []byte("u:p")},
			func(r Record) []byte { return r.(*AuthPacket).Auth }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.rec.Append(nil)
			copied, ok := RequestFor(tt.op)
			require.True(t, ok)
			n, err := copied.Decode(src)
			require.NoError(t, err)

			var q Requests
			aliased, ok := q.For(tt.op)
			require.True(t, ok)
			m, err := q.DecodeAliasing(aliased, src)
			require.NoError(t, err)
			require.Equal(t, n, m)
			require.Equal(t, copied, aliased)

			got := tt.data(aliased)
			require.NotEmpty(t, got)
			start := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
			at := uintptr(unsafe.Pointer(unsafe.SliceData(got)))
			require.True(t, at >= start && at+uintptr(len(got)) <= start+uintptr(len(src)), "the data is read in place")
			require.Equal(t, len(got), cap(got), "capped at its end")
			require.NotSame(t, unsafe.SliceData(got), unsafe.SliceData(tt.data(copied)), "Decode still copies")
		})
	}
}

func TestRequests_DecodeAliasingFailsAsDecodeDoes(t *testing.T) {
	src := (&SetDataRequest{Path: "/a", Data: []byte("payload")}).Append(nil)
	var q Requests
	rec, _ := q.For(OpSetData)
	_, err := q.DecodeAliasing(rec, src[:len(src)-6])
	require.ErrorIs(t, err, ErrShortBuffer)
	_, err = new(SetDataRequest).Decode(src[:len(src)-6])
	require.ErrorIs(t, err, ErrShortBuffer)
}
