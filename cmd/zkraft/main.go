// Command zkraft runs a ZooKeeper-compatible server.
//
//	zkraft                       serve in memory on 127.0.0.1:2181
//	zkraft -config zoo.cfg       read ZooKeeper's zoo.cfg; flags override it
//	zkraft -port 2182 -4lw '*'   flags alone
//	zkraft -admin-port 8080      with the admin listener (/commands, /metrics, /livez, /readyz, /console/)
//	zkraft cli -server host:port [cmd args]   zkCli.sh's shell, in Go (a zoo.cfg named cli: ./cli)
//	zkraft version               print the version
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkraft/zkraft/cmd/zkraft/internal/cli"
	"github.com/zkraft/zkraft/cmd/zkraft/internal/gctune"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/clock"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cli" {
		os.Exit(cli.Run(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv("GOGC") == "" {
		// The collector's target follows the live heap (gctune.Default):
		// GOGC=400 for a small server, near 20 for a million znodes, whose
		// tree the collector need not scan. Setting GOGC turns this off.
		gctune.Start(gctune.Default)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, serves until a signal, and returns the exit status:
// 2 for a bad flag, value or config, 1 when the server cannot start.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "version" {
		fmt.Fprintln(stdout, "zkraft", server.Version)
		return 0
	}
	st, err := configure(args, stderr)
	cfg, logger, localMembers := st.cfg, st.logger, st.localMembers
	switch {
	case errors.Is(err, errVersion):
		fmt.Fprintln(stdout, "zkraft", server.Version)
		return 0
	case errors.Is(err, flag.ErrHelp):
		usage(stdout, st.flags)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "zkraft: %v\n", err)
		return 2
	}
	// Catch signals before serving, so that one arriving as soon as the
	// server is up still shuts it down gracefully.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c, ok := cfg.Clock.(*fileOffset); ok {
		if err := c.read(); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "zkraft: -clock-offset-file: %v\n", err)
			return 2
		}
		// Before serving too: SIGUSR1 unhandled would end the process.
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGUSR1)
		defer signal.Stop(sig)
		go c.stepOnSignal(ctx, sig, logger)
	}
	var srv interface{ Shutdown(context.Context) error }
	if localMembers > 0 {
		lc, connect, err := startLocalCluster(localMembers, cfg, st.admin, st.console, logger)
		if err != nil {
			fmt.Fprintf(stderr, "zkraft: %v\n", err)
			return 1
		}
		srv = lc
		logger.Info("zkraft local cluster serving", "connect", connect, "members", localMembers, "version", server.Version)
		fmt.Fprintln(stdout, connect)
	} else {
		single, err := server.New(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "zkraft: %v\n", err)
			return 2
		}
		if err := single.Start(); err != nil {
			fmt.Fprintf(stderr, "zkraft: %v\n", err)
			return 1
		}
		srv = single
		if st.admin != nil {
			a, err := startAdmin(single, *st.admin, st.console, logger)
			if err != nil {
				single.Close()
				fmt.Fprintf(stderr, "zkraft: %v\n", err)
				return 1
			}
			srv = withAdmin{single, a}
		}
		if len(cfg.Servers) == 0 {
			logger.Info("zkraft serving", "connect", single.ConnectString(), "mode", single.Mode(), "version", server.Version)
		} else {
			// A member's mode is known once a leader is: it logs "leader
			// elected", and "serving clients" with its mode.
			logger.Info("zkraft started", "connect", single.ConnectString(), "sid", cfg.ServerID, "version", server.Version)
		}
	}
	<-ctx.Done()
	stop() // a second signal now ends the process at once
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	return 0
}

// startAdmin starts srv's admin listener, with the web console.
func startAdmin(srv *server.Server, cfg admin.Config, con consoleFlags, logger *slog.Logger) (*admin.Admin, error) {
	cfg.Logger = logger
	a, err := admin.New(srv, cfg)
	if err != nil {
		return nil, err
	}
	if err := mountConsole(a, srv, con); err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	if !con.off {
		logger.Info("web console", "url", consoleURL(a))
		srv.SetConsoleURL(advertisedConsoleURL(a, srv))
	}
	return a, nil
}

// withAdmin shuts a server's admin listener down before the server.
type withAdmin struct {
	srv   *server.Server
	admin *admin.Admin
}

func (w withAdmin) Shutdown(ctx context.Context) error {
	return errors.Join(w.admin.Shutdown(ctx), w.srv.Shutdown(ctx))
}

