package wire

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func responseGolden() []goldenCase {
	return append(plainResponseGolden(), multiResponseGolden()...)
}

func plainResponseGolden() []goldenCase {
	return []goldenCase{
		{"CreateResponse", &CreateResponse{"/a"}, hPathA},
		{"Create2Response", &Create2Response{"/a", sampleStat}, hPathA + " " + hStat},
		{"StatResponse", &StatResponse{sampleStat}, hStat},
		{"GetDataResponse nil data", &GetDataResponse{nil, sampleStat}, hNull + " " + hStat},
		{"GetDataResponse empty data", &GetDataResponse{[]byte{}, sampleStat}, hZero + " " + hStat},
		{"GetDataResponse data", &GetDataResponse{[]byte("hi"), sampleStat}, "00 00 00 02 68 69 " + hStat},
		{"GetACLResponse", &GetACLResponse{OpenACLUnsafe, sampleStat}, hOpenACL + " " + hStat},
		{"GetACLResponse empty ACL list", &GetACLResponse{nil, sampleStat}, hZero + " " + hStat},
		{"GetChildrenResponse no children", &GetChildrenResponse{}, hZero},
		{"GetChildrenResponse", &GetChildrenResponse{[]string{"b", "c"}},
			"00 00 00 02 00 00 00 01 62 00 00 00 01 63"},
		{"GetChildren2Response", &GetChildren2Response{[]string{"b"}, sampleStat},
			"00 00 00 01 00 00 00 01 62 " + hStat},
		{"GetChildren2Response no children", &GetChildren2Response{nil, sampleStat}, hZero + " " + hStat},
		{"SyncResponse", &SyncResponse{"/a"}, hPathA},
		{"GetAllChildrenNumberResponse", &GetAllChildrenNumberResponse{258}, "00 00 01 02"},
		{"ErrorResponse ok (addWatch reply)", &ErrorResponse{CodeOK}, hZero},
		{"ErrorResponse nonode", &ErrorResponse{CodeNoNode}, "ff ff ff 9b"},
		{"ClientInfo", &ClientInfo{"ip", "127.0.0.1"},
			"00 00 00 02 69 70 00 00 00 09 31 32 37 2e 30 2e 30 2e 31"},
		{"WhoAmIResponse", &WhoAmIResponse{[]ClientInfo{{"digest", "u"}}},
			"00 00 00 01 00 00 00 06 64 69 67 65 73 74 00 00 00 01 75"},
		{"WhoAmIResponse empty", &WhoAmIResponse{}, hZero},
		{"SASLResponse", &SASLResponse{[]byte{1}}, "00 00 00 01 01"},
		{"SASLResponse nil token", &SASLResponse{}, hNull},
	}
}

func multiResponseGolden() []goldenCase {
	return []goldenCase{
		{"MultiResult error", &MultiResult{Type: OpError, Err: CodeBadVersion}, "ff ff ff ff 00 ff ff ff 99 ff ff ff 99"},
		{"MultiResponse failed multi: results 0, -110, -2, all type -1", &MultiResponse{[]MultiResult{
			{Type: OpError, Err: CodeOK},
			{Type: OpError, Err: CodeNodeExists},
			{Type: OpError, Err: CodeRuntimeInconsistency},
		}}, "ff ff ff ff 00 00 00 00 00 00 00 00 00 " +
			"ff ff ff ff 00 ff ff ff 92 ff ff ff 92 " +
			"ff ff ff ff 00 ff ff ff fe ff ff ff fe " + hMultiTm},
		{"MultiResponse empty", &MultiResponse{}, hMultiTm},
		{"MultiResponse write results", &MultiResponse{[]MultiResult{
			{Type: OpCreate, Path: "/a"},
			{Type: OpCreate2, Path: "/a", Stat: sampleStat},
			{Type: OpDelete},
			{Type: OpCheck},
			{Type: OpSetData, Stat: sampleStat},
		}}, "00 00 00 01 00 00 00 00 00 " + hPathA +
			" 00 00 00 0f 00 00 00 00 00 " + hPathA + " " + hStat +
			" 00 00 00 02 00 00 00 00 00 00 00 00 0d 00 00 00 00 00" +
			" 00 00 00 05 00 00 00 00 00 " + hStat + " " + hMultiTm},
		{"MultiResponse multiRead", &MultiResponse{[]MultiResult{
			{Type: OpGetData, Data: []byte("x"), Stat: sampleStat},
			{Type: OpGetChildren, Children: []string{"b", "c"}},
			{Type: OpGetData, Data: nil, Stat: sampleStat},
			{Type: OpError, Err: CodeNoNode},
		}}, "00 00 00 04 00 00 00 00 00 00 00 00 01 78 " + hStat +
			" 00 00 00 08 00 00 00 00 00 00 00 00 02 00 00 00 01 62 00 00 00 01 63" +
			" 00 00 00 04 00 00 00 00 00 " + hNull + " " + hStat +
			" ff ff ff ff 00 ff ff ff 9b ff ff ff 9b " + hMultiTm},
	}
}

