package tree_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// wantCreate is PROTOCOL.md 4.2 steps 1-3 and 5.3 for a create of op with
// flags and ttl on an otherwise valid request: the code, and on success the
// kind of node made and whether it is sequential.
func wantCreate(op wire.Op, ext bool, flags int32, ttl int64) (wire.Code, tree.Kind, bool) {
	if flags < 0 || flags > 6 {
		return wire.CodeBadArguments, 0, false
	}
	ttlMode := flags == wire.FlagPersistentWithTTL || flags == wire.FlagPersistentSequentialWithTTL
	if ttlMode && !ext {
		return wire.CodeUnimplemented, 0, false
	}
	if ttlMode && (ttl < 1 || ttl > tree.MaxTTL) || !ttlMode && ttl >= 0 {
		return wire.CodeBadArguments, 0, false
	}
	seq := flags == wire.FlagPersistentSequential || flags == wire.FlagEphemeralSequential ||
		flags == wire.FlagPersistentSequentialWithTTL
	switch {
	case op == wire.OpCreateContainer:
		return wire.CodeOK, tree.KindContainer, seq
	case op == wire.OpCreateTTL:
		return wire.CodeOK, tree.KindTTL, seq
	case flags == wire.FlagEphemeral || flags == wire.FlagEphemeralSequential:
		return wire.CodeOK, tree.KindEphemeral, seq
	}
	// Create and create2 with the container flag make a plain node.
	return wire.CodeOK, tree.KindPersistent, seq
}

func TestTree_CreateFlagsAndOpcodes(t *testing.T) {
	ops := []wire.Op{wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL}
	for _, op := range ops {
		for _, ext := range []bool{false, true} {
			for flags := int32(-1); flags <= 7; flags++ {
				ttl := int64(-1)
				if op == wire.OpCreateTTL {
					ttl = 1000
				}
				name := fmt.Sprintf("%s/ext=%t/flags=%d", op, ext, flags)
				t.Run(name, func(t *testing.T) {
					tr := newTree(t)
					mustCreatePath(t, tr, 1, "/p", nil)
					c := newCtx(2)
					c.ExtendedTypes = ext
					a := tree.CreateArgs{Op: op, Path: "/p/n", Data: []byte("d"), ACL: wire.OpenACLUnsafe, Flags: flags, TTL: ttl}
					path, st, code := tr.Create(c, a)

					wantCode, wantKind, seq := wantCreate(op, ext, flags, ttl)
					require.Equal(t, wantCode, code)
					if code != wire.CodeOK {
						assert.Empty(t, path)
						assert.Zero(t, st)
						assert.Empty(t, c.Triggers)
						_, ok := tr.Stat("/p/n")
						assert.False(t, ok)
						assert.Equal(t, int32(0), mustStat(t, tr, "/p").NumChildren)
						return
					}
					wantPath := "/p/n"
					if seq {
						wantPath += "0000000000"
					}
					assert.Equal(t, wantPath, path)
					var owner int64
					if wantKind == tree.KindEphemeral {
						owner = sessA
					}
					assert.Equal(t, owner, st.EphemeralOwner, "ephemeralOwner")
					assert.Equal(t, st, mustStat(t, tr, path))
					assert.Equal(t, wantKind, mustKindOf(t, tr, path, 3))
					assert.Equal(t, wantKind == tree.KindEphemeral, tr.HasEphemerals(sessA))
				})
			}
		}
	}
}

