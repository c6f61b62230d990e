package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/console"
)

// consoleFlags are the web console's flags. The console will live on the
// admin listener; until then -console-addr gives it a listener of its own.
type consoleFlags struct {
	addr   string
	writes bool
	auth   []console.Auth
}

func (f *consoleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "console-addr", "", "serve the web console on this address (e.g. 127.0.0.1:8081); empty: no console")
	fs.BoolVar(&f.writes, "console-writes", false, "let the web console create, change and delete nodes, through the same ACL checks as any client")
	fs.Func("console-auth", "credentials the web console reads and writes with, `digest:user:password` (repeatable)", func(s string) error {
		a, err := console.ParseAuth(s)
		if err == nil {
			f.auth = append(f.auth, a)
		}
		return err
	})
}

// startConsole serves the console of each server on f.addr: a single
// server's at /, the members of a local cluster at /1/, /2/, ... It
// returns the address it listens on and the function that stops it.
func startConsole(f *consoleFlags, servers []*server.Server, logger *slog.Logger) (net.Addr, func(context.Context) error, error) {
	if f.addr == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	mux := http.NewServeMux()
	for i, srv := range servers {
		c, err := console.New(console.FromServer(srv), console.Options{Writes: f.writes, Auth: f.auth})
		if err != nil {
			return nil, nil, err
		}
		if len(servers) == 1 {
			mux.Handle("/", c)
			break
		}
		prefix := "/" + strconv.Itoa(i+1)
		mux.Handle(prefix+"/", http.StripPrefix(prefix, c))
		mux.Handle(prefix, http.StripPrefix(prefix, c))
	}
	if len(servers) > 1 {
		mux.Handle("GET /{$}", http.RedirectHandler("/1/", http.StatusFound))
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-console-addr: %w", err)
	}
	hs := &http.Server{Handler: mux, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("web console", "err", err)
		}
	}()
	logger.Info("web console serving", "url", "http://"+ln.Addr().String()+"/", "writes", f.writes)
	// Close, not Shutdown: the event streams never go idle.
	return ln.Addr(), func(context.Context) error { return hs.Close() }, nil
}
