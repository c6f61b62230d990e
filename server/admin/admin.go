package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkraft/zkraft/server"
)

// Server is what the admin listener reads of a server. *server.Server
// satisfies it; every method is read-only but for the stat resets.
type Server interface {
	Monitor() []server.Metric
	Conf() []server.Property
	Environment() []server.Property
	Config() server.Config
	Mode() string
	Serving() bool
	ClientPort() int
	DataDirs() (data, log string)
	DirSizes() (data, log int64)
	Connections() []server.ConnInfo
	ResetConnectionStats()
	ResetStats()
	WatchSummary() (conns, paths, watches int)
	Watches() []server.Watch
	SessionExpiry() map[int64][]int64
	Ephemerals() map[int64][]string
	Digest() (zxid int64, digest uint64)
	RaftStatus() server.RaftStatus
	CommitTime() server.Summary
	Members() []server.Peer
	LastSnapshot() (zxid int64, at time.Time, ok bool)
	FsyncThresholdExceeded() int64
	Closed() bool
}

var _ Server = (*server.Server)(nil)

// Errors.
var (
	// ErrClosed is returned by Start and Serve after Shutdown or Close.
	ErrClosed = errors.New("admin: closed")
)

// Config configures an admin listener. The zero value listens on
// 127.0.0.1:8080: ZooKeeper's port, but loopback where ZooKeeper listens
// on every interface, since the listener can read every znode (the
// console) and, when told to, write them.
type Config struct {
	// Addr is the host:port to listen on (zoo.cfg admin.serverAddress and
	// admin.serverPort). Default 127.0.0.1:8080; 127.0.0.1:0 in tests.
	Addr string
	// CommandURL is where the commands are served (admin.commandURL).
	// Default /commands.
	CommandURL string
	// InitialConfiguration is the text of the zoo.cfg the server was
	// started from, for the initial_configuration command. Empty: the
	// command shows the lines the server's configuration implies.
	InitialConfiguration string
	// Logger receives the listener's logs; nil discards them.
	Logger *slog.Logger
}

// DefaultPort is ZooKeeper's admin.serverPort default.
const DefaultPort = 8080

// DefaultHost is where the admin listener listens unless told otherwise
// (admin.serverAddress): loopback. ZooKeeper's default is 0.0.0.0, every
// interface; give that to reach the listener from other machines.
const DefaultHost = "127.0.0.1"

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = net.JoinHostPort(DefaultHost, strconv.Itoa(DefaultPort))
	}
	if c.CommandURL == "" {
		c.CommandURL = "/commands"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a setting that cannot work.
func (c Config) Validate() error {
	c.setDefaults()
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("admin: address %q: %w", c.Addr, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("admin: address %q: port is not 0..65535", c.Addr)
	}
	if !strings.HasPrefix(c.CommandURL, "/") || strings.HasSuffix(c.CommandURL, "/") {
		return fmt.Errorf("admin: commandURL %q must start with / and not end with one", c.CommandURL)
	}
	return nil
}

// Admin is one server's admin listener: its commands, its Prometheus
// registry and its health probes.
type Admin struct {
	srv       Server
	cfg       Config
	log       *slog.Logger
	mux       *http.ServeMux
	registry  *prometheus.Registry
	traceMask atomic.Int64
	http      *http.Server

	mu     sync.Mutex // guards the fields below
	ln     net.Listener
	closed bool
	served chan struct{} // closed when the goroutine Start began has returned; nil without Start
}

// New returns the admin listener of srv, not yet listening.
func New(srv Server, cfg Config) (*Admin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	a := &Admin{srv: srv, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	a.traceMask.Store(defaultTraceMask)
	reg, err := newRegistry(srv)
	if err != nil {
		return nil, err
	}
	a.registry = reg
	a.routes()
	// Requests' contexts end when Shutdown begins, so that handlers that
	// stream until their client leaves (the console's events) let it finish.
	base, endRequests := context.WithCancel(context.Background())
	a.http = &http.Server{Handler: a.mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:    slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return base }}
	a.http.RegisterOnShutdown(endRequests)
	return a, nil
}

// Handle mounts h on the listener at pattern (net/http.ServeMux syntax),
// beside the admin's own paths, for layers that share its port (a web
// console, profiling). It may be called before or after Start, and panics
// as ServeMux.Handle does when pattern is taken.
func (a *Admin) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// Handler returns the handler of every path the listener serves, for
// embedders who run their own http.Server.
func (a *Admin) Handler() http.Handler { return a.mux }

// Registry returns the Prometheus registry /metrics serves: this
// server's own, so that servers in one process never collide.
func (a *Admin) Registry() *prometheus.Registry { return a.registry }

// Start listens on Config.Addr and serves in the background; it returns
// once the listener is bound.
func (a *Admin) Start() error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("admin: listen on %s: %w", a.cfg.Addr, err)
	}
	if err := a.setListener(ln); err != nil {
		ln.Close()
		return err
	}
	served := make(chan struct{})
	a.mu.Lock()
	a.served = served
	a.mu.Unlock()
	go func() {
		defer close(served)
		a.http.Serve(ln) // returns http.ErrServerClosed at Shutdown or Close
	}()
	a.log.Info("admin listener serving", "addr", ln.Addr().String())
	return nil
}

// Serve serves on ln until Shutdown or Close, then returns ErrClosed.
func (a *Admin) Serve(ln net.Listener) error {
	if err := a.setListener(ln); err != nil {
		ln.Close()
		return err
	}
	if err := a.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ErrClosed
}

func (a *Admin) setListener(ln net.Listener) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	if a.ln != nil {
		return errors.New("admin: already serving")
	}
	a.ln = ln
	return nil
}

// Addr returns the address listened on, nil before Start or Serve.
func (a *Admin) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return nil
	}
	return a.ln.Addr()
}

// URL returns "http://host:port" of the listener, "" before Start.
func (a *Admin) URL() string {
	if addr := a.Addr(); addr != nil {
		return "http://" + addr.String()
	}
	return ""
}

// Shutdown stops the listener gracefully, waiting for requests in flight
// until ctx is done.
func (a *Admin) Shutdown(ctx context.Context) error {
	served := a.markClosed()
	if err := a.http.Shutdown(ctx); err != nil {
		return fmt.Errorf("admin: shutdown: %w", err)
	}
	<-served
	return nil
}

// Close stops the listener and closes its connections at once.
func (a *Admin) Close() error {
	served := a.markClosed()
	err := a.http.Close()
	<-served
	return err
}

// markClosed refuses Start and Serve from now on, and returns a channel
// closed once the goroutine Start began (if any) has returned.
func (a *Admin) markClosed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.served == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	return a.served
}

func (a *Admin) routes() {
	a.mux.HandleFunc("GET "+a.cfg.CommandURL, a.listCommands)
	a.mux.HandleFunc("GET "+a.cfg.CommandURL+"/{$}", a.listCommands)
	a.mux.HandleFunc("GET "+a.cfg.CommandURL+"/{name}", a.command)
	a.mux.Handle("GET /metrics", metricsHandler(a.registry))
	a.mux.HandleFunc("GET /livez", a.livez)
	a.mux.HandleFunc("GET /readyz", a.readyz)
}
