package servertest

import (
	"testing"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/clock"
)

// WithFakeClock gives the server, or every member of a cluster, one clock
// that stands still until the test moves it with Advance (Server.Advance,
// Cluster.Advance). What ZooKeeper times itself follows it: session
// expiry, TTL nodes and container reaping, znodes' ctime and mtime.
// Advancing past a session's timeout expires it at once: Advance returns
// once the leader has closed every session the new time makes due (its
// ephemerals deleted, its watchers told, its connection closed) and reaped
// every TTL node and empty container. Raft's timing, and the client's, stay
// real: a go-zookeeper client whose session the clock expired sees its
// connection close, reconnects, and is told StateExpired, as after a real
// expiry; its pings, every third of the timeout in real time, keep its
// session alive only as far as the clock has moved between them.
func WithFakeClock() Option {
	f := clock.NewFake(time.Now())
	return func(c *server.Config) { c.Clock = f }
}

// fakeOf returns the fake clock cfg runs on, if any.
func fakeOf(cfg server.Config) *clock.Fake {
	f, _ := cfg.Clock.(*clock.Fake)
	return f
}

// advance moves fake forward, or fails the test if it has no fake clock.
func advance(t testing.TB, fake *clock.Fake, d time.Duration) {
	t.Helper()
	if fake == nil {
		t.Fatal("servertest: Advance needs a server started WithFakeClock")
	}
	fake.Advance(d)
}
