package integration

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-zookeeper's Conn.Close does not wait for its goroutines.
		// Its loop can also block for good sending a second error to a
		// request whose first no one read: Close gives up waiting for its
		// close request after a second, and a write that failed then
		// answers it before flushRequests does again.
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).sendSetWatches"),
		goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).resendZkAuth"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("time.Sleep"),
	)
}
