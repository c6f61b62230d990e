package server

import (
	"context"
	"log/slog"
	"time"
)

// The server's notable events, one log line each, with the message as the
// event's name and stable keys (the README's "Logs" table). A connection's
// lines carry its client's address as "peer".
//
//	session created    session, timeout_ms, read_only (Debug)
//	session closed     session (the client closed it; Debug)
//	session expired    session, timeout_ms (on the leader)
//	request rejected   reason, and the keys its reason names
//
// A session's creation and its close by its client are logged at Debug,
// as ZooKeeper 3.8 logs "Established session" and nothing when a client
// closes its session: formatted at Info, the two lines cost about 8% of
// the server's CPU in a storm of connects. Its expiry stays at Info, as
// ZooKeeper's "Expiring session" does.
//
// A refusal that closes or refuses a connection is logged at Warn or Info;
// one answered with an error code on a connection that stays (bad_request,
// not_read_only) only at Debug, since nothing logs per request at Info.

// Reasons a "request rejected" line gives.
const (
	rejectMaxClientCnxns   = "max_client_cnxns"            // max: the connection is one too many from its address
	rejectFrameTooLarge    = "frame_too_large"             // len, max: over jute.maxbuffer
	rejectBadFrame         = "bad_frame"                   // len: a length or frame that cannot be a request
	rejectBadConnect       = "bad_connect"                 // len, err: the connect request does not decode
	rejectBadRequest       = "bad_request"                 // op, err: answered MARSHALLINGERROR, the connection stays
	rejectUnsupportedOp    = "unsupported_op"              // op: answered UNIMPLEMENTED
	rejectAuthFailed       = "auth_failed"                 // scheme
	rejectSASL             = "sasl_null_token"             //
	rejectNotServing       = "not_serving"                 // this member knows no leader
	rejectZxidAhead        = "client_zxid_ahead"           // client_zxid, server_zxid: the client saw more than this member can catch up to
	rejectSessionExpired   = "session_expired"             // session: resumed after its expiry, or unknown, or a wrong password
	rejectGlobalInReadOnly = "global_session_in_read_only" // session: a cluster session cannot resume in read-only mode
	rejectNotReadOnly      = "not_read_only"               // op: a write or sync in read-only mode, answered NOTREADONLY
	rejectReplyTooLarge    = "reply_too_large"             // ops, max_queued_bytes: a multiRead whose reply would not fit
	rejectFourLetterWord   = "4lw_not_allowed"             // word: not in 4lw.commands.whitelist
)

// rejected logs a "request rejected" line for the connection.
func (c *conn) rejected(level slog.Level, reason string, attrs ...slog.Attr) {
	logRejected(c.log, level, reason, attrs)
}

func logRejected(l *slog.Logger, level slog.Level, reason string, attrs []slog.Attr) {
	if !l.Enabled(context.Background(), level) {
		return
	}
	l.LogAttrs(context.Background(), level, "request rejected", append([]slog.Attr{slog.String("reason", reason)}, attrs...)...)
}

// logSession logs a session event of the connection, at Debug.
func (c *conn) logSession(msg string, id int64, attrs ...slog.Attr) {
	if !c.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	c.log.LogAttrs(context.Background(), slog.LevelDebug, msg, append([]slog.Attr{slog.String("session", hexID(id))}, attrs...)...)
}

// timeoutAttr is a session timeout as the key timeout_ms.
func timeoutAttr(d time.Duration) slog.Attr { return slog.Int64("timeout_ms", d.Milliseconds()) }

// expiredLines returns the "session expired" lines of the sessions ids,
// which the leader is about to expire, for logExpired; nil if Info is not
// logged. Taken before the expiries are proposed: the sessions' timeouts
// are gone once they are applied.
func (s *Server) expiredLines(ids []int64) []expiredLine {
	if len(ids) == 0 || !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return nil
	}
	lines := make([]expiredLine, 0, len(ids))
	for _, id := range ids {
		// A session its client closed meanwhile is not expired: no line.
		if sess, ok := s.fsm.Session(id); ok {
			lines = append(lines, expiredLine{id: id, timeout: time.Duration(sess.Timeout) * time.Millisecond})
		}
	}
	return lines
}

type expiredLine struct {
	id      int64
	timeout time.Duration
}

// logExpired logs "session expired" lines on the leader that expires
// them.
func (s *Server) logExpired(lines []expiredLine) {
	for _, l := range lines {
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "session expired", slog.String("session", hexID(l.id)), timeoutAttr(l.timeout))
	}
}
