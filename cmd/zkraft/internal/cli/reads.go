package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkraft/zkraft/wire"
)

// configNode is where an ensemble keeps its dynamic configuration.
const configNode = "/zookeeper/config"

// conn is the session's client, or errNotConnected after close.
func (s *shell) conn() (*client, error) {
	if s.c == nil {
		return nil, errNotConnected
	}
	return s.c, nil
}

// abs is path under the session's chroot.
func (s *shell) abs(path string) string {
	if s.c == nil {
		return path
	}
	return s.c.abs(path)
}

// do sends one request about path and turns what went wrong into the
// error zkCli prints.
func (s *shell) do(op wire.Op, path string, req, resp wire.Record) error {
	c, err := s.conn()
	if err != nil {
		return err
	}
	code, err := c.call(op, req, resp)
	switch {
	case errors.Is(err, errNotConnected):
		return err
	case errors.Is(err, errSessionExpired):
		return codeError{wire.CodeSessionExpired, path}
	case err != nil:
		return codeError{wire.CodeConnectionLoss, path}
	case code != wire.CodeOK:
		return codeError{code, path}
	}
	return nil
}

// deprecatedWatch handles zkCli's old form "cmd path watch": it warns, and
// the second word asks for a watch.
func (s *shell) deprecatedWatch(o opts, args []string, cmd, newForm string) {
	if len(args) == 2 {
		fmt.Fprintf(s.stderr, "'%s path [watch]' has been deprecated. Please use '%s' instead.\n", cmd, newForm)
		o['w'] = ""
	}
}

func (s *shell) ls(o opts, args []string) error {
	s.deprecatedWatch(o, args, "ls", "ls [-w] path")
	path := args[0]
	if o.has('R') {
		return s.lsRecursive(path)
	}
	var resp wire.GetChildren2Response
	if err := s.do(wire.OpGetChildren2, path, &wire.PathWatchRequest{Path: s.abs(path), Watch: o.has('w')}, &resp); err != nil {
		return err
	}
	if o.has('w') {
		s.addWatchKind(path, watchChild)
	}
	children := slices.Sorted(slices.Values(resp.Children))
	out := "[" + strings.Join(children, ", ") + "]\n"
	if o.has('s') {
		out += statText(&resp.Stat)
	}
	_, err := fmt.Fprint(s.stdout, out)
	return err
}

// subtree lists path and every node below it, breadth first, each node's
// children sorted, as zkCli's ls -R prints them.
func (s *shell) subtree(path string) ([]string, error) {
	nodes := []string{path}
	for i := 0; i < len(nodes); i++ {
		var resp wire.GetChildrenResponse
		if err := s.do(wire.OpGetChildren, nodes[i], &wire.PathWatchRequest{Path: s.abs(nodes[i])}, &resp); err != nil {
			if i > 0 && errors.As(err, new(codeError)) && err.(codeError).code == wire.CodeNoNode {
				continue // gone since its parent was listed
			}
			return nil, err
		}
		for _, child := range slices.Sorted(slices.Values(resp.Children)) {
			nodes = append(nodes, join(nodes[i], child))
		}
	}
	return nodes, nil
}

