package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkraft/zkraft/wire"
)

// This file writes what zkCli.sh writes: Stat, ACLs, events, and the
// messages of result codes, and checks paths as ZooKeeper's client does
// before sending them.

// javaDate is java.util.Date's toString layout.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"

// statText is a Stat in zkCli's layout, times in the local zone.
func statText(s *wire.Stat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cZxid = 0x%x\n", uint64(s.Czxid))
	fmt.Fprintf(&b, "ctime = %s\n", time.UnixMilli(s.Ctime).Format(javaDate))
	fmt.Fprintf(&b, "mZxid = 0x%x\n", uint64(s.Mzxid))
	fmt.Fprintf(&b, "mtime = %s\n", time.UnixMilli(s.Mtime).Format(javaDate))
	fmt.Fprintf(&b, "pZxid = 0x%x\n", uint64(s.Pzxid))
	fmt.Fprintf(&b, "cversion = %d\n", s.Cversion)
	fmt.Fprintf(&b, "dataVersion = %d\n", s.Version)
	fmt.Fprintf(&b, "aclVersion = %d\n", s.Aversion)
	fmt.Fprintf(&b, "ephemeralOwner = 0x%x\n", uint64(s.EphemeralOwner))
	fmt.Fprintf(&b, "dataLength = %d\n", s.DataLength)
	fmt.Fprintf(&b, "numChildren = %d\n", s.NumChildren)
	return b.String()
}

// permLetters are the permission bits in the order zkCli prints them.
var permLetters = []struct {
	letter byte
	bit    int32
}{{'c', wire.PermCreate}, {'d', wire.PermDelete}, {'r', wire.PermRead}, {'w', wire.PermWrite}, {'a', wire.PermAdmin}}

func permString(perms int32) string {
	var b strings.Builder
	for _, p := range permLetters {
		if perms&p.bit != 0 {
			b.WriteByte(p.letter)
		}
	}
	return b.String()
}

// aclText has each entry as 'scheme,'id on one line and ": perms" on
// the next.
func aclText(acl []wire.ACL) string {
	var b strings.Builder
	for _, a := range acl {
		fmt.Fprintf(&b, "'%s,'%s\n: %s\n", a.ID.Scheme, a.ID.ID, permString(a.Perms))
	}
	return b.String()
}

// parseACL reads "scheme:id:perms[,...]". As zkCli, it reports an entry
// it cannot read on w and leaves it out, and ignores a permission letter
// it does not know after saying so.
func parseACL(s string, w io.Writer) []wire.ACL {
	var acl []wire.ACL
	for entry := range strings.SplitSeq(s, ",") {
		first, last := strings.IndexByte(entry, ':'), strings.LastIndexByte(entry, ':')
		if first < 0 || first == last {
			fmt.Fprintf(w, "%s does not have the form scheme:id:perm\n", entry)
			continue
		}
		acl = append(acl, wire.ACL{
			ID:    wire.Id{Scheme: entry[:first], ID: entry[first+1 : last]},
			Perms: parsePerms(entry[last+1:], w),
		})
	}
	return acl
}

func parsePerms(s string, w io.Writer) int32 {
	var perms int32
	for i := 0; i < len(s); i++ {
		found := false
		for _, p := range permLetters {
			if s[i] == p.letter {
				perms |= p.bit
				found = true
			}
		}
		if !found {
			fmt.Fprintf(w, "Unknown perm type: %c\n", s[i])
		}
	}
	return perms
}

var keeperStateNames = map[int32]string{
	keeperDisconnected:  "Disconnected",
	keeperSyncConnected: "SyncConnected",
	keeperAuthFailed:    "AuthFailed",
	keeperReadOnly:      "ConnectedReadOnly",
	keeperExpired:       "Expired",
	keeperClosed:        "Closed",
}

var extraEventNames = map[wire.EventType]string{
	eventNone:                   "None",
	eventDataWatchRemoved:       "DataWatchRemoved",
	eventChildWatchRemoved:      "ChildWatchRemoved",
	eventPersistentWatchRemoved: "PersistentWatchRemoved",
}

// printEvent writes an event as zkCli's watcher prints it.
func printEvent(w io.Writer, ev event) {
	state, ok := keeperStateNames[ev.state]
	if !ok {
		state = "Unknown(" + strconv.Itoa(int(ev.state)) + ")"
	}
	typ, ok := extraEventNames[ev.typ]
	if !ok {
		typ = ev.typ.String()
	}
	path := ev.path
	if path == "" {
		path = "null"
	}
	fmt.Fprintf(w, "\nWATCHER::\n\nWatchedEvent state:%s type:%s path:%s\n", state, typ, path)
}

