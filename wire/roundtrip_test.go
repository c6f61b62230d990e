package wire

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// fullStat has every field set, with extreme values.
var fullStat = Stat{math.MaxInt64, math.MinInt64, -1, 1 << 40, math.MaxInt32, math.MinInt32, -1, math.MinInt64, 1 << 20, 7, 0x7fffffff00000001}

var fullACL = []ACL{
	{PermAll, Id{"world", "anyone"}},
	{PermRead | PermAdmin, Id{"digest", "user:HASH="}},
	{0, Id{"", ""}},
}

// fullRecords holds one value of every record type, every field set.
func fullRecords() []Record {
	long := string(make([]byte, 300))
	return []Record{
		&Id{"ip", "10.0.0.0/8"}, &ACL{PermCreate, Id{"auth", ""}}, &fullStat,
		&RequestHeader{math.MaxInt32, OpWhoAmI}, &ReplyHeader{math.MinInt32, math.MaxInt64, CodeThrottledOp},
		&ConnectRequest{1, 2, 3, 4, []byte("0123456789abcdef"), true, true},
		&ConnectResponse{-1, -2, -3, []byte{}, false, true},
		&WatcherEvent{EventNodeChildrenChanged, StateSyncConnected, "/ü/é"},
		&CreateRequest{"/zk/ünï", []byte{0, 1, 2}, fullACL, math.MinInt32},
		&CreateTTLRequest{"/t", []byte(long), fullACL, FlagPersistentSequentialWithTTL, 0xFFFFFFFFFF},
		&DeleteRequest{long, math.MaxInt32}, &CheckVersionRequest{"/c", math.MinInt32},
		&PathWatchRequest{"/w", true}, &PathRequest{"/p/q"},
		&SetDataRequest{"/s", []byte(long), 12}, &SetACLRequest{"/s", fullACL, -7},
		&ReconfigRequest{"a", "b", "c", math.MinInt64},
		&RemoveWatchesRequest{"/r", WatcherTypePersistentRecursive}, &AddWatchRequest{"/r", -1},
		&AuthPacket{-1, "sasl", []byte{}}, &SASLRequest{[]byte(long)},
		&SetWatches{math.MinInt64, []string{"", "/a"}, []string{long}, []string{"/c", "/d", "/e"}},
		&SetWatches2{-1, []string{"/a"}, []string{"/b"}, []string{"/c"}, []string{"/d"}, []string{"/e", ""}},
		&MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{"/a", nil, fullACL, FlagEphemeralSequential}},
			{OpCreate2, &CreateRequest{"/b", []byte{}, nil, 7}},
			{OpCreateContainer, &CreateRequest{"/c", []byte("x"), fullACL, FlagContainer}},
			{OpCreateTTL, &CreateTTLRequest{"/d", nil, nil, FlagPersistentWithTTL, 1}},
			{OpDelete, &DeleteRequest{"/e", 3}}, {OpSetData, &SetDataRequest{"/f", []byte{}, -1}},
			{OpCheck, &CheckVersionRequest{"/g", 9}},
		}},
		&MultiRequest{Ops: []MultiOp{{OpGetChildren, &PathWatchRequest{"/x", true}}}, Read: true},
		&MultiHeader{OpSetData, false, CodeNoAuth},
		&MultiResult{Type: OpCreate2, Path: "/p", Stat: fullStat},
		&CreateResponse{long}, &Create2Response{"/c", fullStat}, &StatResponse{fullStat},
		&GetDataResponse{[]byte(long), fullStat}, &GetACLResponse{fullACL, fullStat},
		&GetChildrenResponse{[]string{"a", "", long}}, &GetChildren2Response{[]string{"z"}, fullStat},
		&SyncResponse{"/sync"}, &GetAllChildrenNumberResponse{math.MaxInt32}, &ErrorResponse{-127},
		&ClientInfo{"x509", "CN=a"}, &WhoAmIResponse{[]ClientInfo{{"ip", "::1"}, {"digest", "u"}}},
		&SASLResponse{[]byte{0xff}},
		&MultiResponse{[]MultiResult{
			{Type: OpCreate, Path: "/a"}, {Type: OpCreate2, Path: "/b", Stat: fullStat},
			{Type: OpDelete}, {Type: OpCheck}, {Type: OpSetData, Stat: fullStat},
			{Type: OpGetData, Data: []byte{}, Stat: fullStat}, {Type: OpGetChildren, Children: []string{"k"}},
			{Type: OpError, Err: CodeSessionMoved},
		}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, rec := range fullRecords() {
		name := reflect.TypeOf(rec).Elem().Name()
		t.Run(name, func(t *testing.T) {
			enc := rec.Append([]byte("prefix"))[len("prefix"):]
			got := fresh(rec)
			n, err := got.Decode(append(enc, "trailing"...))
			require.NoError(t, err)
			require.Equal(t, len(enc), n, "Decode must stop at the record's end")
			require.Equal(t, rec, got)
			require.Equal(t, enc, got.Append(nil))
		})
	}
}

