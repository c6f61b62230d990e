// Package raftfsm is zkraft's replicated state machine: the format of the
// commands in the Raft log, and a hashicorp/raft FSM that applies them, in
// log order and deterministically, to a znode tree and a session table.
//
// Every decision that makes a write succeed or fail (existence, versions,
// ACLs with the caller's identities carried in the command, sessions) is made
// inside Apply from replicated state and the command alone: no clock (the
// proposer stamps its time into the command), no randomness, no map order.
// The zxid of a change is the Raft log index of its command.
//
// The FSM reports every applied command, with its result and the watch
// triggers it fired, to an Observer, synchronously and under its lock: that is
// how a server delivers watch events before any later reply, and answers a
// write on the member that received it.
//
// It knows nothing of client connections.
package raftfsm