// setup is what the command line and zoo.cfg ask for.
type setup struct {
	cfg          server.Config
	logger       *slog.Logger
	localMembers int           // -local-cluster's member count, 0 for one server
	admin        *admin.Config // the admin listener's settings; nil when it is off
	console      consoleFlags  // the web console's, on the admin listener
	flags        *flag.FlagSet // the flags parsed, for the usage
}

// options are the command-line flags; a flag that is set overrides zoo.cfg.
type options struct {
	flags                                            *flag.FlagSet
	config, address, fourLetter, logLevel, logFormat string
	superDigest, dataDir, logStore                   string
	localCluster                                     int
	raftTimeout                                      time.Duration
	port, maxCnxns, juteMaxBuffer, serverID          int
	tick, minTimeout, maxTimeout, containerInterval  time.Duration
	extendedTypes, version, readOnly, reconfig       bool
	syncLimit                                        int
	peerVia                                          map[string]string
	clockOffsetFile                                  string
	admin                                            bool
	adminAddress                                     string
	adminPort                                        int
	adminPortSet                                     bool // -admin-port given (0: a port the OS picks)
	// from zoo.cfg: the admin listener's settings, whether it is on, and
	// the file's text (the initial_configuration command's)
	adminCfg     admin.Config
	adminEnabled bool
	cfgText      string
	console      consoleFlags
}

// configure parses flags and any zoo.cfg into a setup.
func configure(args []string, stderr io.Writer) (setup, error) {
	cfg, logger, localMembers, o, err := configureServer(args, stderr)
	st := setup{cfg: cfg, logger: logger, localMembers: localMembers, console: o.console, flags: o.flags}
	if err != nil {
		return st, err
	}
	st.admin, err = adminSettings(o)
	return st, err
}

// adminSettings applies the admin flags over zoo.cfg's admin keys; nil
// when the listener stays off.
func adminSettings(o *options) (*admin.Config, error) {
	cfg, enabled := o.adminCfg, o.adminEnabled || o.admin || o.adminPortSet || o.adminAddress != ""
	if !enabled {
		return nil, nil
	}
	if o.adminPort < 0 || o.adminPort > 65535 {
		return nil, fmt.Errorf("-admin-port %d: want 0..65535", o.adminPort)
	}
	host, port, _ := net.SplitHostPort(cfg.Addr)
	if host == "" && port == "" {
		host, port = admin.DefaultHost, strconv.Itoa(admin.DefaultPort)
	}
	if o.adminAddress != "" {
		host = o.adminAddress
	}
	if o.adminPortSet {
		port = strconv.Itoa(o.adminPort)
	}
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.InitialConfiguration = o.cfgText
	return &cfg, cfg.Validate()
}

// errVersion is configureServer's answer to -version.
var errVersion = errors.New("version asked for")

// usage prints how to run zkraft, with fs's flags.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage:
  zkraft [flags] [zoo.cfg]          serve (in memory on 127.0.0.1:2181 by default)
  zkraft cli [flags] [cmd args]     zkCli.sh's shell (zkraft cli -h for its flags)
  zkraft version                    print the version