func join(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

func (s *shell) lsRecursive(path string) error {
	nodes, err := s.subtree(path)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(s.stdout, strings.Join(nodes, "\n")+"\n")
	return err
}

func (s *shell) get(o opts, args []string) error {
	s.deprecatedWatch(o, args, "get", "get [-s] [-w] path")
	path := args[0]
	var resp wire.GetDataResponse
	if err := s.do(wire.OpGetData, path, &wire.PathWatchRequest{Path: s.abs(path), Watch: o.has('w')}, &resp); err != nil {
		return err
	}
	if o.has('w') {
		s.addWatchKind(path, watchData)
	}
	out := dataText(resp.Data) + "\n"
	if o.has('s') {
		out += statText(&resp.Stat)
	}
	_, err := fmt.Fprint(s.stdout, out)
	return err
}

// dataText is data as zkCli prints it: UTF-8 text, "null" for none.
func dataText(data []byte) string {
	if data == nil {
		return "null"
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

func (s *shell) stat(o opts, args []string) error {
	s.deprecatedWatch(o, args, "stat", "stat [-w] path")
	path := args[0]
	var resp wire.StatResponse
	err := s.do(wire.OpExists, path, &wire.PathWatchRequest{Path: s.abs(path), Watch: o.has('w')}, &resp)
	switch {
	case !o.has('w'):
	case err == nil:
		s.addWatchKind(path, watchData)
	case errors.As(err, new(codeError)) && err.(codeError).code == wire.CodeNoNode:
		s.addWatchKind(path, watchExist)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(s.stdout, statText(&resp.Stat))
	return err
}

func (s *shell) getACL(o opts, args []string) error {
	path := args[0]
	var resp wire.GetACLResponse
	if err := s.do(wire.OpGetACL, path, &wire.PathRequest{Path: s.abs(path)}, &resp); err != nil {
		return err
	}
	out := aclText(resp.ACL)
	if o.has('s') {
		out += statText(&resp.Stat)
	}
	_, err := fmt.Fprint(s.stdout, out)
	return err
}

func (s *shell) ephemerals(_ opts, args []string) error {
	path := "/"
	if len(args) == 1 {
		path = args[0]
	}
	var resp wire.GetChildrenResponse
	if err := s.do(wire.OpGetEphemerals, path, &wire.PathRequest{Path: s.abs(path)}, &resp); err != nil {
		return err
	}
	paths := make([]string, len(resp.Children))
	for i, p := range resp.Children {
		paths[i] = s.c.rel(p)
	}
	_, err := fmt.Fprintf(s.stdout, "[%s]\n", strings.Join(paths, ", "))
	return err
}

func (s *shell) allChildrenNumber(_ opts, args []string) error {
	path := args[0]
	var resp wire.GetAllChildrenNumberResponse
	if err := s.do(wire.OpGetAllChildrenNumber, path, &wire.PathRequest{Path: s.abs(path)}, &resp); err != nil {
		return err
	}
	_, err := fmt.Fprintln(s.stdout, resp.TotalNumber)
	return err
}

// config prints the ensemble's configuration, which lives outside any
// chroot: as it is, or with -c as a client's connect string.
func (s *shell) config(o opts, _ []string) error {
	var resp wire.GetDataResponse
	if err := s.do(wire.OpGetData, configNode, &wire.PathWatchRequest{Path: configNode, Watch: o.has('w')}, &resp); err != nil {
		return err
	}
	out := string(resp.Data)
	if o.has('c') {
		out = clientConfig(out)
	}
	out += "\n"
	if o.has('s') {
		out += statText(&resp.Stat)
	}
	_, err := fmt.Fprint(s.stdout, out)
	return err
}

// clientConfig turns a dynamic configuration into "version host:port,...":
// the config's version and each member's client address.
func clientConfig(cfg string) string {
	var version string
	var addrs []string
	for line := range strings.SplitSeq(cfg, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case !ok:
		case key == "version":
			version = value
		case strings.HasPrefix(key, "server."):
			if _, client, ok := strings.Cut(value, ";"); ok {
				if !strings.Contains(client, ":") {
					client = "0.0.0.0:" + client
				}
				addrs = append(addrs, client)
			}
		}
	}
	return version + " " + strings.Join(addrs, ",")
}

func (s *shell) sync(_ opts, args []string) error {
	path := args[0]
	var resp wire.SyncResponse
	err := s.do(wire.OpSync, path, &wire.PathRequest{Path: s.abs(path)}, &resp)
	var code codeError
	if errors.As(err, &code) {
		fmt.Fprintf(s.stdout, "Sync has failed. rc=%d\n", code.code)
		return errQuiet
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(s.stdout, "Sync is OK")
	return err
}

func (s *shell) whoAmI(_ opts, _ []string) error {
	var resp wire.WhoAmIResponse
	if err := s.do(wire.OpWhoAmI, "", nil, &resp); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("Auth scheme: User\n")
	for _, ci := range resp.ClientInfo {
		fmt.Fprintf(&b, "%s: %s\n", ci.AuthScheme, ci.User)
	}
	_, err := fmt.Fprint(s.stdout, b.String())
	return err
}
