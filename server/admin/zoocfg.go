package admin

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/server"
)

// ParseZooCfg reads the admin listener's zoo.cfg keys: admin.enableServer,
// admin.serverAddress, admin.serverPort and admin.commandURL as
// ZooKeeper's AdminServer; metricsProvider.httpHost and
// metricsProvider.httpPort as ZooKeeper's Prometheus provider, whose port
// also turns the listener on (zkraft serves /metrics there).
// metricsProvider.className is accepted and ignored. It returns whether
// the listener is enabled (default off, see DESIGN.md) and the keys it
// read, which the caller need not warn about.
func ParseZooCfg(props []server.Property) (cfg Config, enabled bool, used []string, err error) {
	host, port := DefaultHost, strconv.Itoa(DefaultPort)
	var errs []error
	for _, p := range props {
		switch p.Key {
		case "admin.enableServer", "zookeeper.admin.enableServer":
			enabled, err = strconv.ParseBool(p.Value)
		case "admin.serverAddress", "zookeeper.admin.serverAddress", "metricsProvider.httpHost":
			host = p.Value
			if net.ParseIP(host) == nil && strings.ContainsAny(host, ":/ ") {
				err = errors.New("not a host name or IP address")
			}
		case "admin.serverPort", "zookeeper.admin.serverPort", "metricsProvider.httpPort":
			_, err = strconv.ParseUint(p.Value, 10, 16)
			port = p.Value
			if p.Key == "metricsProvider.httpPort" {
				enabled = true
			}
		case "admin.commandURL", "zookeeper.admin.commandURL":
			cfg.CommandURL = p.Value
		case "metricsProvider.className":
		default:
			continue
		}
		used = append(used, p.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("zoo.cfg: %s=%s: %w", p.Key, p.Value, err))
			err = nil
		}
	}
	cfg.Addr = net.JoinHostPort(host, port)
	if err := errors.Join(errs...); err != nil {
		return cfg, false, used, err
	}
	return cfg, enabled, used, cfg.Validate()
}
