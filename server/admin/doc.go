// Package admin is zkraft's operations listener: ZooKeeper 3.8's
// AdminServer commands (/commands and /commands/<name>, JSON, with the
// long and short names), Prometheus metrics (/metrics, ZooKeeper's flat
// names, a registry of its own per server) and Kubernetes-style health
// probes (/livez, /readyz), on one HTTP listener beside the client port.
//
// It is a layer above package server: it reads a server only through the
// read-only Server interface, which *server.Server satisfies, and server
// never imports it. Nothing it does touches the request path; the figures
// it reports are recorded by the server as atomic counters and summaries.
//
//	srv, _ := server.New(cfg)
//	_ = srv.Start()
//	a, err := admin.New(srv, admin.Config{Addr: "127.0.0.1:8080"})
//	if err != nil { ... }
//	a.Handle("/console/", consoleHandler) // more handlers on the same listener
//	if err := a.Start(); err != nil { ... }
//	defer a.Close()
//
// Handle mounts further handlers (a web console, pprof) on the same
// listener, before or after Start, with net/http.ServeMux patterns; the
// paths the package serves itself are /commands, /commands/, /metrics,
// /livez and /readyz.
//
// Where zkraft's answers deliberately differ from ZooKeeper's, DESIGN.md
// in this directory says how and why.
package admin
