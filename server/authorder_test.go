package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/wire"
)

func ids(specs ...string) []wire.Id {
	out := make([]wire.Id, len(specs))
	for i, s := range specs {
		scheme, id, _ := strings.Cut(s, ":")
		out[i] = wire.Id{Scheme: scheme, ID: id}
	}
	return out
}

// The expected orders were printed by Java 17 iterating a set built with
// Collections.newSetFromMap(new ConcurrentHashMap<>()) of ids with jute's
// Id.hashCode, inserted in the order of the input.
func TestJavaSetOrder(t *testing.T) {
	tests := []struct {
		name      string
		in, wants []wire.Id
	}{
		{
			"ip, digests, super",
			ids("ip:127.0.0.1", "digest:alice:X3Z0cFRuUGt1QWx0MQ==", "digest:bob:aGVsbG8=", "super:"),
			ids("digest:bob:aGVsbG8=", "digest:alice:X3Z0cFRuUGt1QWx0MQ==", "super:", "ip:127.0.0.1"),
		},
		{
			"five ids",
			ids("ip:10.1.2.3", "digest:u1:AAAA", "digest:u2:BBBB", "digest:nocolon:CCCC", "digest:u3:DDDD"),
			ids("digest:u1:AAAA", "digest:u2:BBBB", "digest:nocolon:CCCC", "ip:10.1.2.3", "digest:u3:DDDD"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wants, javaSetOrder(tc.in))
		})
	}
}