func TestTree_CreateTTLBounds(t *testing.T) {
	tests := []struct {
		name string
		ttl  int64
		want wire.Code
	}{
		{name: "negative", ttl: -5, want: wire.CodeBadArguments},
		{name: "minus one", ttl: -1, want: wire.CodeBadArguments},
		{name: "zero", ttl: 0, want: wire.CodeBadArguments},
		{name: "one", ttl: 1, want: wire.CodeOK},
		{name: "max", ttl: tree.MaxTTL, want: wire.CodeOK},
		{name: "max plus one", ttl: tree.MaxTTL + 1, want: wire.CodeBadArguments},
		{name: "huge", ttl: 1 << 62, want: wire.CodeBadArguments},
	}
	for _, tc := range tests {
		for _, flags := range []int32{wire.FlagPersistentWithTTL, wire.FlagPersistentSequentialWithTTL} {
			t.Run(fmt.Sprintf("%s/flags=%d", tc.name, flags), func(t *testing.T) {
				tr := newTree(t)
				c := newCtx(1)
				c.ExtendedTypes = true
				_, _, code := tr.Create(c, tree.CreateArgs{
					Op: wire.OpCreateTTL, Path: "/t", ACL: wire.OpenACLUnsafe, Flags: flags, TTL: tc.ttl,
				})
				assert.Equal(t, tc.want, code)
			})
		}
	}
}

// TestTree_CreateTTLReapsAfterItsOwnTTL checks that the TTL is the node's.
func TestTree_CreateTTLReapsAfterItsOwnTTL(t *testing.T) {
	tr := newTree(t)
	c := newCtx(1)
	c.ExtendedTypes = true
	p, st, code := tr.Create(c, tree.CreateArgs{
		Op: wire.OpCreateTTL, Path: "/t", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: 500,
	})
	require.Equal(t, wire.CodeOK, code)
	assert.Zero(t, st.EphemeralOwner, "TTL nodes report owner 0")
	assert.False(t, isReapable(tr, p, st.Mtime+500))
	assert.True(t, isReapable(tr, p, st.Mtime+501))
}

