// Package console is zkraft's web console: an http.Handler that shows a
// member's znode tree (expanded lazily), the data (text, JSON pretty
// printed, hex), Stat and ACL of a node, the sessions with their ephemerals
// and watches, every lock queue with its holder and waiters in order, and
// the cluster's members with their roles, applied zxid and lag; the page
// updates live from server-sent events that name the changed paths.
//
// The console is a layer above the server: it reads it through Source, a
// narrow interface that *server.Server provides (FromServer), and writes,
// when Options.Writes allows them, as any client does: over the wire, from
// a session that authenticates with Options.Auth, so the server's ACL checks
// apply. Reads check ACLs with the same identities. The page is plain
// HTML, CSS and JavaScript embedded in the binary: nothing to build, no CDN.
//
//	c, err := console.New(console.FromServer(srv), console.Options{})
//	mux.Handle("/console/", http.StripPrefix("/console", c))
//
// See DESIGN.md for the API and the change feed.
package console
