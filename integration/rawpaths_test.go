package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/server/servertest"
	"github.com/zkraft/zkraft/wire"
)

// pathCases are requests with unusual paths and the code ZooKeeper 3.8
// answers: writes validate the path (BADARGUMENTS), reads do not (a bad
// path just does not exist), exists rejects only a NUL.
var pathCases = []struct {
	name string
	op   wire.Op
	body wire.Record
	want wire.Code
}{
	{"create with a trailing slash", wire.OpCreate, &wire.CreateRequest{Path: "/zookeeper/", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with a trailing slash, parent missing: parent checked first", wire.OpCreate,
		&wire.CreateRequest{Path: "/a/", ACL: wire.OpenACLUnsafe}, wire.CodeNoNode},
	{"create of a relative path", wire.OpCreate, &wire.CreateRequest{Path: "a", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create of an empty path", wire.OpCreate, &wire.CreateRequest{Path: "", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with an empty segment", wire.OpCreate, &wire.CreateRequest{Path: "//", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with an empty segment, parent missing", wire.OpCreate, &wire.CreateRequest{Path: "/a//b", ACL: wire.OpenACLUnsafe}, wire.CodeNoNode},
	{"create with a dot segment", wire.OpCreate, &wire.CreateRequest{Path: "/.", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with a dot-dot segment", wire.OpCreate, &wire.CreateRequest{Path: "/..", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with a NUL", wire.OpCreate, &wire.CreateRequest{Path: "/a\x00b", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with a control character", wire.OpCreate, &wire.CreateRequest{Path: "/a\x01b", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create with a private-use character", wire.OpCreate, &wire.CreateRequest{Path: "/a\ue000", ACL: wire.OpenACLUnsafe}, wire.CodeBadArguments},
	{"create of the root", wire.OpCreate, &wire.CreateRequest{Path: "/", ACL: wire.OpenACLUnsafe}, wire.CodeNodeExists},
	{"create with a bad flag", wire.OpCreate, &wire.CreateRequest{Path: "/flag", ACL: wire.OpenACLUnsafe, Flags: 7}, wire.CodeBadArguments},
	{"sequential create with a trailing slash", wire.OpCreate,
		&wire.CreateRequest{Path: "/", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentSequential}, wire.CodeOK},
	{"delete of the root", wire.OpDelete, &wire.DeleteRequest{Path: "/", Version: -1}, wire.CodeBadArguments},
	{"delete of /zookeeper/config", wire.OpDelete, &wire.DeleteRequest{Path: "/zookeeper/config", Version: -1}, wire.CodeBadArguments},
	{"setData with a trailing slash", wire.OpSetData, &wire.SetDataRequest{Path: "/zookeeper/", Version: -1}, wire.CodeBadArguments},
	{"getData with a trailing slash", wire.OpGetData, &wire.PathWatchRequest{Path: "/zookeeper/"}, wire.CodeNoNode},
	{"getData of a relative path", wire.OpGetData, &wire.PathWatchRequest{Path: "zookeeper"}, wire.CodeNoNode},
	{"getChildren with an empty segment", wire.OpGetChildren2, &wire.PathWatchRequest{Path: "//"}, wire.CodeNoNode},
	{"exists with a trailing slash", wire.OpExists, &wire.PathWatchRequest{Path: "/zookeeper/"}, wire.CodeNoNode},
	{"exists with a NUL and a watch", wire.OpExists, &wire.PathWatchRequest{Path: "/a\x00b", Watch: true}, wire.CodeBadArguments},
	{"sync of an invalid path", wire.OpSync, &wire.PathRequest{Path: "no/slash"}, wire.CodeOK},
}

func TestPathValidation(t *testing.T) {
	srv := servertest.NewServer(t)
	c := dialRaw(t, srv.ConnectString())
	c.mustSession()
	for i, tc := range pathCases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := c.call(int32(i+1), tc.op, tc.body.Append(nil))
			assert.Equal(t, int32(i+1), h.Xid)
			assert.Equal(t, tc.want, h.Err)
		})
	}
}