Flags:
`)
	if fs != nil {
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// configureServer parses flags and any zoo.cfg into a Config; localMembers
// is -local-cluster's member count, 0 for one server.
func configureServer(args []string, stderr io.Writer) (cfg server.Config, logger *slog.Logger, localMembers int, o *options, err error) {
	o = new(options)
	fs := flag.NewFlagSet("zkraft", flag.ContinueOnError)
	// run prints the usage for -h, and one line for a bad flag.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o.flags = fs
	fs.StringVar(&o.config, "config", "", "ZooKeeper zoo.cfg to read (also accepted as the only argument)")
	fs.StringVar(&o.address, "address", "", "client address to listen on (zoo.cfg clientPortAddress; default 127.0.0.1)")
	fs.IntVar(&o.port, "port", 0, "client port (zoo.cfg clientPort; default 2181)")
	fs.DurationVar(&o.tick, "tick-time", 0, "ZooKeeper tickTime (default 2s)")
	fs.DurationVar(&o.minTimeout, "min-session-timeout", 0, "minimum session timeout (default 2 ticks)")
	fs.DurationVar(&o.maxTimeout, "max-session-timeout", 0, "maximum session timeout (default 20 ticks)")
	fs.IntVar(&o.maxCnxns, "max-client-cnxns", 0, "connections per client IP, 0 for no limit (default 60)")
	fs.StringVar(&o.fourLetter, "4lw", "", `four-letter words to answer, comma-separated, or "*" (default srvr)`)
	fs.IntVar(&o.juteMaxBuffer, "jute-maxbuffer", 0, "largest request frame in bytes (default 1048575)")
	fs.BoolVar(&o.extendedTypes, "extended-types", false, "allow TTL nodes (zookeeper.extendedTypesEnabled)")
	fs.BoolVar(&o.reconfig, "reconfig", false, "allow a super user to add and remove members while the cluster runs (zoo.cfg reconfigEnabled)")
	fs.BoolVar(&o.readOnly, "read-only-mode", false, "a member without a leader serves reads to clients that allow read-only (readonlymode.enabled)")
	fs.IntVar(&o.syncLimit, "sync-limit", 0, "ticks without a leader before a member drops its clients (zoo.cfg syncLimit; default 5)")
	fs.DurationVar(&o.containerInterval, "container-check-interval", 0, "how often empty containers and expired TTL nodes are removed (default 1m)")
	fs.IntVar(&o.serverID, "id", 0, "server id, 1..254 (default 1)")
	fs.IntVar(&o.localCluster, "local-cluster", 0, "run this many members in this process, on consecutive client ports from -port (default 2181); prints the connect string")
	fs.StringVar(&o.dataDir, "data-dir", "", "keep state on disk here (zoo.cfg dataDir); empty: in memory")
	fs.StringVar(&o.logStore, "log-store", "", `durable Raft log store: "wal", hashicorp's raft-wal (default), or "boltdb", raft-boltdb, about half as fast; a data dir keeps the kind it has (zoo.cfg zkraft.logStore)`)
	fs.DurationVar(&o.raftTimeout, "raft-timeout", 0, "Raft heartbeat and election timeout (default: half of syncLimit ticks for a cluster member)")
	fs.StringVar(&o.superDigest, "super-digest", "", "superuser digest, user:base64(sha1(user:password)) (zookeeper.DigestAuthenticationProvider.superDigest)")
	fs.Func("peer-via", "dial a member's address at another: `addr=via[,addr=via...]` (a proxy or port forward before it; repeatable)",
		o.addPeerVia)
	fs.StringVar(&o.clockOffsetFile, "clock-offset-file", "", "fault injection: the wall clock runs off the machine's by the duration in this file (e.g. -90m), read at start and on SIGUSR1")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&o.admin, "admin", false, "serve the admin listener: ZooKeeper's AdminServer commands, /metrics, /livez, /readyz (zoo.cfg admin.enableServer)")
	fs.StringVar(&o.adminAddress, "admin-address", "", "admin listener address (zoo.cfg admin.serverAddress; default 127.0.0.1, where ZooKeeper's is 0.0.0.0); turns it on")
	fs.IntVar(&o.adminPort, "admin-port", 0, "admin listener port (zoo.cfg admin.serverPort or metricsProvider.httpPort; default 8080; 0 picks one; -local-cluster member i takes port+i); turns it on")
	o.console.register(fs)
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			// One line, not the whole usage.
			err = fmt.Errorf("%w (zkraft -h lists the flags)", err)
		}
		return cfg, nil, 0, o, err
	}
	o.adminPortSet = flagSet(fs, "admin-port")
	if o.version {
		return cfg, nil, 0, o, errVersion
	}
	if logger, err = newLogger(o.logLevel, o.logFormat, stderr); err != nil {
		return cfg, nil, 0, o, err
	}
	if cfg, err = baseConfig(fs, o, logger); err != nil {
		return cfg, nil, 0, o, err
	}
	applyFlags(fs, o, &cfg)
	cfg.Logger = logger
	if err := resolveID(fs, &cfg); err != nil {
		return cfg, nil, 0, o, err
	}
	if o.localCluster < 0 || o.localCluster > 9 || o.localCluster > 0 && len(cfg.Servers) > 0 {
		return cfg, nil, 0, o, errors.New("-local-cluster takes 1..9 members, and no server.N lines")
	}
	if o.localCluster > 0 {
		return cfg, logger, o.localCluster, o, nil // each member's config is validated when built
	}
	return cfg, logger, 0, o, cfg.Validate()
}

