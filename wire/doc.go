// Package wire is ZooKeeper's jute encoding as spoken on a client connection:
// frames, every request and response record, error codes, opcodes, event types
// and states.
//
// Every record has Append(dst []byte) []byte, which appends its encoding, and
// Decode(src []byte) (n int, err error), which reads it back and reports how
// many bytes it used. Decoding is bounds-checked and never trusts a length
// prefix: a buffer, string or vector longer than what is left of the input is
// ErrShortBuffer before anything is allocated, so a frame bounded by
// jute.maxbuffer bounds every allocation made while decoding it.
//
// The package knows nothing of sockets, the znode tree or Raft. ZooKeeper
// result codes are data (Code), not Go errors; a Go error from this package
// means the peer sent bytes that are not a valid record.
package wire
