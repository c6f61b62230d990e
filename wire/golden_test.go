package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Building blocks of the golden encodings below.
const (
	hNull    = "ff ff ff ff"
	hZero    = "00 00 00 00"
	hPathA   = "00 00 00 02 2f 61" // "/a"
	hWorld   = "00 00 00 05 77 6f 72 6c 64"
	hAnyone  = "00 00 00 06 61 6e 79 6f 6e 65"
	hOpenACL = "00 00 00 01 00 00 00 1f " + hWorld + " " + hAnyone
	// hStat encodes sampleStat.
	hStat = "00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 03 " +
		"00 00 00 00 00 00 00 04 00 00 00 05 00 00 00 06 00 00 00 07 00 00 00 00 00 00 00 08 " +
		"00 00 00 09 00 00 00 0a 00 00 00 00 00 00 00 0b"
	hPasswd  = "00 00 00 10 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10"
	hMultiOK = "00 ff ff ff ff" // done=false, err=-1 after a sub-op type
	hMultiTm = "ff ff ff ff 01 ff ff ff ff"
)

var (
	sampleStat   = Stat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	samplePasswd = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
)

// goldenCase is one record value and its exact encoding; decoding the
// encoding must give the value back.
type goldenCase struct {
	name string
	rec  Record
	hex  string
}

func coreGolden() []goldenCase {
	return []goldenCase{
		{"Id world:anyone", &Id{"world", "anyone"}, hWorld + " " + hAnyone},
		{"ACL all world:anyone", &ACL{PermAll, Id{"world", "anyone"}}, "00 00 00 1f " + hWorld + " " + hAnyone},
		{"Stat", &Stat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, hStat},
		{"RequestHeader", &RequestHeader{Xid: 1, OpCode: OpCreate}, "00 00 00 01 00 00 00 01"},
		{"RequestHeader ping", &RequestHeader{Xid: XidPing, OpCode: OpPing}, "ff ff ff fe 00 00 00 0b"},
		{"ReplyHeader notification", &ReplyHeader{Xid: -1, Zxid: -1, Err: CodeOK},
			"ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 00"},
		{"ReplyHeader error", &ReplyHeader{Xid: 5, Zxid: 0x4d, Err: CodeNoNode},
			"00 00 00 05 00 00 00 00 00 00 00 4d ff ff ff 9b"},
		{"ConnectRequest without readOnly (go-zk, 44 bytes)",
			&ConnectRequest{LastZxidSeen: 0x1234, TimeOut: 10000, SessionID: 0x0100000123456789, Passwd: samplePasswd},
			"00 00 00 00 00 00 00 00 00 00 12 34 00 00 27 10 01 00 00 01 23 45 67 89 " + hPasswd},
		{"ConnectRequest with readOnly (Java, 45 bytes)",
			&ConnectRequest{TimeOut: 10000, Passwd: samplePasswd, ReadOnly: true, HasReadOnly: true},
			"00 00 00 00 00 00 00 00 00 00 00 00 00 00 27 10 00 00 00 00 00 00 00 00 " + hPasswd + " 01"},
		{"ConnectRequest readOnly=false present",
			&ConnectRequest{TimeOut: 10000, Passwd: samplePasswd, HasReadOnly: true},
			"00 00 00 00 00 00 00 00 00 00 00 00 00 00 27 10 00 00 00 00 00 00 00 00 " + hPasswd + " 00"},
		{"ConnectResponse without readOnly (36 bytes)",
			&ConnectResponse{TimeOut: 10000, SessionID: 0x0100000123456789, Passwd: samplePasswd},
			"00 00 00 00 00 00 27 10 01 00 00 01 23 45 67 89 " + hPasswd},
		{"ConnectResponse with readOnly (37 bytes)",
			&ConnectResponse{TimeOut: 10000, SessionID: 0x0100000123456789, Passwd: samplePasswd, HasReadOnly: true},
			"00 00 00 00 00 00 27 10 01 00 00 01 23 45 67 89 " + hPasswd + " 00"},
		{"ConnectResponse invalid session", &ConnectResponse{Passwd: make([]byte, 16)},
			"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 10 " +
				"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/a"},
			"00 00 00 03 00 00 00 03 " + hPathA},
		{"MultiHeader terminator", &MultiHeader{Type: OpError, Done: true, Err: -1}, hMultiTm},
	}
}

func requestGolden() []goldenCase {
	return append(append(nodeRequestGolden(), sessionRequestGolden()...), multiRequestGolden()...)
}

