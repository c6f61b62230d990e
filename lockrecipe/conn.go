package lockrecipe

import "github.com/go-zookeeper/zk"

// Conn is what the recipes ask of a ZooKeeper client: go-zookeeper's
// *zk.Conn has it, and so has anything in front of one that keeps its
// methods, such as servertest/history's recording *Conn.
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	// State tells a closed client (StateDisconnected for good) from one
	// that reconnects.
	State() zk.State
	// SessionID tells a loss to an ended session (go-zookeeper opens a
	// new one) from a node deleted by another client.
	SessionID() int64
}

var _ Conn = (*zk.Conn)(nil)