func TestTree_CreateCheckOrder(t *testing.T) {
	badACL := []wire.ACL{}
	tests := []struct {
		name  string
		op    wire.Op
		ext   bool
		path  string
		flags int32
		ttl   int64
		acl   []wire.ACL
		ids   []wire.Id
		want  wire.Code
	}{
		{name: "invalid flag beats everything", path: "x", flags: 7, acl: badACL, want: wire.CodeBadArguments},
		{name: "negative flag", path: "/p/ok", flags: -1, want: wire.CodeBadArguments},
		{name: "TTL disabled beats bad ttl", op: wire.OpCreateTTL, path: "x", flags: 5, ttl: 0, acl: badACL, want: wire.CodeUnimplemented},
		{name: "bad ttl beats missing parent", op: wire.OpCreateTTL, ext: true, path: "/missing/x", flags: 5, ttl: 0, want: wire.CodeBadArguments},
		{name: "ttl on a non-TTL op", op: wire.OpCreate, ext: true, path: "/p/ok", flags: 0, ttl: 10, want: wire.CodeBadArguments},
		{name: "no slash beats invalid ACL", path: "x", acl: badACL, want: wire.CodeBadArguments},
		{name: "empty path", path: "", want: wire.CodeBadArguments},
		{name: "NUL beats invalid ACL", path: "/p/a\x00b", acl: badACL, want: wire.CodeBadArguments},
		{name: "NUL beats missing parent", path: "/missing/\x00", want: wire.CodeBadArguments},
		{name: "invalid ACL beats missing parent", path: "/missing/x", acl: badACL, want: wire.CodeInvalidACL},
		{name: "invalid ACL beats no auth", path: "/ro/x", acl: badACL, want: wire.CodeInvalidACL},
		{name: "auth ACL without digest ids", path: "/p/x2", acl: wire.CreatorAllACL, ids: []wire.Id{ipID}, want: wire.CodeInvalidACL},
		{name: "missing parent", path: "/missing/x", want: wire.CodeNoNode},
		{name: "missing grandparent", path: "/missing/x/y", want: wire.CodeNoNode},
		{name: "missing parent beats invalid final path", path: "/missing/", want: wire.CodeNoNode},
		{name: "missing parent beats dot segment", path: "/missing/.", want: wire.CodeNoNode},
		{name: "parent path itself invalid is just missing", path: "/p//x", want: wire.CodeNoNode},
		{name: "no CREATE on parent", path: "/ro/x", want: wire.CodeNoAuth},
		{name: "NOAUTH beats invalid final path", path: "/ro/", want: wire.CodeNoAuth},
		{name: "NOAUTH beats dot-dot", path: "/ro/..", want: wire.CodeNoAuth},
		{name: "NOAUTH beats node exists", path: "/ro/y", want: wire.CodeNoAuth},
		{name: "super bypasses parent ACL", path: "/ro/z", ids: []wire.Id{superID}, want: wire.CodeOK},
		{name: "trailing slash after parent exists", path: "/p/", want: wire.CodeBadArguments},
		{name: "dot segment", path: "/p/.", want: wire.CodeBadArguments},
		{name: "control char", path: "/p/a\x01", want: wire.CodeBadArguments},
		{name: "sequential trailing slash is valid", path: "/p/", flags: wire.FlagPersistentSequential, want: wire.CodeOK},
		{name: "node exists", path: "/p/x", want: wire.CodeNodeExists},
		{name: "root exists", path: "/", want: wire.CodeNodeExists},
		{name: "system node exists", path: "/zookeeper", want: wire.CodeNodeExists},
		{name: "config is read-only", path: "/zookeeper/config/x", want: wire.CodeNoAuth},
		{name: "ephemeral parent", path: "/e/x", want: wire.CodeNoChildrenForEphemerals},
		{name: "invalid path beats ephemeral parent", path: "/e/", want: wire.CodeBadArguments},
		{name: "sequential under ephemeral", path: "/e/", flags: wire.FlagEphemeralSequential, want: wire.CodeNoChildrenForEphemerals},
		{name: "container under ephemeral", op: wire.OpCreateContainer, path: "/e/c", want: wire.CodeNoChildrenForEphemerals},
		{name: "containers may have children", path: "/c/x", want: wire.CodeOK},
		{name: "TTL nodes may have children", path: "/t/x", flags: wire.FlagEphemeral, want: wire.CodeOK},
		// ZooKeeper cannot build a TTL owner from ttl -1 here; zkraft
		// answers MARSHALLINGERROR after every other check.
		{name: "createTTL with plain flag and no ttl", op: wire.OpCreateTTL, ext: true, path: "/p/new", flags: 0, ttl: -1, want: wire.CodeMarshallingError},
		{name: "createTTL with plain flag and no ttl, node exists", op: wire.OpCreateTTL, ext: true, path: "/p/x", flags: 0, ttl: -1, want: wire.CodeNodeExists},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			mustCreatePath(t, tr, 1, "/p", nil)
			mustCreatePath(t, tr, 2, "/p/x", nil)
			mustCreatePath(t, tr, 3, "/ro", nil)
			mustCreatePath(t, tr, 4, "/ro/y", nil)
			mustSetACL(t, tr, 5, "/ro", []wire.ACL{{Perms: wire.PermAll &^ wire.PermCreate, ID: wire.Id{Scheme: "world", ID: "anyone"}}})
			mustCreate(t, tr, newCtx(6), newCreate("/e", wire.FlagEphemeral))
			c := newCtx(7)
			c.ExtendedTypes = true
			mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreateContainer, Path: "/c", ACL: wire.OpenACLUnsafe, TTL: -1})
			mustCreate(t, tr, c, tree.CreateArgs{Op: wire.OpCreateTTL, Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5, TTL: 10})
			before := tr.Digest()

			op := tc.op
			if op == 0 {
				op = wire.OpCreate
			}
			ttl := tc.ttl
			if op != wire.OpCreateTTL && ttl == 0 {
				ttl = -1
			}
			acl := tc.acl
			if acl == nil {
				acl = wire.OpenACLUnsafe
			}
			c = newCtx(10, tc.ids...)
			c.ExtendedTypes = tc.ext
			_, _, code := tr.Create(c, tree.CreateArgs{Op: op, Path: tc.path, ACL: acl, Flags: tc.flags, TTL: ttl})
			assert.Equal(t, tc.want, code)
			if code != wire.CodeOK {
				assert.Equal(t, before, tr.Digest(), "a failed create changes nothing")
				assert.Empty(t, c.Triggers)
			}
		})
	}
}

