package admin

import (
	"fmt"
	"net/http"
)

// livez answers 200 while the server runs: the process is alive and the
// server not shut down. A Kubernetes liveness probe restarts a pod whose
// livez fails.
func (a *Admin) livez(w http.ResponseWriter, _ *http.Request) {
	if a.srv.Closed() {
		http.Error(w, "server is shut down", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// readyz answers 200 when the member should get clients: it serves, a
// leader is known, and it has applied everything that was committed when
// it first knew one (so a member that joins, or restarts, is not ready
// until it has caught up). Otherwise 503, with the reason.
func (a *Admin) readyz(w http.ResponseWriter, _ *http.Request) {
	if reason := a.notReady(); reason != "" {
		http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// notReady returns why the member is not ready, "" if it is.
func (a *Admin) notReady() string {
	st := a.srv.RaftStatus()
	switch {
	case a.srv.Closed():
		return "server is shut down"
	case !a.srv.Serving():
		return "not serving clients (" + a.srv.Mode() + ")"
	case len(a.srv.Config().Servers) == 0:
		return "" // a standalone server has all there is once it serves
	case st.LeaderID == 0:
		return "no leader is known"
	case !st.Joined:
		return "has not joined a leader yet"
	case st.AppliedIndex < st.JoinCommitIndex:
		return fmt.Sprintf("catching up: applied %d of %d", st.AppliedIndex, st.JoinCommitIndex)
	case st.Repairing:
		return fmt.Sprintf("repairing: getting back from the leader the log entries a damaged disk lost (applied %d)", st.AppliedIndex)
	}
	return ""
}
