package servertest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/zkraft/zkraft/server"
)

// Kill stops member i at once, as a crash would: no leadership transfer,
// its clients' connections cut. An in-memory member loses its state; a
// durable one keeps it for Restart.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.srv == nil {
		c.t.Fatalf("servertest: member %d is not running", i)
	}
	c.faults.resume(i + 1) // a killed process is not paused
	m.srv.Close()
	m.srv = nil
}

// Pause stops member i, as SIGSTOP would stop its process: its links to
// the other members carry nothing either way, and every request its
// clients send, pings included, waits; connections stay open. The others
// elect a leader without it if it led; its clients' sessions expire on the
// leader if the pause outlasts their timeout. Resume undoes it; fault
// rules pause for a while with Rule.Pause.
func (c *Cluster) Pause(i int) { c.faults.pause(i+1, 0) }

// Resume lets a paused member go on: what its links and clients held goes
// first.
func (c *Cluster) Resume(i int) { c.faults.resume(i + 1) }

// Wipe deletes what a killed durable member stored (its Raft log and
// snapshots), as when a disk is replaced: Restart then starts it empty.
func (c *Cluster) Wipe(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.srv != nil {
		c.t.Fatalf("servertest: member %d is running: Kill it first", i)
	}
	if m.cfg.DataDir == "" {
		return // in memory: nothing is kept anyway
	}
	entries, err := os.ReadDir(m.cfg.DataDir)
	if err != nil {
		c.t.Fatalf("servertest: wipe member %d: %v", i, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(m.cfg.DataDir, e.Name())); err != nil {
			c.t.Fatalf("servertest: wipe member %d: %v", i, err)
		}
	}
}

// Restart starts a killed member again on the same addresses. An in-memory
// member starts empty and is caught up by the leader; a durable one
// recovers from its data dir. It returns once the member runs; use
// WaitForLeader to wait until it follows a leader.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.srv != nil {
		c.t.Fatalf("servertest: member %d is running", i)
	}
	var lns [3]net.Listener
	for j, addr := range []string{m.client, m.raft, m.fwd} {
		ln, err := listenAgain(memberListen[j], addr)
		if err != nil {
			c.t.Fatalf("servertest: restart member %d: listen on %s: %v", i, addr, err)
		}
		lns[j] = ln
	}
	if err := c.start(m, lns); err != nil {
		c.t.Fatalf("servertest: %v", err)
	}
}

// listenAgain binds an address a stopped member used; the kernel may take
// a moment to release it.
func listenAgain(listen func(network, addr string) (net.Listener, error), addr string) (net.Listener, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Partition splits the members into groups that cannot reach each other:
// Partition([]int{0}, []int{1, 2}) cuts member 0 off from members 1 and 2.
// Clients still reach every member.
func (c *Cluster) Partition(groups ...[]int) {
	ids := make([][]int, len(groups))
	for g, group := range groups {
		for _, i := range group {
			ids[g] = append(ids[g], i+1)
		}
	}
	c.links.Partition(ids...)
}

// Degrade makes the link between members i and j (Raft and forwarding
// traffic both ways) delay each message by up to delay and lose one with
// probability loss (a lost message breaks the connection it was on, as
// with TCP the rest of the stream is lost too); Heal restores it.
func (c *Cluster) Degrade(i, j int, delay time.Duration, loss float64) {
	c.links.Degrade(i+1, j+1, server.Degradation{Delay: delay, Loss: loss})
}

// StepClock steps member i's wall clock by d (back if negative), as an
// operator or an NTP step moves a machine's clock: what the member dates
// (ctime, mtime) and its TTL reaping follow it; session deadlines, which
// run on the monotonic clock, do not. Restarts keep the step.
func (c *Cluster) StepClock(i int, d time.Duration) { c.members[i].clock.Step(d) }

// Heal restores every link between members, cut or degraded.
func (c *Cluster) Heal() { c.links.Heal() }

// DropClientConnections closes every client connection of member i, as a
// network failure between clients and that member would; the sessions live
// on and their clients may resume them on any member.
func (c *Cluster) DropClientConnections(i int) {
	if srv := c.members[i].srv; srv != nil {
		srv.DropClientConnections()
	}
}

// ExpireSession expires a session now, cluster-wide, as if its timeout had
// run out. It reports whether the session existed.
func (c *Cluster) ExpireSession(id int64) bool {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := c.WaitForLeader(ctx)
	if err != nil {
		c.t.Fatalf("servertest: expire session: %v", err)
	}
	return c.members[leader].srv.ExpireSession(id)
}

// Close stops every member, after checking the replicas: each one's state
// is valid, and the ones that reach the leader's zxid have the same tree.
// t.Cleanup calls it; calling it earlier (a benchmark starting clusters in
// a loop) is fine, and later calls do nothing.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		c.faults.resumeAll()
		c.checkReplicas()
		for _, m := range c.members {
			if m.srv != nil {
				m.srv.Close()
			}
		}
	})
}

func (c *Cluster) checkReplicas() {
	running := slices.DeleteFunc(c.Servers(), func(s *server.Server) bool { return s == nil })
	for _, srv := range running {
		if err := srv.FSM().Check(); err != nil {
			c.t.Errorf("servertest: member %d state invariants broken: %v", srv.ServerID(), err)
		}
	}
	leader := c.Leader()
	if leader < 0 {
		return
	}
	target := c.members[leader].srv.FSM().LastZxid()
	deadline := time.Now().Add(5 * time.Second)
	want := c.members[leader].srv.FSM().Digest()
	for _, srv := range running {
		for srv.FSM().LastZxid() < target && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if srv.FSM().LastZxid() == target && srv.FSM().Digest() != want {
			c.t.Errorf("servertest: member %d has a different tree than the leader at zxid %#x", srv.ServerID(), target)
		}
	}
}

// memberListen binds a member's client, Raft and forward ports, in that
// order: the client port with the listener a server opens itself
// (server.ListenClients, keepalive as Config's default leaves it).
var memberListen = [3]func(network, addr string) (net.Listener, error){
	func(_, addr string) (net.Listener, error) { return server.ListenClients(addr, false) },
	net.Listen, net.Listen,
}