// resolveID reads the member id from dataDir/myid, as ZooKeeper does, when
// the config names servers and -id did not give it.
func resolveID(fs *flag.FlagSet, cfg *server.Config) error {
	if len(cfg.Servers) == 0 || flagSet(fs, "id") {
		return nil
	}
	if cfg.DataDir == "" {
		return errors.New("a cluster member needs -id, or a dataDir holding myid")
	}
	id, err := server.ReadMyID(cfg.DataDir)
	if err != nil {
		return err
	}
	cfg.ServerID = id
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// baseConfig reads the zoo.cfg named by -config or the argument, if any.
func baseConfig(fs *flag.FlagSet, o *options, logger *slog.Logger) (server.Config, error) {
	switch {
	case fs.NArg() > 1:
		return server.Config{}, fmt.Errorf("unexpected arguments %q", fs.Args()[1:])
	case fs.NArg() == 1 && o.config != "":
		return server.Config{}, errors.New("give the config file either as -config or as the argument, not both")
	case fs.NArg() == 1:
		o.config = fs.Arg(0)
	}
	if o.config == "" {
		return server.Config{}, nil
	}
	text, err := os.ReadFile(o.config)
	if err != nil {
		return server.Config{}, err
	}
	o.cfgText = string(text)
	cfg, unknown, err := server.ParseZooCfg(bytes.NewReader(text))
	if err != nil {
		return cfg, err
	}
	props, err := server.ReadProperties(bytes.NewReader(text))
	if err != nil {
		return cfg, err
	}
	var adminKeys []string
	if o.adminCfg, o.adminEnabled, adminKeys, err = admin.ParseZooCfg(props); err != nil {
		return cfg, err
	}
	for _, k := range unknown {
		if !slices.Contains(adminKeys, k) {
			logger.Warn("zoo.cfg: ignoring a key zkraft does not use", "key", k, "file", o.config)
		}
	}
	return cfg, nil
}

func applyFlags(fs *flag.FlagSet, o *options, cfg *server.Config) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "address", "port":
			host, port, _ := net.SplitHostPort(cfg.ClientPortAddress)
			if host == "" && port == "" {
				host, port, _ = net.SplitHostPort(server.DefaultClientPortAddress)
			}
			if o.address != "" {
				host = o.address
			}
			if f.Name == "port" {
				port = strconv.Itoa(o.port)
			}
			cfg.ClientPortAddress = net.JoinHostPort(host, port)
		case "tick-time":
			cfg.TickTime = o.tick
		case "min-session-timeout":
			cfg.MinSessionTimeout = o.minTimeout
		case "max-session-timeout":
			cfg.MaxSessionTimeout = o.maxTimeout
		case "max-client-cnxns":
			cfg.MaxClientCnxns = o.maxCnxns
			if o.maxCnxns == 0 {
				cfg.MaxClientCnxns = -1
			}
		case "4lw":
			cfg.FourLetterWords = server.ParseFourLetterWords(o.fourLetter)
		case "jute-maxbuffer":
			cfg.JuteMaxBuffer = o.juteMaxBuffer
		case "extended-types":
			cfg.ExtendedTypesEnabled = o.extendedTypes
		case "read-only-mode":
			cfg.ReadOnlyMode = o.readOnly
		case "reconfig":
			cfg.ReconfigEnabled = o.reconfig
		case "sync-limit":
			cfg.SyncLimit = o.syncLimit
		case "container-check-interval":
			cfg.ContainerCheckInterval = o.containerInterval
		case "id":
			cfg.ServerID = o.serverID
		case "super-digest":
			cfg.SuperDigest = o.superDigest
		case "data-dir":
			cfg.DataDir = o.dataDir
		case "log-store":
			cfg.LogStore = o.logStore
		case "raft-timeout":
			cfg.RaftTimeout = o.raftTimeout
		case "peer-via":
			cfg.PeerVia = o.peerVia
		case "clock-offset-file":
			cfg.Clock = &fileOffset{Steppable: clock.NewSteppable(clock.NewReal()), path: o.clockOffsetFile}
		}
	})
}

// addPeerVia parses -peer-via: addr=via pairs of host:port addresses.
func (o *options) addPeerVia(list string) error {
	for pair := range strings.SplitSeq(list, ",") {
		addr, via, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return fmt.Errorf("%q: want addr=via", pair)
		}
		for _, a := range []string{addr, via} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return fmt.Errorf("%q: %w", pair, err)
			}
		}
		if o.peerVia == nil {
			o.peerVia = make(map[string]string)
		}
		o.peerVia[addr] = via
	}
	return nil
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

// fileOffset is the clock of a server started with -clock-offset-file:
// the machine's, off by the duration the file holds, read at start and
// again on SIGUSR1, as an NTP step or an operator would move a host's wall
// clock (and a restart would find it moved). zkchaos steps one member's
// clock this way; elapsed time, and with it every session deadline, runs
// on undisturbed.
type fileOffset struct {
	*clock.Steppable
	path string
}

func (c *fileOffset) stepOnSignal(ctx context.Context, sig <-chan os.Signal, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		if err := c.read(); err != nil {
			logger.Warn("clock offset", "file", c.path, "err", err)
		} else {
			logger.Info("wall clock stepped", "offset", c.Offset(), "now", c.Now())
		}
	}
}

// read sets the clock's offset to the duration in the file.
func (c *fileOffset) read() error {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return err
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	c.Step(d - c.Offset())
	return nil
}
