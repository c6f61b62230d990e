package cli

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkraft/zkraft/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is one buffer for stdout and stderr, so a test sees the lines
// in the order a user would.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newServer starts an in-process zkraft and returns its address.
func newServer(t testing.TB) string {
	t.Helper()
	return servertest.NewServer(t).Addr().String()
}

// connected is what every session prints first.
const connected = "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n"

// runScript pipes script into the shell, one command a line, and returns
// what it printed after connecting, stdout and stderr together, and its
// exit status.
func runScript(t testing.TB, server, script string, args ...string) (string, int) {
	t.Helper()
	var out syncBuffer
	status := Run(append([]string{"-server", server, "-history", ""}, args...), strings.NewReader(script), &out, &out)
	head := "Connecting to " + server + "\n" + connected
	got := out.String()
	require.True(t, strings.HasPrefix(got, head), "output starts with the connection:\n%s", got)
	return got[len(head):], status
}

var (
	zxidLine  = regexp.MustCompile(`(?m)^([cmp]Zxid) = 0x[0-9a-f]+$`)
	timeLine  = regexp.MustCompile(`(?m)^([cm]time) = .*$`)
	ownerLine = regexp.MustCompile(`(?m)^ephemeralOwner = 0x[1-9a-f][0-9a-f]*$`)
)

// mask hides what differs from run to run in a Stat: zxids, times and
// session ids.
func mask(s string) string {
	s = zxidLine.ReplaceAllString(s, "$1 = 0x?")
	s = timeLine.ReplaceAllString(s, "$1 = ?")
	return ownerLine.ReplaceAllString(s, "ephemeralOwner = 0x<session>")
}

// stat is a masked Stat with the given versions and sizes.
func stat(cversion, version, aversion int, owner bool, dataLength, numChildren int) string {
	o := "0x0"
	if owner {
		o = "0x<session>"
	}
	return "cZxid = 0x?\nctime = ?\nmZxid = 0x?\nmtime = ?\npZxid = 0x?\n" +
		"cversion = " + strconv.Itoa(cversion) + "\ndataVersion = " + strconv.Itoa(version) + "\naclVersion = " + strconv.Itoa(aversion) +
		"\nephemeralOwner = " + o + "\ndataLength = " + strconv.Itoa(dataLength) + "\nnumChildren = " + strconv.Itoa(numChildren) + "\n"
}

func watched(typ, path string) string {
	return "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:" + typ + " path:" + path + "\n"
}