// TestDecode_NonCanonical covers inputs that decode to a value whose
// Append differs from the input: null where Go has no null, booleans
// other than 0 and 1, and multi headers ZooKeeper does not look at.
func TestDecode_NonCanonical(t *testing.T) {
	cases := []struct {
		name      string
		rec       Record
		in, canon string
	}{
		{"null vector reads as empty", &GetChildrenResponse{}, hNull, hZero},
		{"null string reads as empty", &PathRequest{}, hNull, hZero},
		{"null ACL list reads as empty", &SetACLRequest{Path: "/a", Version: 1},
			hPathA + " " + hNull + " 00 00 00 01", hPathA + " " + hZero + " 00 00 00 01"},
		{"reconfig null server lists (go-zk sends nil []byte)", &ReconfigRequest{CurConfigID: -1},
			hNull + " " + hNull + " " + hNull + " ff ff ff ff ff ff ff ff",
			hZero + " " + hZero + " " + hZero + " ff ff ff ff ff ff ff ff"},
		{"boolean 2 is true", &PathWatchRequest{"/a", true}, hPathA + " 02", hPathA + " 01"},
		{"null whoAmI list", &WhoAmIResponse{}, hNull, hZero},
		{"multi terminator of any type", &MultiRequest{}, "00 00 00 05 01 00 00 00 00", hMultiTm},
		{"multi sub-op header err ignored", &MultiRequest{Ops: []MultiOp{{OpDelete, &DeleteRequest{"/a", 1}}}},
			"00 00 00 02 00 00 00 00 00 " + hPathA + " 00 00 00 01 " + hMultiTm,
			"00 00 00 02 " + hMultiOK + " " + hPathA + " 00 00 00 01 " + hMultiTm},
		{"multi error result takes its code from the body", &MultiResponse{[]MultiResult{{Type: OpError, Err: CodeNoNode}}},
			"ff ff ff ff 00 00 00 00 00 ff ff ff 9b " + hMultiTm,
			"ff ff ff ff 00 ff ff ff 9b ff ff ff 9b " + hMultiTm},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := unhex(t, tc.in)
			got := fresh(tc.rec)
			n, err := got.Decode(in)
			require.NoError(t, err)
			require.Equal(t, len(in), n)
			require.Equal(t, tc.rec, got)
			require.Equal(t, tc.canon, spaced(got.Append(nil)))
		})
	}
}

type decodeErrorCase struct {
	name string
	rec  Record
	in   string
	want error
}

