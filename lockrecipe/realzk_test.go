//go:build realzk

package lockrecipe_test

// The recipe against a real Apache ZooKeeper 3.8, with the same checks as
// against zkraft. Each run works under its own paths (uniquePath), so a
// shared reference server does not matter:
//
//	/work/shared/tools/realzk start /tmp/rz/ref 12181
//	ZKRAFT_REALZK=127.0.0.1:12181 go test -tags realzk -race -count=1 -run Realzk -v ./lockrecipe

import (
	"os"
	"testing"
)

// realzk returns the address of the reference server, or skips the test.
func realzk(t *testing.T) string {
	addr := os.Getenv("ZKRAFT_REALZK")
	if addr == "" {
		t.Skip("set ZKRAFT_REALZK to the address of a real ZooKeeper 3.8, e.g. 127.0.0.1:12181")
	}
	return addr
}

func TestRealzk_MutualExclusion(t *testing.T) {
	checkMutualExclusion(t, realzk(t), 20, 50)
}

func TestRealzk_OneNotificationPerRelease(t *testing.T) {
	checkOneNotificationPerRelease(t, realzk(t))
}

func TestRealzk_ConnectionLossDuringCreate(t *testing.T) {
	checkConnectionLossDuringCreate(t, realzk(t))
}
