package member

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/wire"
)

// The ensemble's configuration in ZooKeeper's text form: what zoo.cfg's
// server.N lines hold, what /zookeeper/config shows, and what a reconfig
// request names.

// ParseServer parses the value of a server.N line for member id:
// host:port1:port2[:participant|observer][;[clientHost:]clientPort].
// port1 carries Raft, port2 forwarding; the client part is kept as
// ZooKeeper shows it (a port alone listens on 0.0.0.0).
func ParseServer(id int, spec string) (Peer, error) {
	if id < 1 || id > 254 {
		return Peer{}, errors.New("server id must be 1..254")
	}
	spec, client, hasClient := strings.Cut(spec, ";")
	host, rest, err := splitHost(strings.TrimSpace(spec))
	if err != nil {
		return Peer{}, err
	}
	parts := strings.Split(rest, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return Peer{}, errors.New("want host:port1:port2[:participant|observer]")
	}
	for _, port := range parts[:2] {
		if err := checkPort(port); err != nil {
			return Peer{}, err
		}
	}
	p := Peer{ID: id, RaftAddr: net.JoinHostPort(host, parts[0]), ForwardAddr: net.JoinHostPort(host, parts[1])}
	if len(parts) == 3 {
		switch parts[2] {
		case "observer":
			p.Observer = true
		case "participant":
		default:
			return Peer{}, fmt.Errorf("role %q is neither participant nor observer", parts[2])
		}
	}
	if hasClient {
		client = strings.TrimSpace(client)
		chost, cport := "0.0.0.0", client
		if i := strings.LastIndex(client, ":"); i >= 0 {
			chost, cport = strings.Trim(client[:i], "[]"), client[i+1:]
		}
		if err := checkPort(cport); err != nil {
			return Peer{}, fmt.Errorf("client address: %w", err)
		}
		p.Client = net.JoinHostPort(chost, cport)
	}
	return p, nil
}

func checkPort(port string) error {
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// splitHost splits "host:rest" where host may be a bracketed IPv6 address.
func splitHost(s string) (host, rest string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]:")
		if end < 0 {
			return "", "", fmt.Errorf("bad address %q", s)
		}
		return s[1:end], s[end+2:], nil
	}
	host, rest, ok := strings.Cut(s, ":")
	if !ok || host == "" {
		return "", "", fmt.Errorf("bad address %q", s)
	}
	return host, rest, nil
}

// FormatEnsemble is what a ZooKeeper member keeps in /zookeeper/config: a
// line per member in id order,
// "server.N=host:port1:port2:participant[;clientHost:clientPort]" (or
// observer), then "version=" and the configuration's version in hex: the
// zxid of the reconfig that made it, 0 for the static one.
func FormatEnsemble(servers []Peer, version int64) []byte {
	return fmt.Appendf(ServerLines(servers), "version=%x", version)
}

// ServerLines is FormatEnsemble without the version line: a line per
// member in id order, each ending in a new line.
func ServerLines(servers []Peer) []byte {
	sorted := slices.Clone(servers)
	slices.SortFunc(sorted, func(a, b Peer) int { return a.ID - b.ID })
	var b []byte
	for _, p := range sorted {
		b = append(b, serverLine(p)...)
		b = append(b, '\n')
	}
	return b
}

func serverLine(p Peer) string {
	host, port1, _ := net.SplitHostPort(p.RaftAddr)
	_, port2, _ := net.SplitHostPort(p.ForwardAddr)
	role := "participant"
	if p.Observer {
		role = "observer"
	}
	line := fmt.Sprintf("server.%d=%s:%s:%s:%s", p.ID, bracket(host), port1, port2, role)
	if p.Client != "" {
		chost, cport, _ := net.SplitHostPort(p.Client)
		line += ";" + bracket(chost) + ":" + cport
	}
	return line
}

