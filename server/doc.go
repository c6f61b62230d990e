// Package server is zkraft's server: client connections speaking
// ZooKeeper's protocol, each session's request pipeline, the watch registry,
// four-letter words and sessions' liveness. The Raft node that replicates
// the znode tree, and everything else a cluster member does, is in
// server/member, behind member.Node and member.Host.
//
// A server is shaped like net/http's: New validates a Config, Start binds
// and returns once clients can connect, Shutdown and Close stop it.
//
//	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0"})
//	if err != nil { ... }
//	if err := srv.Start(); err != nil { ... }
//	defer srv.Close()
//	conn, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second)
//
// # Request flow
//
// A connection's reader goroutine decodes one frame at a time. A write is
// proposed to Raft and left in flight; a read (or any other request) waits
// until every earlier write of the connection has been applied, then runs
// against the local tree under the state machine's read lock, registering its
// watch and queuing its reply atomically. When the state machine applies a
// command it calls Applied, under its write lock and in log order, which
// queues watch notifications first and then the write's reply. One
// goroutine at a time writes a connection's queue, the whole of it, in
// order (its writer goroutine, or one that flushes a watch fan-out, or
// the reader for a ping's answer). So replies leave
// in request order, a session reads its own writes, and every client sees an
// event before any later reply that shows the change.
//
// # Operations
//
// Monitor returns mntr's figures in ZooKeeper's order, and status.go's
// accessors (Connections, SessionExpiry, Ephemerals, Digest, RaftStatus,
// LastSnapshot, Conf, Environment) the rest an operator asks for; package
// server/admin serves them over HTTP (AdminServer commands, /metrics,
// health probes). The server never imports it.
//
// # Lock order
//
// raftfsm.FSM's lock, then Server.mu, then watchRegistry.mu, then a conn's
// omu or pmu. pendingTable.mu, conn stats locks, the goroutine group's
// lock and member.Node's locks are leaves (the Node calls Host holding none of them). conn.close takes
// only the connection's own lock, so it is safe anywhere.
package server