func TestTree_CreateStat(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 5, "/p", []byte("parent"))
	_, code := tr.SetData(newCtx(6), "/p", []byte("parent2"), -1)
	require.Equal(t, wire.CodeOK, code)
	parentBefore := mustStat(t, tr, "/p")

	tests := []struct {
		name  string
		flags int32
		data  []byte
		owner int64
	}{
		{name: "persistent", flags: wire.FlagPersistent, data: []byte("hello")},
		{name: "ephemeral", flags: wire.FlagEphemeral, data: []byte("e"), owner: sessA},
		{name: "nil data", flags: wire.FlagPersistent, data: nil},
		{name: "empty data", flags: wire.FlagPersistent, data: []byte{}},
	}
	zxid := int64(10)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			zxid++
			c := newCtx(zxid)
			a := newCreate(fmt.Sprintf("/p/c%d", i), tc.flags)
			a.Data = tc.data
			path, st, code := tr.Create(c, a)
			require.Equal(t, wire.CodeOK, code)
			want := wire.Stat{
				Czxid: zxid, Mzxid: zxid, Pzxid: zxid,
				Ctime: timeAt(zxid), Mtime: timeAt(zxid),
				EphemeralOwner: tc.owner,
				DataLength:     int32(len(tc.data)),
			}
			assert.Equal(t, want, st)
			assert.Equal(t, want, mustStat(t, tr, path))
			data, _, code := tr.Get(path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.Equal(t, tc.data == nil, data == nil, "null data stays null, empty stays empty")
			assert.Equal(t, string(tc.data), string(data))

			acl, _, code := tr.ACL(path, nil)
			require.Equal(t, wire.CodeOK, code)
			assert.Equal(t, wire.OpenACLUnsafe, acl)

			parent := mustStat(t, tr, "/p")
			n := int32(i + 1)
			want = parentBefore
			want.Cversion = 2*n - n // n stored creates, n children
			want.NumChildren = n
			want.Pzxid = zxid
			assert.Equal(t, want, parent, "parent: cversion, numChildren and pzxid change, nothing else")
			assert.Equal(t, []tree.Trigger{
				trig(path, wire.EventNodeCreated),
				trig("/p", wire.EventNodeChildrenChanged),
			}, noACL(c.Triggers))
		})
	}
}

func TestTree_CreateTopLevelTriggersRoot(t *testing.T) {
	tr := newTree(t)
	rootBefore := mustStat(t, tr, "/")
	c := newCtx(3)
	mustCreate(t, tr, c, newCreate("/top", 0))
	assert.Equal(t, []tree.Trigger{trig("/top", wire.EventNodeCreated), trig("/", wire.EventNodeChildrenChanged)}, noACL(c.Triggers))
	root := mustStat(t, tr, "/")
	assert.Equal(t, int32(2*1-2), root.Cversion)
	assert.Equal(t, int32(2), root.NumChildren)
	assert.Equal(t, int64(3), root.Pzxid)
	assert.Equal(t, rootBefore.Mzxid, root.Mzxid)
}