func nodeRequestGolden() []goldenCase {
	return []goldenCase{
		{"CreateRequest nil data", &CreateRequest{"/a", nil, OpenACLUnsafe, FlagEphemeralSequential},
			hPathA + " " + hNull + " " + hOpenACL + " 00 00 00 03"},
		{"CreateRequest empty data, empty ACL list", &CreateRequest{"/a", []byte{}, nil, FlagPersistent},
			hPathA + " " + hZero + " " + hZero + " " + hZero},
		{"CreateRequest with data", &CreateRequest{"/a", []byte("xy"), OpenACLUnsafe, FlagContainer},
			hPathA + " 00 00 00 02 78 79 " + hOpenACL + " 00 00 00 04"},
		{"CreateTTLRequest", &CreateTTLRequest{"/a", []byte{}, OpenACLUnsafe, FlagPersistentWithTTL, 60000},
			hPathA + " " + hZero + " " + hOpenACL + " 00 00 00 05 00 00 00 00 00 00 ea 60"},
		{"DeleteRequest any version", &DeleteRequest{"/a", -1}, hPathA + " " + hNull},
		{"CheckVersionRequest", &CheckVersionRequest{"/a", 2}, hPathA + " 00 00 00 02"},
		{"PathWatchRequest watch", &PathWatchRequest{"/a", true}, hPathA + " 01"},
		{"PathWatchRequest no watch", &PathWatchRequest{"/a", false}, hPathA + " 00"},
		{"PathRequest", &PathRequest{"/a"}, hPathA},
		{"PathRequest empty path", &PathRequest{""}, hZero},
		{"SetDataRequest nil data", &SetDataRequest{"/a", nil, -1}, hPathA + " " + hNull + " " + hNull},
		{"SetDataRequest empty data", &SetDataRequest{"/a", []byte{}, 3}, hPathA + " " + hZero + " 00 00 00 03"},
		{"SetACLRequest", &SetACLRequest{"/a", OpenACLUnsafe, 0}, hPathA + " " + hOpenACL + " " + hZero},
		{"SetACLRequest empty ACL list", &SetACLRequest{"/a", nil, -1}, hPathA + " " + hZero + " " + hNull},
	}
}

func sessionRequestGolden() []goldenCase {
	return []goldenCase{
		{"ReconfigRequest", &ReconfigRequest{"server.4=h:1:2", "", "", -1},
			"00 00 00 0e 73 65 72 76 65 72 2e 34 3d 68 3a 31 3a 32 " + hZero + " " + hZero +
				" ff ff ff ff ff ff ff ff"},
		{"RemoveWatchesRequest", &RemoveWatchesRequest{"/a", WatcherTypeAny}, hPathA + " 00 00 00 03"},
		{"AddWatchRequest", &AddWatchRequest{"/a", AddWatchModePersistentRecursive}, hPathA + " 00 00 00 01"},
		{"AuthPacket digest", &AuthPacket{0, "digest", []byte("u:p")},
			hZero + " 00 00 00 06 64 69 67 65 73 74 00 00 00 03 75 3a 70"},
		{"AuthPacket nil auth", &AuthPacket{0, "ip", nil}, hZero + " 00 00 00 02 69 70 " + hNull},
		{"SASLRequest", &SASLRequest{[]byte{0xca, 0xfe}}, "00 00 00 02 ca fe"},
		{"SASLRequest nil token", &SASLRequest{}, hNull},
		{"SetWatches empty lists", &SetWatches{RelativeZxid: 0x51},
			"00 00 00 00 00 00 00 51 " + hZero + " " + hZero + " " + hZero},
		{"SetWatches", &SetWatches{1, []string{"/a"}, []string{"/b"}, []string{"/a", "/c"}},
			"00 00 00 00 00 00 00 01 00 00 00 01 " + hPathA + " 00 00 00 01 00 00 00 02 2f 62 " +
				"00 00 00 02 " + hPathA + " 00 00 00 02 2f 63"},
		{"SetWatches2", &SetWatches2{2, nil, nil, []string{"/a"}, nil, []string{"/a"}},
			"00 00 00 00 00 00 00 02 " + hZero + " " + hZero + " 00 00 00 01 " + hPathA + " " + hZero +
				" 00 00 00 01 " + hPathA},
	}
}