func TestRun_Commands(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string
		status int
	}{
		{"ls root", "ls /", "[zookeeper]\n", 0},
		{"ls usage", "ls", "ls [-s] [-w] [-R] path\n", 1},
		{"ls missing", "ls /x", "Node does not exist: /x\n", 1},
		{"ls sorted with stat", "create /b\ncreate /a\nls -s /",
			"Created /b\nCreated /a\n[a, b, zookeeper]\n" + stat(1, 0, 0, false, 0, 3), 0},
		{"ls recursive", "create /a\ncreate /a/b\nls -R /a", "Created /a\nCreated /a/b\n/a\n/a/b\n", 0},
		{"ls deprecated watch", "ls / 1\ncreate /a", "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.\n[zookeeper]\n" +
			watched("NodeChildrenChanged", "/") + "Created /a\n", 0},
		{"create and get", "create /a hello\nget /a", "Created /a\nhello\n", 0},
		{"create quoted data", `create /a "hello world"` + "\nget /a", "Created /a\nhello world\n", 0},
		{"get without data", "create /a\nget /a", "Created /a\nnull\n", 0},
		{"get stat", "create /a hi\nget -s /a", "Created /a\nhi\n" + stat(0, 0, 0, false, 2, 0), 0},
		{"create exists", "create /a\ncreate /a", "Created /a\nNode already exists: /a\n", 1},
		{"create without parent", "create /a/b", "Node does not exist: /a/b\n", 1},
		{"create sequential and ephemeral", "create /a\ncreate -s /a/s- x\ncreate -e /a/e\ncreate -s -e /a/es-\nls /a\ngetEphemerals /a",
			"Created /a\nCreated /a/s-0000000000\nCreated /a/e\nCreated /a/es-0000000002\n[e, es-0000000002, s-0000000000]\n[/a/es-0000000002, /a/e]\n", 0},
		{"ephemeral has no children", "create -e /e\ncreate /e/c", "Created /e\nEphemerals cannot have children: /e/c\n", 1},
		{"ephemeral stat", "create -e /e\nstat /e", "Created /e\n" + stat(0, 0, 0, true, 0, 0), 0},
		{"create container and ttl", "create -c /c\ncreate -t 60000 /t x\nstat /t", "Created /c\nCreated /t\n" + stat(0, 0, 0, false, 1, 0), 0},
		{"create container ephemeral", "create -c -e /c", "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.\n", 1},
		{"create ttl ephemeral", "create -t 10 -e /c", "TTLs cannot be used with Ephemeral znodes\n", 1},
		{"create ttl container", "create -t 10 -c /c", "TTLs cannot be used with Container znodes\n", 1},
		{"create ttl not a number", "create -t x /c", "-t argument must be a long value\n", 1},
		{"create ttl zero", "create -t 0 /c", "ttl must be positive and cannot be larger than: 1099511627775\n", 1},
		{"create ttl without value", "create /c -t", "Missing argument for option: t\n", 1},
		{"create with acl", "create /a x world:anyone:r\ngetAcl /a\nset /a y", "Created /a\n'world,'anyone\n: r\nInsufficient permission : /a\n", 1},
		{"create bad acl", "create /a x nonsense", "nonsense does not have the form scheme:id:perm\nKeeperErrorCode = InvalidACL\nAcl is not valid : null\n", 1},
		{"create unknown perm", "create /a x world:anyone:rq\ngetAcl /a", "Unknown perm type: q\nCreated /a\n'world,'anyone\n: r\n", 0},
		{"set", "create /a x\nset /a yy\nget /a", "Created /a\nyy\n", 0},
		{"set stat and version", "create /a x\nset -s -v 0 /a yy\nset -v 0 /a z", "Created /a\n" + stat(0, 1, 0, false, 2, 0) + "version No is not valid : /a\n", 1},
		{"set usage", "set /a", "set [-s] [-v version] path data\n", 1},
		{"set missing", "set /a x", "Node does not exist: /a\n", 1},
		{"delete", "create /a\ndelete /a\nls /", "Created /a\n[zookeeper]\n", 0},
		{"delete version", "create /a\ndelete -v 3 /a", "Created /a\nversion No is not valid : /a\n", 1},
		{"delete version not a number", "delete -v x /a", "-v argument must be a number: x\n", 1},
		{"delete not empty", "create /a\ncreate /a/b\ndelete /a", "Created /a\nCreated /a/b\nNode not empty: /a\n", 1},
		{"deleteall", "create /a\ncreate /a/b\ncreate /a/b/c\ncreate /a/d\ndeleteall /a -b 2\nls /", "Created /a\nCreated /a/b\nCreated /a/b/c\nCreated /a/d\n[zookeeper]\n", 0},
		{"deleteall missing", "deleteall /a", "Node does not exist: /a\n", 1},
		{"stat missing", "stat /x", "Node does not exist: /x\n", 1},
		{"getAcl default", "getAcl /", "'world,'anyone\n: cdrwa\n", 0},
		{"setAcl with stat", "create /a\nsetAcl -s /a world:anyone:cdr\ngetAcl /a", "Created /a\n" + stat(0, 0, 1, false, 0, 0) + "'world,'anyone\n: cdr\n", 0},
		{"setAcl recursive", "create /a\ncreate /a/b\nsetAcl -R /a world:anyone:r\ngetAcl /a/b", "Created /a\nCreated /a/b\n'world,'anyone\n: r\n", 0},
		{"setAcl version", "create /a\nsetAcl -v 4 /a world:anyone:r", "Created /a\nversion No is not valid : /a\n", 1},
		{"digest auth", "addauth digest u:p\ncreate /a x auth::cdrwa\ngetAcl /a\nwhoami",
			"Created /a\n'digest,'u:Jq7wMyA/w2Vd5WIDAKdu4OIIFEQ=\n: cdrwa\nAuth scheme: User\nip: 127.0.0.1\ndigest: u\n", 0},
		{"addauth usage", "addauth", "addauth scheme auth\n", 1},
		{"whoami", "whoami", "Auth scheme: User\nip: 127.0.0.1\n", 0},
		{"getAllChildrenNumber", "create /a\ncreate /a/b\ncreate /a/b/c\ngetAllChildrenNumber /a", "Created /a\nCreated /a/b\nCreated /a/b/c\n2\n", 0},
		{"getEphemerals none", "getEphemerals", "[]\n", 0},
		{"sync", "sync /", "Sync is OK\n", 0},
		{"path relative", "ls a", "Path must start with / character\n", 1},
		{"path trailing slash", "get /a/", "Path must not end with / character\n", 1},
		{"path with dots", "ls /a/../b", "Invalid path string \"/a/../b\" caused by relative paths not allowed @4\n", 1},
		{"path empty segment", "ls /a//b", "Invalid path string \"/a//b\" caused by empty node name specified @3\n", 1},
		{"bundled switches", "create -se /e-\nls -sw /\ncreate /x", "Created /e-0000000000\n[e-0000000000, zookeeper]\n" +
			stat(0, 0, 0, false, 0, 2) + watched("NodeChildrenChanged", "/") + "Created /x\n", 0},
		{"option value attached", "create /a\nset -v0 /a x\nset -v0 /a y", "Created /a\nversion No is not valid : /a\n", 1},
		{"bundle with a value option", "ls -sv /", "Unrecognized option: -sv\n", 1},
		{"unknown option", "removewatches /a -x", "Unrecognized option: -x\n", 1},
		{"printwatches", "printwatches\nprintwatches off\nprintwatches\nls -w /\ncreate /a", "printwatches is on\nprintwatches is off\n[zookeeper]\nCreated /a\n", 0},
		{"history and redo", "ls /\ncreate /a\nredo 0\nhistory\nredo 9", "[zookeeper]\nCreated /a\n[a, zookeeper]\n0 - ls /\n1 - create /a\n2 - ls /\n3 - history\nCommand index out of range\n", 1},
		{"close and connect", "close\nls /\nclose\nconnect\nls /", "\nWATCHER::\n\nWatchedEvent state:Closed type:None path:null\nNot connected\nNot connected\n" + connected + "[zookeeper]\n", 0},
		{"failed auth ends the session", "addauth nosuch x\nls /\nclose\nls /",
			"\nWATCHER::\n\nWatchedEvent state:AuthFailed type:None path:null\nNot connected\nNot connected\nNot connected\n", 0},
		{"quit keeps status", "ls /x\nquit\nls /", "Node does not exist: /x\n\nWATCHER::\n\nWatchedEvent state:Closed type:None path:null\n", 1},
		{"help", "help", usageText, 0},
		{"unknown command", "bogus", usageText + "Command not found: Command not found bogus\n", 127},
		{"version", "version", "ZooKeeper CLI version: 3.8.0-zkraft-0.1.0 (zkraft cli)\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, status := runScript(t, newServer(t), tc.script)
			assert.Equal(t, tc.want, mask(got))
			assert.Equal(t, tc.status, status)
		})
	}
}

