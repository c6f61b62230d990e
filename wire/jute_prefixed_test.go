package wire

import "testing"

func TestDecoder_prefixed(t *testing.T) {
	d := NewDecoder([]byte{1, 2, 3, 4})
	if d.prefixed([]byte{1, 3}) || d.Offset() != 0 {
		t.Fatalf("consumed a prefix that does not match: offset %d", d.Offset())
	}
	if !d.prefixed([]byte{1, 2}) || d.Offset() != 2 {
		t.Fatalf("did not consume a matching prefix: offset %d", d.Offset())
	}
	if d.prefixed([]byte{3, 4, 5}) || d.Offset() != 2 {
		t.Fatalf("consumed past the end: offset %d", d.Offset())
	}
	if d.Int(); d.prefixed(nil) != false {
		t.Fatal("a decoder that failed consumes nothing")
	}
}