// codeNames are the texts ZooKeeper's client gives result codes in its
// messages ("KeeperErrorCode = NoNode for /x").
var codeNames = map[wire.Code]string{
	wire.CodeSystemError: "SystemError", wire.CodeRuntimeInconsistency: "RuntimeInconsistency",
	wire.CodeDataInconsistency: "DataInconsistency", wire.CodeConnectionLoss: "ConnectionLoss",
	wire.CodeMarshallingError: "MarshallingError", wire.CodeUnimplemented: "Unimplemented",
	wire.CodeOperationTimeout: "OperationTimeout", wire.CodeBadArguments: "BadArguments",
	wire.CodeUnknownSession: "Unknown session", wire.CodeNewConfigNoQuorum: "NewConfigNoQuorum",
	wire.CodeReconfigInProgress: "ReconfigInProgress", wire.CodeAPIError: "APIError",
	wire.CodeNoNode: "NoNode", wire.CodeNoAuth: "NoAuth", wire.CodeBadVersion: "BadVersion",
	wire.CodeNoChildrenForEphemerals: "NoChildrenForEphemerals", wire.CodeNodeExists: "NodeExists",
	wire.CodeNotEmpty: "Directory not empty", wire.CodeSessionExpired: "Session expired",
	wire.CodeInvalidCallback: "Invalid callback", wire.CodeInvalidACL: "InvalidACL",
	wire.CodeAuthFailed: "AuthFailed", wire.CodeSessionMoved: "Session moved",
	wire.CodeNotReadOnly: "Not a read-only call", wire.CodeEphemeralOnLocalSession: "Ephemeral node on local session",
	wire.CodeNoWatcher: "No such watcher", wire.CodeRequestTimeout: "Request timeout",
	wire.CodeReconfigDisabled:             "Reconfig is disabled",
	wire.CodeSessionClosedRequireSASLAuth: "Session closed because client failed to authenticate",
	wire.CodeQuotaExceeded:                "Quota has exceeded", wire.CodeThrottledOp: "Op throttled due to high load",
}

// codeError is a result code other than OK for a path.
type codeError struct {
	code wire.Code
	path string
}

// codeMessages are zkCli's own words for the common codes; it prints
// ZooKeeper's exception text for the rest.
var codeMessages = map[wire.Code]string{
	wire.CodeNoNode:                  "Node does not exist: ",
	wire.CodeNodeExists:              "Node already exists: ",
	wire.CodeBadVersion:              "version No is not valid : ",
	wire.CodeNoAuth:                  "Insufficient permission : ",
	wire.CodeNotEmpty:                "Node not empty: ",
	wire.CodeNoChildrenForEphemerals: "Ephemerals cannot have children: ",
	wire.CodeInvalidACL:              "Acl is not valid : ",
}

// Error is the message zkCli prints for the code.
func (e codeError) Error() string {
	if m, ok := codeMessages[e.code]; ok {
		return m + e.path
	}
	return keeperMessage(e.code, e.path)
}

// keeperMessage is ZooKeeper's KeeperException text.
func keeperMessage(code wire.Code, path string) string {
	name, ok := codeNames[code]
	if !ok {
		name = "Unknown error " + strconv.Itoa(int(code))
	}
	if path == "" {
		return "KeeperErrorCode = " + name
	}
	return "KeeperErrorCode = " + name + " for " + path
}

// validatePath checks a path as ZooKeeper's client does before sending it.
func validatePath(path string) error {
	switch {
	case path == "":
		return cliError("Path length must be > 0")
	case path[0] != '/':
		return cliError("Path must start with / character")
	case path == "/":
		return nil
	case path[len(path)-1] == '/':
		return cliError("Path must not end with / character")
	}
	if reason, at := badPathChar(path); reason != "" {
		return cliError(fmt.Sprintf("Invalid path string %q caused by %s @%d", path, reason, at))
	}
	return nil
}

// badPathChar finds the first thing ZooKeeper forbids in a path: empty or
// relative segments, NUL and control characters, surrogates and private use
// characters (and, as Java sees them as surrogates, runes beyond the BMP).
func badPathChar(path string) (reason string, at int) {
	var last rune = '/'
	at = 1
	for i, r := range path {
		if i == 0 {
			continue
		}
		next := byte('/')
		if j := i + utf8.RuneLen(r); j < len(path) {
			next = path[j]
		}
		switch {
		case r == 0:
			return "null character not allowed", at
		case r == '/' && last == '/':
			return "empty node name specified", at
		case r == '.' && last == '.' && path[i-2] == '/' && next == '/':
			return "relative paths not allowed", at
		case r == '.' && last == '/' && next == '/':
			return "relative paths not allowed", at
		case r > 0 && r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
			return "invalid character", at
		}
		last = r
		at++ // one UTF-16 unit: any rune that needs two was refused above
	}
	return "", 0
}

// cliError is a message zkCli prints as it is.
type cliError string

func (e cliError) Error() string { return string(e) }
