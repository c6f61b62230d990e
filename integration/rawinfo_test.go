package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/wire"
)

// TestRawSessionInfo covers the informational opcodes go-zookeeper cannot
// send: getEphemerals (103), getAllChildrenNumber (104), whoAmI (107), and
// sasl (102) without a SASL mechanism.
func TestRawSessionInfo(t *testing.T) { runRawCases(t, rawInfoCases) }

var rawInfoCases = []rawCase{
	{"getEphemerals", rawGetEphemerals},
	{"getAllChildrenNumber", rawGetAllChildrenNumber},
	{"whoAmI", rawWhoAmI},
	{"sasl", rawSASL},
	{"sasl with a null token", rawSASLNullToken},
}

// emptyVector is an empty jute vector: count 0, not null.
var emptyVector = []byte{0, 0, 0, 0}

func (s *rawSession) ephemerals(prefix string) []string {
	s.t.Helper()
	body := s.mustDo(wire.OpGetEphemerals, &wire.PathRequest{Path: prefix})
	if len(body) == 4 {
		assert.Equal(s.t, emptyVector, body)
	}
	return mustDecode(s.t, body, &wire.GetChildrenResponse{}).Children
}

func rawGetEphemerals(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	y := mustRawSession(t, tg.addr)
	z := mustRawSession(t, tg.addr)
	dir := tg.p("/eph")
	x.create(dir, nil)
	x.create(dir+"/q", nil)
	x.create(dir+"/p", nil)
	eph := func(s *rawSession, path string, flags int32) string {
		body := s.mustDo(wire.OpCreate, &wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe, Flags: flags})
		return mustDecode(t, body, &wire.CreateResponse{}).Path
	}
	e1 := eph(x, dir+"/e1", wire.FlagEphemeral)
	e10 := eph(x, dir+"/e10", wire.FlagEphemeral)
	seq := eph(x, dir+"/q/s-", wire.FlagEphemeralSequential)
	require.Equal(t, dir+"/q/s-0000000000", seq)
	y1 := eph(y, dir+"/y1", wire.FlagEphemeral)

	tests := []struct {
		name   string
		s      *rawSession
		prefix string
		want   []string
	}{
		{"empty prefix: all", x, "", []string{e1, e10, seq}},
		{"root: all", x, "/", []string{e1, e10, seq}},
		{"blank: all", x, " \t", []string{e1, e10, seq}},
		{"root and blanks: all", x, " / ", []string{e1, e10, seq}},
		{"directory", x, dir, []string{e1, e10, seq}},
		{"string prefix, not a path", x, dir + "/e1", []string{e1, e10}},
		{"one subtree", x, dir + "/q", []string{seq}},
		{"a persistent node's path", x, dir + "/p", nil},
		{"no match", x, dir + "/nomatch", nil},
		{"another session's", y, "", []string{y1}},
		{"another session, the first one's prefix", y, dir + "/e1", nil},
		{"a session without ephemerals", z, "/", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.ElementsMatch(t, tc.want, tc.s.on(t).ephemerals(tc.prefix))
		})
	}

	// Closing y's session deletes its ephemeral; x's stay.
	y.mustDo(wire.OpCloseSession, nil)
	y.expectClosed()
	assert.ElementsMatch(t, []string{e1, e10, seq}, x.ephemerals(""))
	x.mustFail(wire.CodeNoNode, wire.OpExists, &wire.PathWatchRequest{Path: y1})
}

func (s *rawSession) allChildrenNumber(path string) int32 {
	s.t.Helper()
	body := s.mustDo(wire.OpGetAllChildrenNumber, &wire.PathRequest{Path: path})
	return mustDecode(s.t, body, &wire.GetAllChildrenNumberResponse{}).TotalNumber
}

