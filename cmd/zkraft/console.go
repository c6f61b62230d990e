package main

import (
	"flag"
	"net"
	"net/http"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/console"
)

// consoleFlags are the web console's flags. The console lives on the admin
// listener, at /console/.
type consoleFlags struct {
	off    bool
	writes bool
	auth   []console.Auth
}

func (f *consoleFlags) register(fs *flag.FlagSet) {
	fs.BoolFunc("no-console", "do not serve the web console at /console/ on the admin listener", func(string) error {
		f.off = true
		return nil
	})
	fs.BoolVar(&f.writes, "console-writes", false, "let the web console create, change and delete nodes, through the same ACL checks as any client")
	fs.Func("console-auth", "credentials the web console reads and writes with, `digest:user:password` (repeatable)", func(s string) error {
		a, err := console.ParseAuth(s)
		if err == nil {
			f.auth = append(f.auth, a)
		}
		return err
	})
}

// mountConsole serves srv's web console at /console/ on its admin listener.
func mountConsole(a *admin.Admin, srv *server.Server, f consoleFlags) error {
	if f.off {
		return nil
	}
	c, err := console.New(console.FromServer(srv), console.Options{Writes: f.writes, Auth: f.auth})
	if err != nil {
		return err
	}
	a.Handle("/console/", http.StripPrefix("/console", c))
	a.Handle("GET /console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
	a.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	return nil
}

// consoleURL is the address a browser on this machine opens the console
// of admin listener a at: a wildcard address is reached on loopback.
func consoleURL(a *admin.Admin) string {
	host, port, err := net.SplitHostPort(a.Addr().String())
	if err != nil {
		return a.URL() + "/console/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/console/"
}

// advertisedConsoleURL is the console's URL as the other members' consoles
// link to it: an admin listener on every interface is named by this
// member's host in the ensemble (its Raft address), which a browser on
// another machine can reach.
func advertisedConsoleURL(a *admin.Admin, srv *server.Server) string {
	host, port, err := net.SplitHostPort(a.Addr().String())
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsUnspecified() {
		return consoleURL(a)
	}
	for _, p := range srv.Config().Servers {
		if p.ID != srv.Config().ServerID {
			continue
		}
		if h, _, err := net.SplitHostPort(p.RaftAddr); err == nil && h != "" {
			return "http://" + net.JoinHostPort(h, port) + "/console/"
		}
	}
	return consoleURL(a)
}
