//go:build !linux

package sockio

import "syscall"

// DeferAccept does nothing where TCP_DEFER_ACCEPT is Linux's alone.
func DeferAccept(int) func(network, address string, c syscall.RawConn) error { return nil }
