package session

import (
	"crypto/subtle"
	"io"
	"math"
	"time"
)

// PasswordLen is the length of a session password: clients (the C client in
// particular) expect exactly 16 bytes.
const PasswordLen = 16

// NewPassword reads a fresh random session password from r (crypto/rand.Reader
// in a server). Passwords are opaque to clients; a server replicates each
// session's password with the session, so every member can check it.
func NewPassword(r io.Reader) ([]byte, error) {
	p := make([]byte, PasswordLen)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	return p, nil
}

// PasswordMatches reports, in constant time, whether got is the password want.
func PasswordMatches(want, got []byte) bool {
	return len(want) == PasswordLen && subtle.ConstantTimeCompare(want, got) == 1
}

// Negotiate clamps a requested session timeout into [min, max], as ZooKeeper
// does with minSessionTimeout and maxSessionTimeout.
func Negotiate(requested, minTimeout, maxTimeout time.Duration) time.Duration {
	return min(max(requested, minTimeout), maxTimeout)
}

// IDs hands out session ids as ZooKeeper does: the server id in the top byte,
// then the creation time in milliseconds, then a counter. Ids are never 0,
// never math.MinInt64 (which marks containers in ZooKeeper's ephemeral
// owners) and, for server ids up to 254, never have a top byte of 0xff (which
// marks TTL nodes).
type IDs struct {
	next int64
}

// NewIDs returns the generator of a server with the given id (1..254),
// seeded from now.
func NewIDs(serverID int64, now time.Time) *IDs {
	ms := uint64(now.UnixMilli())
	next := int64((ms<<24)>>8) | serverID<<56
	return &IDs{next: next}
}

// Next returns a fresh session id.
func (g *IDs) Next() int64 {
	id := g.next
	g.next++
	if id == 0 || id == math.MinInt64 {
		return g.Next()
	}
	return id
}
