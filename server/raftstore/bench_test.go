package raftstore

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// The per-entry cost of the checksums, for an entry of a small create
// (about 120 bytes of command): sealed once where it is first stored, and
// checked at each read and before it is applied.
func BenchmarkSeal(b *testing.B) {
	data := bytes.Repeat([]byte("c"), 120)
	b.ReportAllocs()
	for b.Loop() {
		l := &raft.Log{Index: 12345, Term: 3, Type: raft.LogCommand, Data: data}
		Seal(l)
	}
}

func BenchmarkIntact(b *testing.B) {
	l := &raft.Log{Index: 12345, Term: 3, Type: raft.LogCommand, Data: bytes.Repeat([]byte("c"), 120)}
	Seal(l)
	b.ReportAllocs()
	for b.Loop() {
		if !Intact(l) {
			b.Fatal("not intact")
		}
	}
}

// BenchmarkCheckedGetLog: a read through CheckedLog from an in-memory
// store, as the leader reads each entry it replicates from its cache.
func BenchmarkCheckedGetLog(b *testing.B) {
	store := raft.NewInmemStore()
	l := &raft.Log{Index: 1, Term: 3, Type: raft.LogCommand, Data: bytes.Repeat([]byte("c"), 120)}
	c := NewCheckedLog(store, nil)
	if err := c.StoreLogs([]*raft.Log{l}); err != nil {
		b.Fatal(err)
	}
	var out raft.Log
	b.ReportAllocs()
	for b.Loop() {
		if err := c.GetLog(1, &out); err != nil {
			b.Fatal(err)
		}
	}
}