func TestTree_CreateSequential(t *testing.T) {
	tr := newTree(t)
	mustCreatePath(t, tr, 1, "/p", nil)
	zxid := int64(1)
	create := func(path string, flags int32) (string, wire.Code) {
		zxid++
		p, _, code := tr.Create(newCtx(zxid), newCreate(path, flags))
		return p, code
	}

	steps := []struct {
		name  string
		path  string
		flags int32
		del   bool
		want  string
		code  wire.Code
	}{
		{name: "first child ever", path: "/p/s-", flags: wire.FlagPersistentSequential, want: "/p/s-0000000000"},
		{name: "second", path: "/p/s-", flags: wire.FlagPersistentSequential, want: "/p/s-0000000001"},
		{name: "plain create advances the counter", path: "/p/plain", want: "/p/plain"},
		{name: "ephemeral sequential shares the counter", path: "/p/e-", flags: wire.FlagEphemeralSequential, want: "/p/e-0000000003"},
		{name: "delete", path: "/p/s-0000000000", del: true},
		{name: "delete", path: "/p/s-0000000001", del: true},
		{name: "deletes neither reset nor advance it", path: "/p/s-", flags: wire.FlagPersistentSequential, want: "/p/s-0000000004"},
		{name: "bare suffix", path: "/p/", flags: wire.FlagPersistentSequential, want: "/p/0000000005"},
		{name: "plain create of the next name", path: "/p/x0000000007", want: "/p/x0000000007"},
		{name: "sequential collides with it", path: "/p/x", flags: wire.FlagPersistentSequential, code: wire.CodeNodeExists},
		{name: "failed create does not advance", path: "/p/x", flags: wire.FlagPersistentSequential, code: wire.CodeNodeExists},
		{name: "root counter counted /p only", path: "/", flags: wire.FlagPersistentSequential, want: "/0000000001"},
		{name: "root counter", path: "/r", flags: wire.FlagPersistentSequential, want: "/r0000000002"},
	}
	for _, st := range steps {
		if st.del {
			zxid++
			require.Equal(t, wire.CodeOK, tr.Delete(newCtx(zxid), st.path, -1), "delete %s", st.path)
			continue
		}
		p, code := create(st.path, st.flags)
		require.Equal(t, st.code, code, st.name)
		assert.Equal(t, st.want, p, st.name)
	}
}

