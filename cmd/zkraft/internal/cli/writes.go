package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/zkraft/zkraft/wire"
)

// openACL is world:anyone:cdrwa, what create gives a node without an ACL.
var openACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.Id{Scheme: "world", ID: "anyone"}}}

// maxTTL is the largest TTL a node may have (2^40-1 ms).
const maxTTL = 1<<40 - 1

// createFlags turns create's switches into a create mode, refusing the
// combinations zkCli refuses.
func createFlags(o opts) (flags int32, ttl int64, err error) {
	e, s, c, t := o.has('e'), o.has('s'), o.has('c'), o.has('t')
	switch {
	case c && (e || s):
		return 0, 0, cliError("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	case t && e:
		return 0, 0, cliError("TTLs cannot be used with Ephemeral znodes")
	case t && c:
		return 0, 0, cliError("TTLs cannot be used with Container znodes")
	}
	switch {
	case c:
		flags = wire.FlagContainer
	case t && s:
		flags = wire.FlagPersistentSequentialWithTTL
	case t:
		flags = wire.FlagPersistentWithTTL
	case e && s:
		flags = wire.FlagEphemeralSequential
	case e:
		flags = wire.FlagEphemeral
	case s:
		flags = wire.FlagPersistentSequential
	}
	if t {
		if ttl, err = strconv.ParseInt(o['t'], 10, 64); err != nil {
			return 0, 0, cliError("-t argument must be a long value")
		}
		if ttl <= 0 || ttl > maxTTL {
			return 0, 0, cliError(fmt.Sprintf("ttl must be positive and cannot be larger than: %d", int64(maxTTL)))
		}
	}
	return flags, ttl, nil
}

func (s *shell) create(o opts, args []string) error {
	flags, ttl, err := createFlags(o)
	if err != nil {
		return err
	}
	path := args[0]
	var data []byte
	if len(args) > 1 {
		data = []byte(args[1])
	}
	acl := openACL
	if len(args) > 2 {
		if acl = parseACL(args[2], s.stderr); len(acl) == 0 {
			return cliError("KeeperErrorCode = InvalidACL\nAcl is not valid : null")
		}
	}
	var created string
	switch {
	case o.has('t'):
		var resp wire.Create2Response
		err = s.do(wire.OpCreateTTL, path, &wire.CreateTTLRequest{Path: s.abs(path), Data: data, ACL: acl, Flags: flags, TTL: ttl}, &resp)
		created = resp.Path
	case o.has('c'):
		var resp wire.Create2Response
		err = s.do(wire.OpCreateContainer, path, &wire.CreateRequest{Path: s.abs(path), Data: data, ACL: acl, Flags: flags}, &resp)
		created = resp.Path
	default:
		var resp wire.CreateResponse
		err = s.do(wire.OpCreate, path, &wire.CreateRequest{Path: s.abs(path), Data: data, ACL: acl, Flags: flags}, &resp)
		created = resp.Path
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.stderr, "Created %s\n", s.c.rel(created))
	return err
}

// parseVersion reads -v, -1 (any version) when it is not given.
func parseVersion(o opts) (int32, error) {
	v, ok := o['v']
	if !ok {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, cliError(fmt.Sprintf("-v argument must be a number: %s", v))
	}
	return int32(n), nil
}

func (s *shell) set(o opts, args []string) error {
	v, err := parseVersion(o)
	if err != nil {
		return err
	}
	path := args[0]
	var resp wire.StatResponse
	if err := s.do(wire.OpSetData, path, &wire.SetDataRequest{Path: s.abs(path), Data: []byte(args[1]), Version: v}, &resp); err != nil {
		return err
	}
	if o.has('s') {
		_, err = fmt.Fprint(s.stdout, statText(&resp.Stat))
	}
	return err
}

func (s *shell) delete(o opts, args []string) error {
	v, err := parseVersion(o)
	if err != nil {
		return err
	}
	path := args[0]
	return s.do(wire.OpDelete, path, &wire.DeleteRequest{Path: s.abs(path), Version: v}, nil)
}

// deleteAll removes path and everything below it, deepest first, in
// multis of -b deletes (default 1000).
func (s *shell) deleteAll(o opts, args []string) error {
	batch := 1000
	if b, ok := o['b']; ok {
		n, err := strconv.Atoi(b)
		if err != nil || n <= 0 {
			return cliError(fmt.Sprintf("-b argument must be a positive number: %s", b))
		}
		batch = n
	}
	path := args[0]
	nodes, err := s.subtree(path)
	if err != nil {
		return err
	}
	slices.Reverse(nodes)
	for len(nodes) > 0 {
		n := min(batch, len(nodes))
		if err := s.deleteBatch(nodes[:n]); err != nil {
			return err
		}
		nodes = nodes[n:]
	}
	return nil
}

func (s *shell) deleteBatch(paths []string) error {
	req := wire.MultiRequest{Ops: make([]wire.MultiOp, len(paths))}
	for i, p := range paths {
		req.Ops[i] = wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: s.abs(p), Version: -1}}
	}
	var resp wire.MultiResponse
	err := s.do(wire.OpMulti, paths[0], &req, &resp)
	var code codeError
	if !errors.As(err, &code) {
		return err
	}
	for i, r := range resp.Results { // a failed multi's reply names the op that failed
		if r.Err != wire.CodeOK && r.Err != wire.CodeRuntimeInconsistency && i < len(paths) {
			return codeError{r.Err, paths[i]}
		}
	}
	return err
}

func (s *shell) setACL(o opts, args []string) error {
	v, err := parseVersion(o)
	if err != nil {
		return err
	}
	path := args[0]
	acl := parseACL(args[1], s.stderr)
	paths := []string{path}
	if o.has('R') {
		if paths, err = s.subtree(path); err != nil {
			return err
		}
	}
	var resp wire.StatResponse
	for _, p := range paths {
		if err := s.do(wire.OpSetACL, p, &wire.SetACLRequest{Path: s.abs(p), ACL: acl, Version: v}, &resp); err != nil {
			return err
		}
	}
	if o.has('s') && !o.has('R') {
		_, err = fmt.Fprint(s.stdout, statText(&resp.Stat))
	}
	return err
}

var addWatchModes = map[string]struct {
	mode int32
	kind watchKind
}{
	"PERSISTENT":           {wire.AddWatchModePersistent, watchPersistent},
	"PERSISTENT_RECURSIVE": {wire.AddWatchModePersistentRecursive, watchRecursive},
}

func (s *shell) addWatch(o opts, args []string) error {
	mode := addWatchModes["PERSISTENT_RECURSIVE"]
	if m, ok := o['m']; ok {
		if mode, ok = addWatchModes[m]; !ok {
			return errUsage
		}
	}
	path := args[0]
	var resp wire.ErrorResponse
	if err := s.do(wire.OpAddWatch, path, &wire.AddWatchRequest{Path: s.abs(path), Mode: mode.mode}, &resp); err != nil {
		return err
	}
	s.addWatchKind(path, mode.kind)
	return nil
}

func (s *shell) addAuth(_ opts, args []string) error {
	c, err := s.conn()
	if err != nil {
		return err
	}
	var auth []byte
	if len(args) == 2 {
		auth = []byte(args[1])
	}
	code, err := c.addAuth(args[0], auth)
	switch {
	case errors.Is(err, errNotConnected):
		return err
	case err != nil:
		return codeError{wire.CodeConnectionLoss, ""}
	case code == wire.CodeAuthFailed:
		return nil // reported as an AuthFailed event, as zkCli does
	case code != wire.CodeOK:
		return codeError{code, ""}
	}
	return nil
}
