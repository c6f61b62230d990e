package console

import (
	"crypto/sha1"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// ErrBadAuth means a credential the console cannot use: it takes digest
// credentials, user:password.
var ErrBadAuth = errors.New("console: auth must be digest:user:password")

// Source is what the console reads of a server. *server.Server provides
// it through FromServer; the console needs nothing else.
type Source interface {
	// Read runs fn with the znode tree, under the lock that applying a
	// command takes; fn must not keep the tree (raftfsm.FSM.Read).
	Read(fn func(t *tree.Tree))
	// Sessions returns the replicated sessions, ordered by id.
	Sessions() []raftfsm.Session
	// Watches returns the watches this member's clients hold.
	Watches() []server.Watch
	// Cluster returns the members and the sessions' whereabouts, as the
	// leader sees them if it can be asked (server.Server.ClusterWide).
	Cluster() server.ClusterView
	// Local returns the members as this member sees them, without asking
	// the leader (server.Server.Cluster): for this member's own figures.
	Local() server.ClusterView
	// Observe calls fn with each change applied from now on until stop is
	// called; fn must not block (server.Server.Observe).
	Observe(fn func(server.Change)) (stop func())
	// Changed returns a channel closed at the next change of any kind,
	// watches included (server.Server.Changed).
	Changed() <-chan struct{}
	// ConnectString is the member's client address, which the console's
	// writes connect to.
	ConnectString() string
	// SuperDigest is the configured super user's digest ("super:<hash>"),
	// empty if none: credentials matching it read everything.
	SuperDigest() string
}

// FromServer returns s as a Source.
func FromServer(s *server.Server) Source { return serverSource{s} }

type serverSource struct{ *server.Server }

func (s serverSource) Read(fn func(t *tree.Tree))  { s.FSM().Read(fn) }
func (s serverSource) Sessions() []raftfsm.Session { return s.FSM().Sessions() }
func (s serverSource) SuperDigest() string         { return s.Config().SuperDigest }

// askLeaderFor bounds how long the console waits for the leader's view.
const askLeaderFor = time.Second

func (s serverSource) Cluster() server.ClusterView { return s.ClusterWide(askLeaderFor) }
func (s serverSource) Local() server.ClusterView   { return s.Server.Cluster() }

// Options configure a console. The zero value is a read-only console that
// reads as an unauthenticated client.
type Options struct {
	// Writes allows creating, changing and deleting nodes from the page.
	// Each write is a client request over the wire, from a session of its
	// own that authenticates with Auth first, so the server's ACL checks
	// apply as to any client.
	Writes bool
	// Auth are the credentials the console reads and writes with, as a
	// client's addAuth: scheme "digest" with "user:password". Reads see
	// what a client holding these identities could read.
	Auth []Auth
}

// Auth is one addAuth credential.
type Auth struct {
	Scheme     string // "digest"
	Credential string // "user:password"
}

// ParseAuth parses "scheme:credential", as zkCli's addauth takes it.
func ParseAuth(s string) (Auth, error) {
	scheme, cred, ok := strings.Cut(s, ":")
	if !ok || scheme != tree.SchemeDigest || !strings.Contains(cred, ":") {
		return Auth{}, ErrBadAuth
	}
	return Auth{Scheme: scheme, Credential: cred}, nil
}

//go:embed assets
var assets embed.FS

// Console is the web console's http.Handler. Mount it under a prefix with
// http.StripPrefix; it serves the page at "/" and its API under "/api/".
type Console struct {
	src  Source
	opts Options
	ids  []wire.Id // the identities reads check ACLs with
	hub  *hub
	mux  *http.ServeMux
}

// New returns a console of src.
func New(src Source, opts Options) (*Console, error) {
	for _, a := range opts.Auth {
		if a.Scheme != tree.SchemeDigest || !strings.Contains(a.Credential, ":") {
			return nil, ErrBadAuth
		}
	}
	c := &Console{src: src, opts: opts, ids: readIDs(opts.Auth, src.SuperDigest()), hub: newHub(src)}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/children", c.children)
	mux.HandleFunc("GET /api/node", c.node)
	mux.HandleFunc("GET /api/sessions", c.sessions)
	mux.HandleFunc("GET /api/locks", c.locks)
	mux.HandleFunc("GET /api/cluster", c.cluster)
	mux.HandleFunc("GET /api/events", c.events)
	mux.HandleFunc("GET /api/info", c.info)
	mux.HandleFunc("POST /api/node", c.write(c.create))
	mux.HandleFunc("PUT /api/node", c.write(c.setData))
	mux.HandleFunc("DELETE /api/node", c.write(c.delete))
	c.mux = mux
	return c, nil
}

// ServeHTTP serves the page and its API.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path == "" { // mounted with http.StripPrefix("/console", ...), asked for "/console"
		p, _, _ := strings.Cut(r.RequestURI, "?")
		http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// readIDs are the identities the credentials give a client, as the
// server's addAuth grants them.
func readIDs(auth []Auth, superDigest string) []wire.Id {
	var ids []wire.Id
	for _, a := range auth {
		user, _, _ := strings.Cut(a.Credential, ":")
		sum := sha1.Sum([]byte(a.Credential))
		id := user + ":" + base64.StdEncoding.EncodeToString(sum[:])
		if superDigest != "" && id == superDigest {
			ids = append(ids, wire.Id{Scheme: tree.SchemeSuper})
		}
		ids = append(ids, wire.Id{Scheme: tree.SchemeDigest, ID: id})
	}
	return ids
}

// info tells the page how the console is configured.
func (c *Console) info(w http.ResponseWriter, r *http.Request) {
	v := c.src.Local()
	users := []string{}
	for _, a := range c.opts.Auth {
		user, _, _ := strings.Cut(a.Credential, ":")
		users = append(users, a.Scheme+":"+user)
	}
	role := ""
	for _, m := range v.Members {
		if m.ID == v.Self {
			role = m.Role
		}
	}
	writeJSON(w, map[string]any{"writes": c.opts.Writes, "identities": users, "member": v.Self, "role": role,
		"client": c.src.ConnectString()})
}

// apiError is the body of every error the API answers.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"` // the ZooKeeper code, where one applies
}

func httpError(w http.ResponseWriter, status int, code, format string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apiError{Error: format, Code: code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}
