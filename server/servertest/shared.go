package servertest

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest/internal/chroot"
	"github.com/zkraft/zkraft/tree"
)

// Namespace is a test's own part of a server that the tests of a binary
// share (Shared): a znode the test's clients see as their root, served on
// a listener of its own.
//
// Isolation. Every path a namespace's client sends is put under the
// namespace's root, and every path it gets back (created paths, watch
// events, its ephemerals) has the root taken off, as a chroot does in the
// Java client. So one test's clients cannot read, write or watch another's
// znodes; its ephemerals and watches are under its own root; and its
// Inspector shows its own subtree, sessions and watches only. When the
// test ends, its sessions are expired and its subtree deleted.
//
// What a shared server cannot isolate: time and faults (WithFakeClock and
// fault rules need a server of the test's own: NewServer); the server's
// configuration; the four-letter words, which answer for the whole server
// (cons, wchp and mntr show every test's sessions and watches); session
// ids, which come from one sequence; and load, since every test's requests
// share the server's cores. /zookeeper is outside every namespace, as it
// is outside a client's chroot; /zookeeper/config is read as the server's,
// as the Java client's getConfig reads it whatever its chroot.
type Namespace struct {
	t     testing.TB
	srv   *server.Server
	proxy *chroot.Proxy
}

// Shared returns a namespace of the test's own on a standalone server
// shared by the tests of the binary, which starts with the first namespace
// and stops when the last one's test has ended. Its ConnectString works
// with any client, go-zookeeper included; clients that take a chroot
// (Java, Curator, kazoo) may use ServerAddr() + Chroot() instead. Hundreds
// of t.Parallel tests then pay a server's start once.
func Shared(t testing.TB) *Namespace {
	t.Helper()
	srv, admin, release := shared.acquire(t)
	root := shared.root(t.Name())
	if err := admin.Create(root); err != nil {
		release()
		t.Fatalf("servertest: shared namespace %s: %v", root, err)
	}
	proxy, err := chroot.Listen(root, srv.ConnectString(), srv.Config().JuteMaxBuffer+(64<<10))
	if err != nil {
		release()
		t.Fatalf("servertest: shared namespace: %v", err)
	}
	ns := &Namespace{t: t, srv: srv, proxy: proxy}
	t.Cleanup(func() {
		defer release()
		proxy.Close()
		for _, s := range ns.Inspect().Sessions() {
			srv.ExpireSession(s.ID)
		}
		if err := admin.Remove(root, postOrder(srv, root)); err != nil {
			t.Errorf("servertest: removing shared namespace %s: %v", root, err)
		}
	})
	return ns
}

// ConnectString returns the namespace's own address, where clients see its
// root as "/".
func (n *Namespace) ConnectString() string { return n.proxy.Addr() }

// Chroot returns the namespace's root on the shared server, for clients
// that take a chroot in their connect string: ServerAddr() + Chroot().
func (n *Namespace) Chroot() string { return n.proxy.Root() }

// ServerAddr returns the shared server's own client address, where paths
// are not rooted at the namespace.
func (n *Namespace) ServerAddr() string { return n.srv.ConnectString() }

// Sessions returns the ids of the namespace's live sessions: those made
// or resumed through its address, and those that own ephemerals or hold
// watches under its root (clients that use its chroot).
func (n *Namespace) Sessions() []int64 {
	var ids []int64
	for _, s := range n.Inspect().Sessions() {
		ids = append(ids, s.ID)
	}
	return ids
}

// ExpireSession expires one of the namespace's sessions now, as if its
// timeout had run out. It reports false for a session that is not the
// namespace's or does not exist.
func (n *Namespace) ExpireSession(id int64) bool {
	return slices.Contains(n.Sessions(), id) && n.srv.ExpireSession(id)
}

// DropClientConnections closes the connections of the namespace's
// clients, as a network failure between them and the server would; their
// sessions live on, and the clients resume them through ConnectString.
// Other tests' clients keep theirs.
func (n *Namespace) DropClientConnections() { n.proxy.DropConnections() }

// Inspect returns an Inspector of the namespace: its subtree, with paths
// relative to its root, and its own sessions and watches.
func (n *Namespace) Inspect() *Inspector {
	return &Inspector{t: n.t, srv: n.srv, root: n.proxy.Root(), owns: n.proxy.Owns}
}

// shared is the server Shared hands out namespaces of.
var shared sharedServer

type sharedServer struct {
	mu    sync.Mutex // guards the fields below
	srv   *server.Server
	admin *chroot.Admin // a superuser's session: makes and removes namespaces
	users int
	seq   int
}

// acquire returns the shared server, starting it if no test holds it, its
// Admin, and a release to call when the test is done with it.
func (s *sharedServer) acquire(t testing.TB) (*server.Server, *chroot.Admin, func()) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		password := rand.Text()
		sum := sha1.Sum([]byte("super:" + password))
		cfg := testConfig(t, nil, func(c *server.Config) {
			c.Logger = nil // it outlives any one test's output
			c.SuperDigest = "super:" + base64.StdEncoding.EncodeToString(sum[:])
		})
		srv, err := server.New(cfg)
		if err == nil {
			err = srv.Start()
		}
		if err != nil {
			t.Fatalf("servertest: shared server: %v", err)
		}
		s.srv, s.admin = srv, chroot.NewAdmin(srv.ConnectString(), "super:"+password)
	}
	s.users++
	srv, admin := s.srv, s.admin
	var once sync.Once
	return srv, admin, func() { once.Do(func() { s.release(t) }) }
}

// release lets go of the server; the last test to hold it stops it and
// checks its state.
func (s *sharedServer) release(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users--; s.users > 0 {
		return
	}
	srv := s.srv
	s.srv = nil
	s.admin.Close()
	srv.Close()
	if err := srv.FSM().Check(); err != nil {
		t.Errorf("servertest: the shared server's state invariants broke: %v", err)
	}
}

// postOrder lists the paths of the subtree at root, children before
// parents, as the server holds it now.
func postOrder(srv *server.Server, root string) []string {
	var out []string
	var walk func(z *Znode)
	walk = func(z *Znode) {
		for _, c := range z.Children {
			walk(c)
		}
		out = append(out, z.Path)
	}
	if z := (&Inspector{srv: srv, root: "/"}).Tree(root); z != nil {
		walk(z)
	}
	return out
}

// root returns a fresh namespace root for a test: /servertest/<name>-<n>,
// the name made a valid znode name.
func (s *sharedServer) root(name string) string {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	clean := strings.Map(func(r rune) rune {
		if r == '/' || !tree.ValidPath("/a"+string(r)) { // what ZooKeeper refuses in a name
			return '_'
		}
		return r
	}, strings.ToValidUTF8(name, "_"))
	return fmt.Sprintf("%s/%s-%d", sharedParent, clean, n)
}

// sharedParent holds every namespace's root.
const sharedParent = "/servertest"
