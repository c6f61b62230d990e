// Package sockio reads and writes non-blocking sockets with raw system
// calls, which the Go runtime does not treat as system calls.
//
// Every read and write through the net package enters and leaves a system
// call in the runtime's sense: the goroutine's P (its right to run Go code)
// is marked as in a system call, and the runtime's monitor thread, finding
// one there on two of its checks in a row, takes the P away and hands it to
// another thread. On a socket set non-blocking, as the net package sets
// every socket, a read or a write never waits: it copies what it can and
// returns. But on a busy machine a thread in such a call is often
// descheduled by the kernel long enough for the monitor to see it twice,
// and the monitor, as long as it keeps finding Ps to take, checks every
// 20 µs. A perf profile of three members on two cores under setData put a
// tenth of the leader's CPU and an eighth of each follower's in that
// monitor thread, most of it in its sleeps and wake-ups, and more in the
// hand-offs of Ps between threads. The same members built with the
// standard library's read and write made raw (an experiment) made 73-78k
// setData/s against 62-67k, three runs each, alternating; with this
// package on the members' and the clients' sockets, 71-76k.
//
// A raw call keeps the P for its length, as any Go code keeps it while it
// runs: the P is not free for another goroutine during the copy, which on
// a non-blocking socket is all the call does. The net package's poller
// still does all waiting (RawConn's Read and Write), so deadlines and
// closing work as they do for net.Conn.
package sockio

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads from the socket fd once, without waiting: it returns
// unix.EAGAIN when there is nothing to read, and 0, nil at the end of the
// stream.
func Read(fd uintptr, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// Write writes to the socket fd once, without waiting: it returns how much
// the socket took, or unix.EAGAIN when it took nothing.
func Write(fd uintptr, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// rawIO makes the read or write system call trap on fd with p, again if a
// signal interrupted it.
func rawIO(trap, fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}

// Conn is a net.Conn whose Read and Write use Read and Write, waiting on
// the net package's poller when the socket has nothing to read or no room.
type Conn struct {
	net.Conn
	raw syscall.RawConn
}

// Wrap returns nc as a Conn, or nc itself if it has no file descriptor to
// read and write directly.
func Wrap(nc net.Conn) net.Conn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	return &Conn{Conn: nc, raw: raw}
}

// SyscallConn implements syscall.Conn, for callers that read or write
// the socket themselves.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Read implements net.Conn.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, rerr = Read(fd, p)
		return rerr != unix.EAGAIN // wait until readable, and try again
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, os.NewSyscallError("read", rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write implements net.Conn: it writes all of p, or fails.
func (c *Conn) Write(p []byte) (int, error) {
	written := 0
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for written < len(p) {
			n, err := Write(fd, p[written:])
			if err == unix.EAGAIN {
				return false // wait until writable, and go on
			}
			if err != nil {
				werr = err
				return true
			}
			written += n
		}
		return true
	})
	switch {
	case err != nil:
		return written, err
	case werr != nil:
		return written, os.NewSyscallError("write", werr)
	}
	return written, nil
}