// decodeErrorCases are inputs that must not decode.
func decodeErrorCases() []decodeErrorCase {
	create := func(typ, flags string) string {
		return typ + " " + hMultiOK + " " + hPathA + " " + hNull + " " + hZero + " " + flags
	}
	return []decodeErrorCase{
		{"empty input", &PathRequest{}, "", ErrShortBuffer},
		{"buffer length -2", &SASLRequest{}, "ff ff ff fe", ErrNegativeLength},
		{"string longer than input", &PathRequest{}, "00 00 00 05 2f 61", ErrShortBuffer},
		{"buffer of 2 GiB announced", &SASLRequest{}, "7f ff ff ff 00", ErrShortBuffer},
		{"string vector of 2 G elements", &GetChildrenResponse{}, "7f ff ff ff 00 00 00 00", ErrShortBuffer},
		{"vector count -2", &GetChildrenResponse{}, "ff ff ff fe", ErrNegativeLength},
		{"ACL vector of 2 G elements", &GetACLResponse{}, "7f ff ff ff " + hStat, ErrShortBuffer},
		{"ACL vector: one entry needs 12 bytes", &GetACLResponse{}, "00 00 00 01 00 00 00 1f " + hZero, ErrShortBuffer},
		{"whoAmI vector of 2 G elements", &WhoAmIResponse{}, "7f ff ff ff 00 00 00 00", ErrShortBuffer},
		{"multi: no terminator", &MultiRequest{}, "", ErrBadMulti},
		{"multi: input ends after a sub-op", &MultiRequest{}, "00 00 00 02 " + hMultiOK + " " + hPathA + " " + hNull, ErrBadMulti},
		{"multi: partial terminator", &MultiRequest{}, "ff ff ff ff 01", ErrBadMulti},
		{"multi: truncated sub-op", &MultiRequest{}, "00 00 00 02 " + hMultiOK + " " + hPathA, ErrShortBuffer},
		{"multi: sub-op type exists", &MultiRequest{}, "00 00 00 03 " + hMultiOK + " " + hPathA + " 00 " + hMultiTm, ErrBadMulti},
		{"multi: sub-op type getChildren2", &MultiRequest{}, "00 00 00 0c " + hMultiOK + " " + hPathA + " 00 " + hMultiTm, ErrBadMulti},
		{"multi: read then write", &MultiRequest{}, "00 00 00 04 " + hMultiOK + " " + hPathA + " 00 " +
			"00 00 00 02 " + hMultiOK + " " + hPathA + " " + hNull + " " + hMultiTm, ErrBadMulti},
		{"multi: write then read", &MultiRequest{}, "00 00 00 02 " + hMultiOK + " " + hPathA + " " + hNull + " " +
			"00 00 00 08 " + hMultiOK + " " + hPathA + " 00 " + hMultiTm, ErrBadMulti},
		{"multi: create flag 5 without ttl", &MultiRequest{}, create("00 00 00 01", "00 00 00 05") + " " + hMultiTm, ErrBadMulti},
		{"multi: create2 flag 6 without ttl", &MultiRequest{}, create("00 00 00 0f", "00 00 00 06") + " " + hMultiTm, ErrBadMulti},
		{"multi: createContainer flag 5", &MultiRequest{}, create("00 00 00 13", "00 00 00 05") + " " + hMultiTm, ErrBadMulti},
		{"multi response: result type 19", &MultiResponse{}, "00 00 00 13 00 00 00 00 00 " + hPathA + " " + hStat + " " + hMultiTm, ErrBadMulti},
		{"multi response: no terminator", &MultiResponse{}, "00 00 00 02 00 00 00 00 00", ErrBadMulti},
		{"multi result: terminator", &MultiResult{}, hMultiTm, ErrBadMulti},
	}
}

func TestDecode_Errors(t *testing.T) {
	for _, tc := range decodeErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			var in []byte
			if tc.in != "" {
				in = unhex(t, tc.in)
			}
			_, err := tc.rec.Decode(in)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestMultiRequest_FlagsLeftToTheTree checks that create flags other than
// the TTL ones are not a decode error: ZooKeeper decodes them and fails the
// sub-op with BADARGUMENTS.
func TestMultiRequest_FlagsLeftToTheTree(t *testing.T) {
	for _, flags := range []int32{-1, 4, 7, 1000} {
		m := &MultiRequest{Ops: []MultiOp{{OpCreate, &CreateRequest{Path: "/a", Flags: flags}}}}
		var got MultiRequest
		_, err := got.Decode(m.Append(nil))
		require.NoError(t, err, "flags %d", flags)
		require.Equal(t, m, &got)
	}
	m := &MultiRequest{Ops: []MultiOp{{OpCreateTTL, &CreateTTLRequest{Path: "/a", Flags: FlagPersistent, TTL: 5}}}}
	_, err := new(MultiRequest).Decode(m.Append(nil))
	require.NoError(t, err, "createTTL with a non-TTL flag is the tree's to reject")
}

func TestErrBadMulti_Wrapped(t *testing.T) {
	_, err := new(MultiRequest).Decode(nil)
	require.True(t, errors.Is(err, ErrBadMulti))
	require.Contains(t, err.Error(), "wire: malformed multi")
}