func rawGetAllChildrenNumber(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	before := x.allChildrenNumber("/")
	if tg.root == "" {
		// A fresh server: "/" counts /zookeeper, /zookeeper/quota and
		// /zookeeper/config.
		assert.Equal(t, int32(3), before)
	}
	assert.Equal(t, int32(2), x.allChildrenNumber("/zookeeper"))

	dir := tg.p("/acn")
	for _, n := range []string{"", "/a", "/a/b", "/a/b/c", "/d"} {
		x.create(dir+n, nil)
	}
	x.mustDo(wire.OpCreate, &wire.CreateRequest{Path: dir + "/a/noread",
		ACL: []wire.ACL{{Perms: wire.PermAll &^ wire.PermRead, ID: wire.Id{Scheme: "world", ID: "anyone"}}}})
	x.mustDo(wire.OpCreate, &wire.CreateRequest{Path: dir + "/d/e", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})

	tests := []struct {
		path string
		want int32
	}{
		{dir, 6},
		{dir + "/a", 3},
		{dir + "/a/b", 1},
		{dir + "/a/b/c", 0},
		{dir + "/d", 1},
		{"/", before + 7},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, x.allChildrenNumber(tc.path), tc.path)
	}
	x.mustFail(wire.CodeNoNode, wire.OpGetAllChildrenNumber, &wire.PathRequest{Path: dir + "/missing"})
	x.mustFail(wire.CodeNoAuth, wire.OpGetAllChildrenNumber, &wire.PathRequest{Path: dir + "/a/noread"})
}

func (s *rawSession) whoAmI() []wire.ClientInfo {
	s.t.Helper()
	return mustDecode(s.t, s.mustDo(wire.OpWhoAmI, nil), &wire.WhoAmIResponse{}).ClientInfo
}

func rawWhoAmI(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	ip := wire.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}
	assert.Equal(t, []wire.ClientInfo{ip}, x.whoAmI())

	auth := func(userPassword string) {
		t.Helper()
		x.sendXid(wire.XidAuth, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte(userPassword)})
		h, body := x.expectReply(wire.XidAuth)
		assert.Equal(t, wire.ReplyHeader{Xid: wire.XidAuth, Zxid: 0, Err: wire.CodeOK}, h)
		assert.Empty(t, body)
	}
	// The ids come in the order ZooKeeper 3.8.0 iterates them (a
	// ConcurrentHashMap, by hash bin): digest:user before ip:127.0.0.1, as
	// a real ZooKeeper 3.8.0 answers. The digest shows its user name only.
	auth("user:pw")
	user := wire.ClientInfo{AuthScheme: "digest", User: "user"}
	assert.Equal(t, []wire.ClientInfo{user, ip}, x.whoAmI())
	assert.Equal(t, []wire.ClientInfo{user, ip}, x.whoAmI(), "the order is stable")
	auth("user:pw")
	assert.Equal(t, []wire.ClientInfo{user, ip}, x.whoAmI(), "adding the same id again changes nothing")

	auth("u2:p2")
	third := x.whoAmI()
	assert.ElementsMatch(t, []wire.ClientInfo{user, ip, {AuthScheme: "digest", User: "u2"}}, third)
	assert.Equal(t, third, x.whoAmI(), "the order is stable")

	// Identities belong to the connection, not the session.
	other := mustRawSession(t, tg.addr)
	assert.Equal(t, []wire.ClientInfo{ip}, other.whoAmI())
}

func rawSASL(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	for _, token := range [][]byte{[]byte("token"), {}} {
		xid := x.send(wire.OpSASL, &wire.SASLRequest{Token: token})
		h, body := x.expectReply(xid)
		assert.Equal(t, wire.ReplyHeader{Xid: xid, Zxid: 0, Err: wire.CodeOK}, h)
		assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff}, body, "a null token")
	}
	// The connection stays usable, with no new identity.
	mustPing(t, x.rawConn)
	assert.Equal(t, []wire.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}, x.whoAmI())
	x.create(tg.p("/after-sasl"), []byte("ok"))
}

// rawSASLNullToken sends a sasl request whose token is null (-1), which
// ZooKeeper 3.8.0 does not answer: processSasl dereferences the token, and
// the exception closes the connection. The session survives.
func rawSASLNullToken(t *testing.T, tg rawTarget) {
	x := mustRawSession(t, tg.addr)
	x.send(wire.OpSASL, &wire.SASLRequest{Token: nil})
	x.expectClosed()
	resumed := x.mustResume()
	mustPing(t, resumed.rawConn)
}
