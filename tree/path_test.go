package tree_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/tree"
)

func TestValidPath(t *testing.T) {
	tests := []struct {
		name string
		path string
		want bool
	}{
		{name: "root", path: "/", want: true},
		{name: "simple", path: "/a", want: true},
		{name: "nested", path: "/a/b/c", want: true},
		{name: "three dots", path: "/...", want: true},
		{name: "dot prefix", path: "/.a", want: true},
		{name: "dot suffix", path: "/a.", want: true},
		{name: "two dots inside a name", path: "/a..b", want: true},
		{name: "dots in deep segment", path: "/a/..b/c..", want: true},
		{name: "space", path: "/a b", want: true},
		{name: "latin-1 letter", path: "/caf\u00e9", want: true},
		{name: "CJK", path: "/\u4e2d\u6587", want: true},
		{name: "just below surrogates", path: "/\ud7ff", want: true},
		{name: "just above private use", path: "/\uf900", want: true},
		{name: "just below specials", path: "/\uffef", want: true},
		{name: "tilde", path: "/~", want: true},
		{name: "U+00A0", path: "/\u00a0", want: true},

		{name: "empty", path: "", want: false},
		{name: "relative", path: "a", want: false},
		{name: "relative with slash", path: "a/b", want: false},
		{name: "trailing slash", path: "/a/", want: false},
		{name: "double slash", path: "//", want: false},
		{name: "empty segment", path: "/a//b", want: false},
		{name: "dot", path: "/.", want: false},
		{name: "dot dot", path: "/..", want: false},
		{name: "inner dot", path: "/a/./b", want: false},
		{name: "inner dot dot", path: "/a/../b", want: false},
		{name: "trailing dot", path: "/a/.", want: false},
		{name: "trailing dot dot", path: "/a/..", want: false},
		{name: "NUL", path: "/a\x00", want: false},
		{name: "NUL alone", path: "/\x00", want: false},
		{name: "U+0001", path: "/a\x01b", want: false},
		{name: "tab", path: "/a\tb", want: false},
		{name: "newline", path: "/a\n", want: false},
		{name: "U+001F", path: "/\x1f", want: false},
		{name: "DEL U+007F", path: "/\x7f", want: false},
		{name: "U+0080", path: "/\u0080", want: false},
		{name: "U+0085", path: "/\u0085", want: false},
		{name: "U+009F", path: "/\u009f", want: false},
		{name: "U+E000 private use", path: "/\ue000", want: false},
		{name: "U+F8FF", path: "/\uf8ff", want: false},
		{name: "U+D800 encoded (invalid UTF-8)", path: "/\xed\xa0\x80", want: false},
		{name: "U+DFFF encoded (invalid UTF-8)", path: "/\xed\xbf\xbf", want: false},
		{name: "U+FFF0", path: "/\ufff0", want: false},
		{name: "U+FFFD replacement char", path: "/\ufffd", want: false},
		{name: "U+FFFF", path: "/\uffff", want: false},
		{name: "emoji above U+FFFF", path: "/\U0001F600", want: false},
		{name: "U+10000", path: "/\U00010000", want: false},
		{name: "invalid UTF-8 byte", path: "/a\xffb", want: false},
		{name: "truncated UTF-8", path: "/a\xc3", want: false},
		{name: "overlong UTF-8 slash", path: "/a\xc0\xafb", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tree.ValidPath(tc.path), "%q", tc.path)
		})
	}
}
