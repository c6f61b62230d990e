package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/admin"
)

// localCluster runs n members in this process. Member i (from 0) takes
// client port base+i, Raft port base+707+i and forwarding port
// base+1707+i, which for base 2181 are ZooKeeper's usual 2181, 2888 and
// 3888. The ports are fixed so that durable members find each other again
// after a restart. Each durable member keeps its state in DataDir/member-N.
// With the admin listener on, member i serves it on the admin port + i.
type localCluster struct {
	servers []*server.Server
	admins  []*admin.Admin
}

func startLocalCluster(n int, base server.Config, adminCfg *admin.Config, con consoleFlags, logger *slog.Logger) (*localCluster, string, error) {
	host, portText, err := net.SplitHostPort(base.ClientPortAddress)
	if err != nil {
		host, portText = "127.0.0.1", "2181"
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port == 0 {
		return nil, "", errors.New("-local-cluster needs a fixed client port (not 0)")
	}
	var peers []server.Peer
	for i := range n {
		peers = append(peers, server.Peer{ID: i + 1,
			RaftAddr:    net.JoinHostPort(host, strconv.Itoa(port+707+i)),
			ForwardAddr: net.JoinHostPort(host, strconv.Itoa(port+1707+i))})
	}
	lc := &localCluster{}
	var addrs []string
	for i := range n {
		cfg := base
		cfg.ServerID, cfg.Servers = i+1, peers
		cfg.ClientPortAddress = net.JoinHostPort(host, strconv.Itoa(port+i))
		cfg.Logger = logger.With("member", i+1)
		if base.DataDir != "" {
			cfg.DataDir = filepath.Join(base.DataDir, "member-"+strconv.Itoa(i+1))
		}
		srv, err := server.New(cfg)
		if err == nil {
			err = srv.Start()
		}
		if err != nil {
			lc.Shutdown(context.Background())
			return nil, "", fmt.Errorf("member %d: %w", i+1, err)
		}
		lc.servers = append(lc.servers, srv)
		addrs = append(addrs, srv.ConnectString())
		if adminCfg != nil {
			a, err := startAdmin(srv, memberAdmin(*adminCfg, i), con, cfg.Logger)
			if err != nil {
				lc.Shutdown(context.Background())
				return nil, "", fmt.Errorf("member %d: %w", i+1, err)
			}
			lc.admins = append(lc.admins, a)
		}
	}
	return lc, strings.Join(addrs, ","), nil
}

// memberAdmin is member i's admin listener settings: the port + i (a
// port of 0 stays 0, for one the OS picks).
func memberAdmin(cfg admin.Config, i int) admin.Config {
	host, port, _ := net.SplitHostPort(cfg.Addr)
	if p, err := strconv.Atoi(port); err == nil && p != 0 {
		cfg.Addr = net.JoinHostPort(host, strconv.Itoa(p+i))
	}
	return cfg
}

func (lc *localCluster) Shutdown(ctx context.Context) error {
	var errs []error
	for _, a := range lc.admins {
		errs = append(errs, a.Shutdown(ctx))
	}
	for _, srv := range lc.servers {
		errs = append(errs, srv.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
