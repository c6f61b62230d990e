package tree_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

func TestCheckACL(t *testing.T) {
	anyone := wire.Id{Scheme: "world", ID: "anyone"}
	ipACL := func(expr string) []wire.ACL {
		return []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: "ip", ID: expr}}}
	}
	remote := func(addr string) []wire.Id { return []wire.Id{{Scheme: "ip", ID: addr}} }

	tests := []struct {
		name string
		acl  []wire.ACL
		perm int32
		ids  []wire.Id
		want bool
	}{
		{name: "nil ACL allows all", acl: nil, perm: wire.PermAdmin, want: true},
		{name: "empty ACL allows all", acl: []wire.ACL{}, perm: wire.PermAll, want: true},
		{name: "world read", acl: []wire.ACL{{Perms: wire.PermRead, ID: anyone}}, perm: wire.PermRead, want: true},
		{name: "world read, asked write", acl: []wire.ACL{{Perms: wire.PermRead, ID: anyone}}, perm: wire.PermWrite, want: false},
		{name: "any requested bit is enough", acl: []wire.ACL{{Perms: wire.PermAdmin, ID: anyone}}, perm: wire.PermRead | wire.PermAdmin, want: true},
		{name: "zero perms entry", acl: []wire.ACL{{Perms: 0, ID: anyone}}, perm: wire.PermRead, want: false},
		{name: "world other id", acl: []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: "world", ID: "someone"}}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "world", ID: "someone"}}, want: false},
		{name: "second entry matches", acl: []wire.ACL{{Perms: wire.PermWrite, ID: anyone}, {Perms: wire.PermRead, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{aliceID}, want: true},
		{name: "matching entry lacks the bit", acl: []wire.ACL{{Perms: wire.PermWrite, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{aliceID}, want: false},

		{name: "digest exact", acl: []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{ipID, aliceID}, want: true},
		{name: "digest other hash", acl: []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "digest", ID: "alice:other"}}, want: false},
		{name: "digest user only", acl: []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "digest", ID: "alice"}}, want: false},
		{name: "digest case matters", acl: []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "digest", ID: "Alice:aGFzaA=="}}, want: false},
		{name: "same id other scheme", acl: []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "ip", ID: aliceID.ID}}, want: false},
		{name: "no ids", acl: []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}, perm: wire.PermRead, want: false},
		{name: "unknown scheme never matches", acl: []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: "x509", ID: "CN=a"}}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "x509", ID: "CN=a"}}, want: false},
		{name: "unexpanded auth never matches", acl: []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: "auth", ID: ""}}}, perm: wire.PermRead, ids: []wire.Id{{Scheme: "auth", ID: ""}}, want: false},

		{name: "super bypasses", acl: []wire.ACL{{Perms: wire.PermRead, ID: aliceID}}, perm: wire.PermAdmin, ids: []wire.Id{bobID, superID}, want: true},
		{name: "super with any id bypasses", acl: []wire.ACL{{Perms: 0, ID: aliceID}}, perm: wire.PermAll, ids: []wire.Id{{Scheme: "super", ID: "x"}}, want: true},

		{name: "ip exact", acl: ipACL("10.1.2.3"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: true},
		{name: "ip exact other", acl: ipACL("10.1.2.3"), perm: wire.PermRead, ids: remote("10.1.2.4"), want: false},
		{name: "ip /32", acl: ipACL("10.1.2.3/32"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: true},
		{name: "ip /8 inside", acl: ipACL("10.0.0.0/8"), perm: wire.PermRead, ids: remote("10.255.1.2"), want: true},
		{name: "ip /8 outside", acl: ipACL("10.0.0.0/8"), perm: wire.PermRead, ids: remote("11.0.0.1"), want: false},
		{name: "ip /8 host bits in expr ignored", acl: ipACL("10.9.9.9/8"), perm: wire.PermRead, ids: remote("10.0.0.1"), want: true},
		{name: "ip /24 inside", acl: ipACL("192.168.1.0/24"), perm: wire.PermRead, ids: remote("192.168.1.255"), want: true},
		{name: "ip /24 outside", acl: ipACL("192.168.1.0/24"), perm: wire.PermRead, ids: remote("192.168.2.1"), want: false},
		{name: "ip /12 inside", acl: ipACL("172.16.0.0/12"), perm: wire.PermRead, ids: remote("172.31.255.255"), want: true},
		{name: "ip /12 outside", acl: ipACL("172.16.0.0/12"), perm: wire.PermRead, ids: remote("172.32.0.0"), want: false},
		{name: "ip /0 matches every v4", acl: ipACL("0.0.0.0/0"), perm: wire.PermRead, ids: remote("203.0.113.9"), want: true},
		{name: "ip v6 remote never matches", acl: ipACL("0.0.0.0/0"), perm: wire.PermRead, ids: remote("::1"), want: false},
		{name: "ip v6 expr never matches", acl: ipACL("::1"), perm: wire.PermRead, ids: remote("::1"), want: false},
		{name: "ip /33 never matches", acl: ipACL("10.1.2.3/33"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: false},
		{name: "ip negative mask never matches", acl: ipACL("10.1.2.3/-1"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: false},
		{name: "ip empty mask never matches", acl: ipACL("10.1.2.3/"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: false},
		{name: "ip junk mask never matches", acl: ipACL("10.1.2.3/x"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: false},
		{name: "ip double mask never matches", acl: ipACL("10.1.2.3/8/8"), perm: wire.PermRead, ids: remote("10.1.2.3"), want: false},
		{name: "ip three octets never match", acl: ipACL("10.1.2"), perm: wire.PermRead, ids: remote("10.1.2"), want: false},
		{name: "ip octet 256 never matches", acl: ipACL("10.1.2.256"), perm: wire.PermRead, ids: remote("10.1.2.256"), want: false},
		{name: "ip empty octet never matches", acl: ipACL("10..2.3"), perm: wire.PermRead, ids: remote("10..2.3"), want: false},
		{name: "ip hostname never matches", acl: ipACL("localhost"), perm: wire.PermRead, ids: remote("localhost"), want: false},
		{name: "ip bad remote", acl: ipACL("0.0.0.0/0"), perm: wire.PermRead, ids: remote("not-an-ip"), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tree.CheckACL(tc.acl, tc.perm, tc.ids))
		})
	}
}
