package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/server/member"
)

// ParseZooCfg reads a ZooKeeper zoo.cfg (Java properties syntax) into a
// Config. Keys zkraft does not use are returned in unknown, for the caller
// to warn about; a key whose value cannot be used is an error.
func ParseZooCfg(r io.Reader) (cfg Config, unknown []string, err error) {
	props, err := readProperties(r)
	if err != nil {
		return cfg, nil, err
	}
	var errs []error
	port, addr := "", ""
	for _, p := range props {
		known, perr := cfg.applyZooCfg(p.key, p.value, &port, &addr)
		if strings.HasPrefix(p.key, "server.") {
			known, perr = true, cfg.addServer(p.key, p.value)
		}
		if perr != nil {
			errs = append(errs, fmt.Errorf("zoo.cfg line %d: %s=%s: %w", p.line, p.key, p.value, perr))
		} else if !known {
			unknown = append(unknown, p.key)
		}
	}
	if port != "" || addr != "" {
		host, defPort, _ := net.SplitHostPort(DefaultClientPortAddress)
		cfg.ClientPortAddress = net.JoinHostPort(orDefault(addr, host), orDefault(port, defPort))
	}
	return cfg, unknown, errors.Join(errs...)
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// applyZooCfg applies one key; known is false for keys zkraft ignores.
func (c *Config) applyZooCfg(key, v string, port, addr *string) (known bool, err error) {
	switch key {
	case "tickTime":
		c.TickTime, err = parseMillis(v, false)
	case "minSessionTimeout":
		c.MinSessionTimeout, err = parseMillis(v, true)
	case "maxSessionTimeout":
		c.MaxSessionTimeout, err = parseMillis(v, true)
	case "clientPort":
		_, err = strconv.ParseUint(v, 10, 16)
		*port = v
	case "clientPortAddress":
		*addr = v
	case "maxClientCnxns":
		c.MaxClientCnxns, err = strconv.Atoi(v)
		if c.MaxClientCnxns == 0 {
			c.MaxClientCnxns = -1 // zoo.cfg's 0 means no limit
		}
	case "clientTcpKeepAlive", "zookeeper.clientTcpKeepAlive":
		c.ClientTCPKeepAlive, err = strconv.ParseBool(v)
	case "4lw.commands.whitelist":
		c.FourLetterWords = ParseFourLetterWords(v)
	case "nio.sessionlessCnxnTimeout", "zookeeper.nio.sessionlessCnxnTimeout":
		c.SessionlessCnxnTimeout, err = parseMillis(v, false)
	case "jute.maxbuffer":
		c.JuteMaxBuffer, err = parseIntAnyBase(v)
	case "extendedTypesEnabled", "zookeeper.extendedTypesEnabled":
		c.ExtendedTypesEnabled, err = strconv.ParseBool(v)
	case "znode.container.checkIntervalMs":
		c.ContainerCheckInterval, err = parseMillis(v, false)
	case "DigestAuthenticationProvider.superDigest", "zookeeper.DigestAuthenticationProvider.superDigest":
		c.SuperDigest = v
	case "dataDir":
		c.DataDir = v
	case "dataLogDir":
		c.DataLogDir = v
	case "zkraft.logStore":
		c.LogStore = v
	case "snapCount", "zookeeper.snapCount":
		c.SnapCount, err = strconv.Atoi(v)
	case "autopurge.snapRetainCount":
		c.SnapRetainCount, err = strconv.Atoi(v)
	case "syncLimit":
		c.SyncLimit, err = strconv.Atoi(v)
		if err == nil && c.SyncLimit < 1 {
			err = fmt.Errorf("syncLimit %d is below 1", c.SyncLimit)
		}
	case "readonlymode.enabled", "zookeeper.readonlymode.enabled":
		c.ReadOnlyMode, err = strconv.ParseBool(v)
	case "reconfigEnabled", "zookeeper.reconfigEnabled":
		c.ReconfigEnabled, err = strconv.ParseBool(v)
	case "initLimit":
		c.InitLimit, err = strconv.Atoi(v)
		if err == nil && c.InitLimit < 1 {
			err = fmt.Errorf("initLimit %d is below 1", c.InitLimit)
		}
	case "autopurge.purgeInterval", "standaloneEnabled",
		"localSessionsEnabled", "localSessionsUpgradingEnabled", "dynamicConfigFile":
		// Known ZooKeeper keys that need no setting here: snapshots are purged as they are taken, a
		// one-member configuration is standalone, the configuration a
		// reconfig makes is kept in the replicated tree, read-only sessions
		// are always local and never upgraded.
	case "znode.container.maxPerMinute":
		c.ContainerMaxPerMinute, err = strconv.Atoi(v)
	default:
		return false, nil
	}
	return true, err
}

// parseMillis parses a duration in ms; with allowDefault, -1 means the default.
func parseMillis(v string, allowDefault bool) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if allowDefault && n == -1 {
		return 0, nil
	}
	if n <= 0 {
		return 0, fmt.Errorf("must be a positive number of milliseconds")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parseIntAnyBase parses decimal or 0x-prefixed hex, as Java's Integer.decode.
func parseIntAnyBase(v string) (int, error) {
	n, err := strconv.ParseInt(v, 0, 32)
	return int(n), err
}

type property struct {
	key, value string
	line       int
}

// ReadProperties reads zoo.cfg's key=value pairs (Java properties syntax)
// in file order, for layers above the server that read keys of their own
// (server/admin reads admin.* and metricsProvider.*).
func ReadProperties(r io.Reader) ([]Property, error) {
	props, err := readProperties(r)
	out := make([]Property, len(props))
	for i, p := range props {
		out[i] = Property{Key: p.key, Value: p.value}
	}
	return out, err
}

// readProperties reads java.util.Properties text: comments (# or !), key and
// value separated by '=', ':' or whitespace, backslash line continuations
// and escapes.
func readProperties(r io.Reader) ([]property, error) {
	sc := bufio.NewScanner(r)
	var out []property
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continued(line) && sc.Scan() {
			lineNo++
			line = line[:len(line)-1] + strings.TrimLeft(sc.Text(), " \t\f")
		}
		key, value := splitProperty(line)
		out = append(out, property{key: unescape(key), value: strings.TrimSpace(unescape(value)), line: start})
	}
	return out, sc.Err()
}

// continued reports whether line ends with an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitProperty(line string) (key, value string) {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '=', ':':
			return line[:i], strings.TrimLeft(line[i+1:], " \t\f")
		case ' ', '\t', '\f':
			rest := strings.TrimLeft(line[i:], " \t\f")
			if rest != "" && (rest[0] == '=' || rest[0] == ':') {
				rest = strings.TrimLeft(rest[1:], " \t\f")
			}
			return line[:i], rest
		}
	}
	return line, ""
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// addServer parses server.N=host:port1:port2[:participant|observer][;[addr:]clientPort]
// (member.ParseServer). The client part, ZooKeeper's dynamic-configuration
// form, shows in /zookeeper/config; clients use clientPort and
// clientPortAddress.
func (c *Config) addServer(key, v string) error {
	id, err := strconv.Atoi(strings.TrimPrefix(key, "server."))
	if err != nil {
		return fmt.Errorf("server id must be 1..254")
	}
	p, err := member.ParseServer(id, v)
	if err != nil {
		return err
	}
	c.Servers = append(c.Servers, p)
	return nil
}

// ReadMyID reads this member's id from dataDir/myid, as ZooKeeper does.
func ReadMyID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "myid"))
	if err != nil {
		return 0, fmt.Errorf("read myid: %w", err)
	}
	id, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || id < 1 || id > 254 {
		return 0, fmt.Errorf("myid in %s: %q is not an id 1..254", dataDir, strings.TrimSpace(string(b)))
	}
	return id, nil
}