func multiRequestGolden() []goldenCase {
	return []goldenCase{
		{"MultiRequest write (go-zk's four sub-op types)", &MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{"/a", []byte("x"), OpenACLUnsafe, FlagPersistent}},
			{OpDelete, &DeleteRequest{"/a", -1}},
			{OpSetData, &SetDataRequest{"/a", nil, -1}},
			{OpCheck, &CheckVersionRequest{"/a", 2}},
		}}, "00 00 00 01 " + hMultiOK + " " + hPathA + " 00 00 00 01 78 " + hOpenACL + " " + hZero +
			" 00 00 00 02 " + hMultiOK + " " + hPathA + " " + hNull +
			" 00 00 00 05 " + hMultiOK + " " + hPathA + " " + hNull + " " + hNull +
			" 00 00 00 0d " + hMultiOK + " " + hPathA + " 00 00 00 02 " + hMultiTm},
		{"MultiRequest other create types", &MultiRequest{Ops: []MultiOp{
			{OpCreate2, &CreateRequest{"/a", nil, nil, FlagEphemeral}},
			{OpCreateContainer, &CreateRequest{"/a", nil, nil, FlagContainer}},
			{OpCreateTTL, &CreateTTLRequest{"/a", nil, nil, FlagPersistentSequentialWithTTL, 1}},
		}}, "00 00 00 0f " + hMultiOK + " " + hPathA + " " + hNull + " " + hZero + " 00 00 00 01" +
			" 00 00 00 13 " + hMultiOK + " " + hPathA + " " + hNull + " " + hZero + " 00 00 00 04" +
			" 00 00 00 15 " + hMultiOK + " " + hPathA + " " + hNull + " " + hZero + " 00 00 00 06" +
			" 00 00 00 00 00 00 00 01 " + hMultiTm},
		{"MultiRequest read", &MultiRequest{Ops: []MultiOp{
			{OpGetData, &PathWatchRequest{"/a", false}},
			{OpGetChildren, &PathWatchRequest{"/a", false}},
		}, Read: true}, "00 00 00 04 " + hMultiOK + " " + hPathA + " 00 00 00 00 08 " + hMultiOK + " " +
			hPathA + " 00 " + hMultiTm},
		{"MultiRequest empty", &MultiRequest{}, hMultiTm},
	}
}

func checkGolden(t *testing.T, cases []goldenCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			require.Equal(t, spaced(want), spaced(tc.rec.Append(nil)), "encoding")
			got := fresh(tc.rec)
			n, err := got.Decode(want)
			require.NoError(t, err)
			require.Equal(t, len(want), n, "bytes consumed")
			require.Equal(t, tc.rec, got)
			// Append must add to dst, not overwrite it.
			require.Equal(t, append([]byte{0xaa}, want...), tc.rec.Append([]byte{0xaa}))
		})
	}
}

func TestGolden_Core(t *testing.T)      { checkGolden(t, coreGolden()) }
func TestGolden_Requests(t *testing.T)  { checkGolden(t, requestGolden()) }
func TestGolden_Responses(t *testing.T) { checkGolden(t, responseGolden()) }

func TestGolden_ConnectSizes(t *testing.T) {
	sizes := map[string]int{
		"ConnectRequest without readOnly (go-zk, 44 bytes)": 44,
		"ConnectRequest with readOnly (Java, 45 bytes)":     45,
		"ConnectResponse without readOnly (36 bytes)":       36,
		"ConnectResponse with readOnly (37 bytes)":          37,
	}
	for _, tc := range coreGolden() {
		if want, ok := sizes[tc.name]; ok {
			require.Len(t, tc.rec.Append(nil), want, tc.name)
			delete(sizes, tc.name)
		}
	}
	require.Empty(t, sizes, "rows not found")
}

// TestGolden_Truncated checks that every strict prefix of every golden
// encoding fails to decode, except where the record legitimately ends
// early (the optional readOnly byte).
func TestGolden_Truncated(t *testing.T) {
	all := append(append(coreGolden(), requestGolden()...), responseGolden()...)
	for _, tc := range all {
		want := unhex(t, tc.hex)
		optional := 0
		switch r := tc.rec.(type) {
		case *ConnectRequest:
			if r.HasReadOnly {
				optional = 1
			}
		case *ConnectResponse:
			if r.HasReadOnly {
				optional = 1
			}
		}
		for i := 0; i < len(want)-optional; i++ {
			_, err := fresh(tc.rec).Decode(want[:i])
			require.Error(t, err, "%s: prefix of %d bytes decoded", tc.name, i)
		}
	}
}