var usageText = func() string {
	var b strings.Builder
	(&shell{stderr: &b}).usage()
	return b.String()
}()

func TestRun_Watches(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"get -w fires on set", "create /a x\nget -w /a\nset /a y\nset /a z",
			"Created /a\nx\n" + watched("NodeDataChanged", "/a")},
		{"stat -w on a missing node fires on create", "stat -w /a\ncreate /a",
			"Node does not exist: /a\n" + watched("NodeCreated", "/a") + "Created /a\n"},
		{"ls -w fires on a child", "create /a\nls -w /a\ncreate /a/b\ncreate /a/c",
			"Created /a\n[]\n" + watched("NodeChildrenChanged", "/a") + "Created /a/b\nCreated /a/c\n"},
		{"addWatch is recursive by default", "addWatch /a\ncreate /a\ncreate /a/b\nset /a/b x",
			watched("NodeCreated", "/a") + "Created /a\n" + watched("NodeCreated", "/a/b") + "Created /a/b\n" + watched("NodeDataChanged", "/a/b")},
		{"addWatch persistent", "create /a\naddWatch -m PERSISTENT /a\ncreate /a/b\nset /a x\nset /a y",
			"Created /a\n" + watched("NodeChildrenChanged", "/a") + "Created /a/b\n" + watched("NodeDataChanged", "/a") + watched("NodeDataChanged", "/a")},
		{"addWatch bad mode", "addWatch -m ONCE /a",
			"addWatch [-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE\n"},
		{"removewatches persistent", "addWatch /a\nremovewatches /a\ncreate /a",
			watched("PersistentWatchRemoved", "/a") + "Created /a\n"},
		{"removewatches data only", "create /a\nget -w /a\nls -w /a\nremovewatches /a -d\nset /a x\ncreate /a/b",
			"Created /a\nnull\n[]\n" + watched("DataWatchRemoved", "/a") + watched("NodeChildrenChanged", "/a") + "Created /a/b\n"},
		{"removewatches without a watch", "removewatches /a", "KeeperErrorCode = No such watcher for /a\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := runScript(t, newServer(t), tc.script)
			assert.Equal(t, tc.want, got)
		})
	}
}