func TestTree_CreateACL(t *testing.T) {
	world := func(perms int32) wire.ACL { return wire.ACL{Perms: perms, ID: wire.Id{Scheme: "world", ID: "anyone"}} }
	digest := func(perms int32, id string) wire.ACL {
		return wire.ACL{Perms: perms, ID: wire.Id{Scheme: "digest", ID: id}}
	}
	ip := func(perms int32, id string) wire.ACL {
		return wire.ACL{Perms: perms, ID: wire.Id{Scheme: "ip", ID: id}}
	}
	authACL := func(perms int32) wire.ACL { return wire.ACL{Perms: perms, ID: wire.Id{Scheme: "auth", ID: ""}} }

	tests := []struct {
		name string
		acl  []wire.ACL
		ids  []wire.Id
		want []wire.ACL // nil: INVALIDACL
	}{
		{name: "open", acl: wire.OpenACLUnsafe, want: wire.OpenACLUnsafe},
		{name: "duplicates removed", acl: []wire.ACL{world(31), world(31)}, want: []wire.ACL{world(31)}},
		{
			name: "duplicates removed keeping first order",
			acl:  []wire.ACL{digest(1, "a:b"), world(1), digest(1, "a:b"), world(1), digest(2, "a:b")},
			want: []wire.ACL{digest(1, "a:b"), world(1), digest(2, "a:b")},
		},
		{name: "same id other perms kept", acl: []wire.ACL{world(1), world(2)}, want: []wire.ACL{world(1), world(2)}},
		{
			name: "auth expands to every digest id",
			acl:  []wire.ACL{authACL(wire.PermRead | wire.PermAdmin)},
			ids:  []wire.Id{ipID, aliceID, superID, bobID},
			want: []wire.ACL{
				{Perms: wire.PermRead | wire.PermAdmin, ID: aliceID},
				{Perms: wire.PermRead | wire.PermAdmin, ID: bobID},
			},
		},
		{
			name: "auth id is ignored",
			acl:  []wire.ACL{{Perms: 31, ID: wire.Id{Scheme: "auth", ID: "whatever"}}},
			ids:  []wire.Id{aliceID},
			want: []wire.ACL{{Perms: 31, ID: aliceID}},
		},
		{
			name: "auth mixed with others",
			acl:  []wire.ACL{world(1), authACL(31)},
			ids:  []wire.Id{aliceID},
			want: []wire.ACL{world(1), {Perms: 31, ID: aliceID}},
		},
		{name: "auth without ids", acl: []wire.ACL{authACL(31)}},
		{name: "auth with ip only", acl: []wire.ACL{authACL(31)}, ids: []wire.Id{ipID}},
		{name: "auth with super only", acl: []wire.ACL{authACL(31)}, ids: []wire.Id{superID}},
		{name: "world someone", acl: []wire.ACL{{Perms: 31, ID: wire.Id{Scheme: "world", ID: "someone"}}}},
		{name: "world empty id", acl: []wire.ACL{{Perms: 31, ID: wire.Id{Scheme: "world"}}}},
		{name: "one bad entry spoils the list", acl: []wire.ACL{world(31), {Perms: 31, ID: wire.Id{Scheme: "world", ID: "x"}}}},
		{name: "digest user:hash", acl: []wire.ACL{digest(31, "user:hash")}, want: []wire.ACL{digest(31, "user:hash")}},
		{name: "digest :hash", acl: []wire.ACL{digest(31, ":hash")}, want: []wire.ACL{digest(31, ":hash")}},
		{name: "digest trailing colon dropped", acl: []wire.ACL{digest(31, "a:b:")}, want: []wire.ACL{digest(31, "a:b:")}},
		{name: "digest user:", acl: []wire.ACL{digest(31, "user:")}},
		{name: "digest no colon", acl: []wire.ACL{digest(31, "user")}},
		{name: "digest three parts", acl: []wire.ACL{digest(31, "a:b:c")}},
		{name: "digest a::", acl: []wire.ACL{digest(31, "a::")}},
		{name: "digest colon", acl: []wire.ACL{digest(31, ":")}},
		{name: "digest empty", acl: []wire.ACL{digest(31, "")}},
		{name: "ip address", acl: []wire.ACL{ip(31, "10.0.0.1")}, want: []wire.ACL{ip(31, "10.0.0.1")}},
		{name: "ip network", acl: []wire.ACL{ip(31, "10.0.0.0/8")}, want: []wire.ACL{ip(31, "10.0.0.0/8")}},
		{name: "ip /0", acl: []wire.ACL{ip(31, "0.0.0.0/0")}, want: []wire.ACL{ip(31, "0.0.0.0/0")}},
		{name: "ip /33", acl: []wire.ACL{ip(31, "10.0.0.0/33")}},
		{name: "ip negative mask", acl: []wire.ACL{ip(31, "10.0.0.0/-1")}},
		{name: "ip empty mask", acl: []wire.ACL{ip(31, "10.0.0.0/")}},
		{name: "ip three octets", acl: []wire.ACL{ip(31, "10.0.0")}},
		{name: "ip octet 256", acl: []wire.ACL{ip(31, "10.0.0.256")}},
		{name: "ip empty octet", acl: []wire.ACL{ip(31, "10..0.1")}},
		{name: "ip hostname", acl: []wire.ACL{ip(31, "localhost")}},
		{name: "ip v6 unsupported", acl: []wire.ACL{ip(31, "::1")}},
		{name: "unknown scheme", acl: []wire.ACL{{Perms: 31, ID: wire.Id{Scheme: "sasl", ID: "x"}}}},
		{name: "super is not a provider", acl: []wire.ACL{{Perms: 31, ID: wire.Id{Scheme: "super", ID: ""}}}},
		{name: "empty scheme", acl: []wire.ACL{{Perms: 31, ID: wire.Id{}}}},
		{name: "empty list", acl: []wire.ACL{}},
		{name: "nil list", acl: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			mustCreatePath(t, tr, 1, "/n", nil)

			a := newCreate("/c", 0)
			a.ACL = tc.acl
			c := newCtx(2, tc.ids...)
			_, _, code := tr.Create(c, a)
			c2 := newCtx(3, tc.ids...)
			_, setCode := tr.SetACL(c2, "/n", tc.acl, -1)
			if tc.want == nil {
				assert.Equal(t, wire.CodeInvalidACL, code, "create")
				assert.Equal(t, wire.CodeInvalidACL, setCode, "setACL")
				return
			}
			require.Equal(t, wire.CodeOK, code, "create")
			require.Equal(t, wire.CodeOK, setCode, "setACL")
			for _, p := range []string{"/c", "/n"} {
				got, _, code := tr.ACL(p, []wire.Id{superID})
				require.Equal(t, wire.CodeOK, code)
				assert.Equal(t, tc.want, got, p)
			}
		})
	}
}
