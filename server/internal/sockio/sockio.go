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
// closing work as they do for net.Conn. Built with the race detector, the
// calls go through package syscall instead (race.go), which tells the
// detector of the bytes they read and write as the net package's do.
package sockio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Read reads from the socket fd once, without waiting: it returns
// unix.EAGAIN when there is nothing to read, and 0, nil at the end of the
// stream.
func Read(fd uintptr, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// Write writes to the socket fd once, without waiting: it returns how much
// the socket took, or unix.EAGAIN when it took nothing.
func Write(fd uintptr, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// rawIO makes the read or write system call trap on fd with p (sysIO),
// again if a signal interrupted it.
func rawIO(trap, fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := sysIO(trap, fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		}
		return n, nil
	}
}

// Conn is a net.Conn whose Read and Write use Read and Write, waiting on
// the net package's poller when the socket has nothing to read or no room.
// Its calls allocate nothing: the functions RawConn calls back are made
// once, and keep their state in the Conn, under a lock for each direction
// (a net.Conn may be read, and written, from several goroutines).
type Conn struct {
	net.Conn
	raw               syscall.RawConn
	tryRead, tryWrite func(fd uintptr) bool

	rmu  sync.Mutex // guards rbuf, rn, rerr
	rbuf []byte
	rn   int
	rerr error

	wmu  sync.Mutex // guards wbuf, wn, werr
	wbuf []byte
	wn   int
	werr error
}

// Wrap returns nc as a Conn, or nc itself if it is not a TCP connection.
func Wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{Conn: nc, raw: raw}
	c.tryRead, c.tryWrite = c.readOnce, c.writeSome
	return c
}

// SyscallConn implements syscall.Conn, for callers that read or write
// the socket themselves.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Read implements net.Conn.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf = p
	err := c.raw.Read(c.tryRead)
	n, rerr := c.rn, c.rerr
	c.rbuf, c.rn, c.rerr = nil, 0, nil
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

func (c *Conn) readOnce(fd uintptr) bool {
	c.rn, c.rerr = Read(fd, c.rbuf)
	return c.rerr != unix.EAGAIN // wait until readable, and try again
}

// Write implements net.Conn: it writes all of p, or fails.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = p
	err := c.raw.Write(c.tryWrite)
	n, werr := c.wn, c.werr
	c.wbuf, c.wn, c.werr = nil, 0, nil
	switch {
	case err != nil:
		return n, err
	case werr != nil:
		return n, os.NewSyscallError("write", werr)
	}
	return n, nil
}

func (c *Conn) writeSome(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		n, err := Write(fd, c.wbuf[c.wn:])
		switch {
		case err == unix.EAGAIN:
			return false // wait until writable, and go on
		case err != nil:
			c.werr = err
			return true
		case n == 0:
			c.werr = io.ErrShortWrite
			return true
		}
		c.wn += n
	}
	return true
}