// TestRoundTrip_EveryType checks that fullRecords and the golden tables
// cover every record type RequestFor and ResponseFor can return.
func TestRoundTrip_EveryType(t *testing.T) {
	covered := map[reflect.Type]bool{}
	for _, rec := range fullRecords() {
		covered[reflect.TypeOf(rec)] = true
	}
	for _, tc := range append(append(coreGolden(), requestGolden()...), responseGolden()...) {
		require.True(t, covered[reflect.TypeOf(tc.rec)], "golden type %T missing from fullRecords", tc.rec)
	}
	for op := Op(-20); op <= 120; op++ {
		for _, lookup := range []func(Op) (Record, bool){RequestFor, ResponseFor} {
			if rec, ok := lookup(op); ok && rec != nil {
				require.True(t, covered[reflect.TypeOf(rec)], "%T (op %d) not covered", rec, op)
			}
		}
	}
}

func TestRequestFor(t *testing.T) {
	want := map[Op]string{
		OpCreate: "*wire.CreateRequest", OpCreate2: "*wire.CreateRequest", OpCreateContainer: "*wire.CreateRequest",
		OpCreateTTL: "*wire.CreateTTLRequest", OpDelete: "*wire.DeleteRequest", OpCheck: "*wire.CheckVersionRequest",
		OpExists: "*wire.PathWatchRequest", OpGetData: "*wire.PathWatchRequest",
		OpGetChildren: "*wire.PathWatchRequest", OpGetChildren2: "*wire.PathWatchRequest",
		OpGetACL: "*wire.PathRequest", OpSync: "*wire.PathRequest", OpDeleteContainer: "*wire.PathRequest",
		OpGetEphemerals: "*wire.PathRequest", OpGetAllChildrenNumber: "*wire.PathRequest",
		OpSetData: "*wire.SetDataRequest", OpSetACL: "*wire.SetACLRequest", OpReconfig: "*wire.ReconfigRequest",
		OpCheckWatches: "*wire.RemoveWatchesRequest", OpRemoveWatches: "*wire.RemoveWatchesRequest",
		OpAddWatch: "*wire.AddWatchRequest", OpAuth: "*wire.AuthPacket", OpSetWatches: "*wire.SetWatches",
		OpSetWatches2: "*wire.SetWatches2", OpSASL: "*wire.SASLRequest",
		OpMulti: "*wire.MultiRequest", OpMultiRead: "*wire.MultiRequest",
		OpPing: "<nil>", OpCloseSession: "<nil>", OpWhoAmI: "<nil>",
	}
	checkLookup(t, RequestFor, want)
}

func TestRequests_ForIsRequestForReused(t *testing.T) {
	var q Requests
	for op := Op(-200); op <= 200; op++ {
		want, wantOK := RequestFor(op)
		got, ok := q.For(op)
		require.Equal(t, wantOK, ok, "op %d (%s)", op, op)
		require.Equal(t, fmt.Sprintf("%T", want), fmt.Sprintf("%T", got), "op %d (%s)", op, op)
	}
	rec, _ := q.For(OpSetData)
	_, err := rec.Decode((&SetDataRequest{Path: "/a", Data: []byte("x"), Version: 3}).Append(nil))
	require.NoError(t, err)
	again, _ := q.For(OpSetData)
	require.Same(t, rec, again, "the set's own record")
	require.Equal(t, &SetDataRequest{}, again, "zeroed")
	_, err = again.Decode((&SetDataRequest{Path: "/b", Version: 1}).Append(nil))
	require.NoError(t, err)
	q.Clear()
	require.Equal(t, &SetDataRequest{}, again, "cleared")
}

