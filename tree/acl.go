package tree

import (
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/wire"
)

// Auth schemes the server knows. ZooKeeper registers providers for ip and
// digest by default; world:anyone and super are handled specially.
const (
	SchemeWorld  = "world"
	SchemeAuth   = "auth"
	SchemeDigest = "digest"
	SchemeIP     = "ip"
	SchemeSuper  = "super"
)

// CheckACL reports whether a caller with identities ids may do perm on a node
// with the given ACL, as ZooKeeperServer.checkACL decides: an empty ACL or a
// super identity allows everything; otherwise some entry granting a bit of
// perm must be world:anyone or match one of the caller's identities of the
// same scheme (digest: equal id; ip: address within the entry's mask).
func CheckACL(acl []wire.ACL, perm int32, ids []wire.Id) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == SchemeWorld && a.ID.ID == "anyone" {
			return true
		}
		for _, id := range ids {
			if id.Scheme == a.ID.Scheme && matches(id, a.ID.ID) {
				return true
			}
		}
	}
	return false
}

func matches(id wire.Id, expr string) bool {
	switch id.Scheme {
	case SchemeDigest:
		return id.ID == expr
	case SchemeIP:
		return ipMatches(id.ID, expr)
	}
	return false
}

// fixupACL validates an ACL list given to create or setACL and expands the
// auth scheme into the caller's authenticated identities, as ZooKeeper's
// PrepRequestProcessor.fixupACL. ok is false for INVALIDACL.
func fixupACL(acl []wire.ACL, ids []wire.Id) ([]wire.ACL, bool) {
	acl = dedupACL(acl)
	if len(acl) == 0 {
		return nil, false
	}
	if len(acl) == 1 && acl[0] == wire.OpenACLUnsafe[0] {
		return wire.OpenACLUnsafe, true // share the common list between nodes
	}
	out := make([]wire.ACL, 0, len(acl))
	for _, a := range acl {
		switch {
		case a.ID.Scheme == SchemeWorld && a.ID.ID == "anyone":
			out = append(out, a)
		case a.ID.Scheme == SchemeAuth:
			found := false
			for _, id := range ids {
				if id.Scheme == SchemeDigest { // the only provider that "authenticates"
					out = append(out, wire.ACL{Perms: a.Perms, ID: id})
					found = true
				}
			}
			if !found {
				return nil, false
			}
		case validID(a.ID):
			out = append(out, a)
		default:
			return nil, false
		}
	}
	return out, true
}

func dedupACL(acl []wire.ACL) []wire.ACL {
	for i := 1; i < len(acl); i++ {
		for j := 0; j < i; j++ {
			if acl[i] == acl[j] {
				return dedupSlow(acl)
			}
		}
	}
	return acl
}

func dedupSlow(acl []wire.ACL) []wire.ACL {
	out := make([]wire.ACL, 0, len(acl))
	seen := make(map[wire.ACL]bool, len(acl))
	for _, a := range acl {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// validID reports whether a registered provider accepts id.
func validID(id wire.Id) bool {
	switch id.Scheme {
	case SchemeDigest:
		// Java's id.split(":") drops trailing empty strings and must give two parts.
		return len(javaSplit(id.ID, ":")) == 2
	case SchemeIP:
		_, _, ok := parseIPExpr(id.ID)
		return ok
	}
	return false
}

// javaSplit splits s like Java's String.split with a literal separator and
// limit 0: trailing empty strings are removed.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// parseIPExpr parses "a.b.c.d" or "a.b.c.d/bits" as ZooKeeper 3.8's
// IPAuthenticationProvider does (IPv4 only).
func parseIPExpr(expr string) (addr [4]byte, bits int, ok bool) {
	ip, mask, hasMask := strings.Cut(expr, "/")
	addr, ok = parseIPv4(ip)
	if !ok {
		return addr, 0, false
	}
	bits = 32
	if hasMask {
		n, err := strconv.ParseInt(mask, 10, 32)
		if err != nil || n < 0 || n > 32 {
			return addr, 0, false
		}
		bits = int(n)
	}
	return addr, bits, true
}

// parseIPv4 accepts exactly four dot-separated decimal numbers 0..255
// (Java's split("\\.", -1) keeps empty parts, which then fail to parse).
func parseIPv4(s string) (addr [4]byte, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return addr, false
	}
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 || n > 255 {
			return addr, false
		}
		addr[i] = byte(n)
	}
	return addr, true
}

func ipMatches(remote, expr string) bool {
	want, bits, ok := parseIPExpr(expr)
	if !ok {
		return false
	}
	got, ok := parseIPv4(remote)
	if !ok {
		return false
	}
	for i := 0; i < 4; i++ {
		m := maskByte(bits - 8*i)
		if got[i]&m != want[i]&m {
			return false
		}
	}
	return true
}

// maskByte returns the mask for one byte of which bits leading bits count.
func maskByte(bits int) byte {
	switch {
	case bits <= 0:
		return 0
	case bits >= 8:
		return 0xff
	}
	return byte(0xff << (8 - bits))
}
