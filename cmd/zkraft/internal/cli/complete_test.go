package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestComplete(t *testing.T) {
	tree := map[string][]string{
		"/":          {"zookeeper", "app", "apple"},
		"/zookeeper": {"quota", "config"},
		"/app":       {"locks"},
	}
	list := func(parent string) []string { return tree[parent] }
	tests := []struct {
		name string
		line string
		pos  int
		want completion
		ok   bool
	}{
		{"command", "whoa", 4, completion{line: "whoami ", pos: 7}, true},
		{"commands in common", "getA", 4, completion{line: "getA", pos: 4, candidates: []string{"getAcl", "getAllChildrenNumber"}}, true},
		{"command prefix extended", "remo", 4, completion{line: "removewatches ", pos: 14}, true},
		{"no such command", "xyz", 3, completion{}, false},
		{"child of the root", "ls /zoo", 7, completion{line: "ls /zookeeper", pos: 13}, true},
		{"grandchild", "get /zookeeper/q", 16, completion{line: "get /zookeeper/quota", pos: 20}, true},
		{"common prefix", "ls /a", 5, completion{line: "ls /app", pos: 7}, true},
		{"ambiguous shows candidates", "ls /app", 7, completion{line: "ls /app", pos: 7, candidates: []string{"app", "apple"}}, true},
		{"all children", "ls /app/", 8, completion{line: "ls /app/locks", pos: 13}, true},
		{"after options", "create -e /app/l", 16, completion{line: "create -e /app/locks", pos: 20}, true},
		{"cursor mid-line", "ls /zoo -w", 7, completion{line: "ls /zookeeper -w", pos: 13}, true},
		{"unknown parent", "ls /nope/x", 10, completion{}, false},
		{"not a path", "ls -", 4, completion{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := complete(tc.line, tc.pos, commandNames(), list)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