func TestResponseFor(t *testing.T) {
	want := map[Op]string{
		OpCreate: "*wire.CreateResponse", OpCreate2: "*wire.Create2Response",
		OpCreateContainer: "*wire.Create2Response", OpCreateTTL: "*wire.Create2Response",
		OpExists: "*wire.StatResponse", OpSetData: "*wire.StatResponse", OpSetACL: "*wire.StatResponse",
		OpGetData: "*wire.GetDataResponse", OpReconfig: "*wire.GetDataResponse",
		OpGetACL: "*wire.GetACLResponse", OpGetChildren: "*wire.GetChildrenResponse",
		OpGetEphemerals: "*wire.GetChildrenResponse", OpGetChildren2: "*wire.GetChildren2Response",
		OpSync: "*wire.SyncResponse", OpGetAllChildrenNumber: "*wire.GetAllChildrenNumberResponse",
		OpAddWatch: "*wire.ErrorResponse", OpWhoAmI: "*wire.WhoAmIResponse", OpSASL: "*wire.SASLResponse",
		OpMulti: "*wire.MultiResponse", OpMultiRead: "*wire.MultiResponse",
		OpDelete: "<nil>", OpCheck: "<nil>", OpPing: "<nil>", OpCheckWatches: "<nil>",
		OpRemoveWatches: "<nil>", OpDeleteContainer: "<nil>", OpAuth: "<nil>", OpSetWatches: "<nil>",
		OpSetWatches2: "<nil>", OpCloseSession: "<nil>",
	}
	checkLookup(t, ResponseFor, want)
}

func checkLookup(t *testing.T, lookup func(Op) (Record, bool), want map[Op]string) {
	t.Helper()
	for op := Op(-200); op <= 200; op++ {
		rec, ok := lookup(op)
		w, known := want[op]
		require.Equal(t, known, ok, "op %d (%s)", op, op)
		if known {
			require.Equal(t, w, fmt.Sprintf("%T", rec), "op %d (%s)", op, op)
		}
	}
	a, _ := lookup(OpCreate)
	b, _ := lookup(OpCreate)
	require.NotSame(t, a, b, "each call returns a fresh record")
}

func TestStrings(t *testing.T) {
	require.Equal(t, "multiRead", OpMultiRead.String())
	require.Equal(t, "Op(99)", Op(99).String())
	require.Equal(t, "NODEEXISTS", CodeNodeExists.String())
	require.Equal(t, "Code(-999)", Code(-999).String())
	require.Equal(t, "NodeDataChanged", EventNodeDataChanged.String())
	require.Equal(t, "EventType(9)", EventType(9).String())
}

func TestDecoder_ACLsSharesTheOpenList(t *testing.T) {
	var r CreateRequest
	_, err := r.Decode((&CreateRequest{Path: "/a", ACL: []ACL{{Perms: PermAll, ID: Id{Scheme: "world", ID: "anyone"}}}}).Append(nil))
	require.NoError(t, err)
	require.Same(t, &OpenACLUnsafe[0], &r.ACL[0], "the open list is shared")
	_, err = r.Decode((&CreateRequest{Path: "/a", ACL: ReadACLUnsafe}).Append(nil))
	require.NoError(t, err)
	require.Equal(t, ReadACLUnsafe, r.ACL)
	require.NotSame(t, &ReadACLUnsafe[0], &r.ACL[0], "any other list is decoded")
}

func TestDecoder_BufferAliasing(t *testing.T) {
	src := AppendBuffer(AppendBuffer(AppendBuffer(nil, []byte("data")), []byte{}), nil)
	d := NewDecoder(src)
	data, empty, null := d.BufferAliasing(), d.BufferAliasing(), d.BufferAliasing()
	require.NoError(t, d.Err())
	require.Equal(t, "data", string(data))
	require.Same(t, &src[4], &data[0], "a slice of the input")
	require.Equal(t, len(data), cap(data), "an append to it does not write past it")
	require.NotNil(t, empty)
	require.Empty(t, empty)
	require.Nil(t, null)
}
