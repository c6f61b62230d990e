package tree

import (
	"strings"
	"unicode/utf8"
)

// ValidPath reports whether p is a valid znode path by ZooKeeper's server-side
// rules (PathUtils.validatePath): absolute, no trailing slash except for the
// root, no empty, "." or ".." segment, and no character Java would reject
// (NUL, C0 and C1 controls, surrogates and the private-use area, U+FFF0 and
// above). Runes above U+FFFF are rejected because Java sees them as
// surrogate pairs; invalid UTF-8 decodes to U+FFFD in Java and is rejected too.
func ValidPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if len(p) == 1 {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	for i := 1; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if !validRune(r) {
			return false
		}
		i += size
	}
	return true
}

func validRune(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return false
	case r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
		return false
	}
	return true
}

// splitParent splits p at its last slash as ZooKeeper's validatePathForCreate
// does: the parent of "/a" is the root, and the parent of "/" is the root too.
// ok is false when p has no slash or contains a NUL.
func splitParent(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 || strings.IndexByte(p, 0) >= 0 {
		return "", "", false
	}
	parent, name = p[:i], p[i+1:]
	if parent == "" {
		parent = "/"
	}
	return parent, name, true
}

// parentOf returns the parent path of an existing node's path.
func parentOf(p string) string {
	parent, _, _ := splitParent(p)
	return parent
}

// baseName returns the last segment of a node's path.
func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// isSpecial reports whether p is one of the paths ZooKeeper never deletes.
func isSpecial(p string) bool {
	switch p {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}