// bracket delimits an IPv6 address as ZooKeeper writes it.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// ParseEnsemble reads what FormatEnsemble wrote.
func ParseEnsemble(data []byte) (servers []Peer, version int64, err error) {
	for line := range strings.Lines(string(data)) {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case !ok:
			return nil, 0, fmt.Errorf("bad configuration line %q", line)
		case key == "version":
			v, err := strconv.ParseUint(value, 16, 64)
			if err != nil {
				return nil, 0, fmt.Errorf("bad configuration version %q", value)
			}
			version = int64(v)
		default:
			p, err := parseServerLine(key, value)
			if err != nil {
				return nil, 0, err
			}
			servers = append(servers, p)
		}
	}
	return servers, version, nil
}

// parseServerLine parses "server.N" = spec.
func parseServerLine(key, spec string) (Peer, error) {
	n, ok := strings.CutPrefix(key, "server.")
	id, err := strconv.Atoi(n)
	if !ok || err != nil {
		return Peer{}, fmt.Errorf("bad server key %q", key)
	}
	p, err := ParseServer(id, spec)
	if err != nil {
		return Peer{}, fmt.Errorf("server.%d: %w", id, err)
	}
	return p, nil
}

// sameAddresses reports whether two members' addresses clash: ZooKeeper
// refuses a configuration in which two members share an address.
func sameAddresses(a, b Peer) bool {
	addrs := func(p Peer) []string {
		out := []string{p.RaftAddr, p.ForwardAddr}
		if p.Client != "" && !strings.HasPrefix(p.Client, "0.0.0.0:") {
			out = append(out, p.Client)
		}
		return out
	}
	for _, x := range addrs(a) {
		if slices.Contains(addrs(b), x) {
			return true
		}
	}
	return false
}

// NextEnsemble computes the configuration a reconfig request asks for, as
// ZooKeeper's leader does: newMembers (servers separated by commas or new
// lines) replaces the whole ensemble; otherwise the members named in
// leaving (ids, comma separated) go and those in joining ("server.N=spec",
// comma separated; a spec must name a client port) come or change. The
// code is BADARGUMENTS for a spec ZooKeeper refuses, MARSHALLINGERROR for
// an id that is not a number (ZooKeeper fails to read it), and
// BADARGUMENTS when fewer than two voters would remain.
func NextEnsemble(cur []Peer, joining, leaving, newMembers string) ([]Peer, wire.Code) {
	var next []Peer
	if newMembers != "" {
		for line := range strings.Lines(strings.ReplaceAll(newMembers, ",", "\n")) {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			key, spec, ok := strings.Cut(line, "=")
			if !ok {
				return nil, wire.CodeBadArguments
			}
			key = strings.TrimSpace(key)
			if key == "version" {
				continue
			}
			p, err := parseServerLine(key, strings.TrimSpace(spec))
			if err != nil || slices.ContainsFunc(next, func(q Peer) bool { return q.ID == p.ID || sameAddresses(p, q) }) {
				return nil, wire.CodeBadArguments
			}
			next = append(next, p)
		}
	} else {
		next = slices.Clone(cur)
		for _, s := range splitList(leaving) {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, wire.CodeMarshallingError
			}
			next = slices.DeleteFunc(next, func(p Peer) bool { return int64(p.ID) == id })
		}
		for _, s := range splitList(joining) {
			key, spec, ok := strings.Cut(s, "=")
			if !ok || strings.Contains(spec, "=") {
				return nil, wire.CodeBadArguments
			}
			n := key[strings.LastIndex(key, ".")+1:]
			id, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			if err != nil {
				return nil, wire.CodeMarshallingError
			}
			p, err := ParseServer(int(id), strings.TrimSpace(spec))
			if err != nil || p.Client == "" || id > 254 {
				return nil, wire.CodeBadArguments
			}
			if slices.ContainsFunc(next, func(q Peer) bool { return q.ID != p.ID && sameAddresses(p, q) }) {
				return nil, wire.CodeBadArguments
			}
			next = slices.DeleteFunc(next, func(q Peer) bool { return q.ID == p.ID })
			next = append(next, p)
		}
	}
	if voters(next) < 2 {
		return nil, wire.CodeBadArguments
	}
	slices.SortFunc(next, func(a, b Peer) int { return a.ID - b.ID })
	return next, wire.CodeOK
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// voters counts the voting members of servers.
func voters(servers []Peer) int {
	n := 0
	for _, p := range servers {
		if !p.Observer {
			n++
		}
	}
	return n
}
