package lockrecipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// transient reports whether a go-zookeeper error leaves the session alive
// and the request worth retrying: the connection was lost while the request
// was in flight (its outcome is unknown), no server could be reached, or
// the socket failed as go-zookeeper wrote the request (it then returns the
// raw network error). zk.ErrConnectionClosed is also what a closed
// *zk.Conn returns at once; see closeDetector.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET)
}

// sessionEnded reports whether err says the session is over, taking its
// ephemeral nodes with it.
func sessionEnded(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

// closeDetector tells a closed *zk.Conn from a lost connection. Both make
// requests fail with zk.ErrConnectionClosed; but a closed client stays in
// StateDisconnected for good, while a reconnecting one leaves it at once
// (for StateConnecting). So a request that keeps failing so across pauses,
// with the client disconnected each time, was sent on a closed client: its
// session is over, and retrying would spin until a deadline.
type closeDetector struct {
	conn Conn
	seen int // consecutive failures seen while disconnected
}

// closed records one failure (err may be nil: a success) and reports
// whether the client is closed.
func (d *closeDetector) closed(err error) bool {
	if errors.Is(err, zk.ErrConnectionClosed) && d.conn.State() == zk.StateDisconnected {
		d.seen++
	} else {
		d.seen = 0
	}
	return d.seen >= 3
}

// lostError wraps the cause of a loss so that errors.Is finds both ErrLost
// and the cause.
func lostError(what string, cause error) error {
	if cause == nil {
		return fmt.Errorf("%s: %w", what, ErrLost)
	}
	return fmt.Errorf("%s: %w: %w", what, ErrLost, cause)
}

// retryable reports whether a failed request may be sent again: the
// connection failed, or the session expired (go-zookeeper then opens a new
// one).
func retryable(err error) bool {
	return transient(err) || errors.Is(err, zk.ErrSessionExpired)
}

// backoff waits before retry number attempt (0, 1, ...): not at all for the
// first, then 10ms doubling to 500ms. It returns an error when ctx ends or
// the deadline passes (wrapping cause, the error that made the caller
// retry), and returns early with nil when abort is closed.
func backoff(ctx context.Context, deadline time.Time, attempt int, abort <-chan struct{}, cause error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	left := time.Until(deadline)
	if left <= 0 {
		return fmt.Errorf("still failing after retries: %w", cause)
	}
	if attempt == 0 {
		return nil
	}
	t := time.NewTimer(min(10*time.Millisecond<<min(attempt-1, 6), 500*time.Millisecond, left))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-abort:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noDeadline is a deadline for loops that only the caller's context or an
// abort channel ends.
func noDeadline() time.Time { return time.Now().Add(24 * time.Hour) }
