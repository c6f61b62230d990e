package chaos

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkraft/zkraft/integration/visibility"
	"github.com/zkraft/zkraft/server/raftstore/damage"
)

// Processes is a cluster of zkraft processes, each started from its own
// zoo.cfg and data dir as on separate hosts, on loopback ports the OS
// chose. It is a Target, a Pauser and a Wiper (kill -9, SIGSTOP/SIGCONT,
// a restart with the data dir emptied), a Damager and a Repairer (a
// durable member's files damaged while it is down), a Partitioner and a Degrader (each
// member reaches every other through proxies of its own, -peer-via, which
// cut, delay and break one link's traffic), and a ClockStepper (each
// member's wall clock runs off the machine's by what its
// -clock-offset-file says, which a restart keeps, as a host's clock). It
// starts the members itself
// rather than through integration/failover's Script, because it writes
// durable configurations, wipes data dirs and stops and resumes members,
// and it reaps the processes it killed.
type Processes struct {
	bin, dir string
	durable  bool
	clients  []string
	via      []string // each member's -peer-via: the proxies it dials the others through
	links    *linkProxies

	mu      sync.Mutex
	procs   []*exec.Cmd     // nil while killed
	offsets []time.Duration // each member's clock offset
}

// StartProcesses starts n members of bin under dir (which it creates), in
// memory when logStore is "", else durable (a Raft log in that store,
// "boltdb" or "wal", and snapshots in each data dir), with tickTime 2000 as
// ZooKeeper's default, and waits until every member serves and one leads.
// A start that fails (a port the OS handed to another process between
// choosing it and the member's listen) is tried again on new ports, twice.
func StartProcesses(bin, dir string, n int, logStore string) (*Processes, error) {
	return StartProcessesConfig(bin, dir, n, logStore, "")
}

// StartProcessesConfig is StartProcesses with extra lines in every member's
// zoo.cfg (snapCount=1000, say).
func StartProcessesConfig(bin, dir string, n int, logStore, extra string) (*Processes, error) {
	var err error
	for range 3 {
		var p *Processes
		if p, err = startProcesses(bin, dir, n, logStore, extra); err == nil {
			return p, nil
		}
		for i := range n { // the next try starts afresh
			_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("n%d", i+1)))
		}
	}
	return nil, err
}

func startProcesses(bin, dir string, n int, logStore, extra string) (*Processes, error) {
	durable := logStore != ""
	// The members' ports stay held while the proxies listen on ports of the
	// OS's choosing, which could otherwise be one of them (a member then
	// failed to start: "address already in use").
	ports, release, err := holdPorts(3 * n)
	if err != nil {
		return nil, err
	}
	defer release()
	var servers strings.Builder
	for i := range n {
		fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", i+1, ports[3*i+1], ports[3*i+2])
	}
	p := &Processes{bin: bin, dir: dir, durable: durable, procs: make([]*exec.Cmd, n),
		offsets: make([]time.Duration, n), links: newLinkProxies()}
	for i := range n {
		var via []string
		for j := range n {
			if j == i {
				continue
			}
			for _, port := range ports[3*j+1 : 3*j+3] { // Raft, then forwarding
				target := fmt.Sprintf("127.0.0.1:%d", port)
				proxy, err := p.links.add(i, j, target)
				if err != nil {
					p.links.close()
					return nil, err
				}
				via = append(via, target+"="+proxy)
			}
		}
		p.via = append(p.via, strings.Join(via, ","))
	}
	for i := range n {
		p.clients = append(p.clients, fmt.Sprintf("127.0.0.1:%d", ports[3*i]))
		data := p.dataDir(i)
		if err := os.MkdirAll(data, 0o755); err != nil {
			p.links.close()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), fmt.Appendf(nil, "%d\n", i+1), 0o644); err != nil {
			p.links.close()
			return nil, err
		}
		cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
			"maxClientCnxns=0\n4lw.commands.whitelist=*\n", ports[3*i])
		if durable {
			cfg += "dataDir=" + data + "\nzkraft.logStore=" + logStore + "\n"
		}
		cfg += extra
		if err := os.WriteFile(p.config(i), []byte(cfg+servers.String()), 0o644); err != nil {
			p.links.close()
			return nil, err
		}
	}
	release()
	for i := range n {
		if err := p.start(i); err != nil {
			p.Close()
			return nil, err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !p.allServing() || p.Leader() < 0 {
		if time.Now().After(deadline) {
			desc := p.Describe()
			p.Close()
			return nil, fmt.Errorf("chaos: %d members not all serving under a leader within a minute (logs in %s):\n%s", n, dir, desc)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p, nil
}

// allServing reports whether every member answers srvr as a leader or a
// follower.
func (p *Processes) allServing() bool {
	for _, addr := range p.clients {
		if mode, _ := visibility.ModeWithin(addr, time.Second); mode != "leader" && mode != "follower" {
			return false
		}
	}
	return true
}

func (p *Processes) member(i int) string  { return filepath.Join(p.dir, fmt.Sprintf("n%d", i+1)) }
func (p *Processes) dataDir(i int) string { return filepath.Join(p.member(i), "data") }

// DataDir returns member i's data dir.
func (p *Processes) DataDir(i int) string { return p.dataDir(i) }

// LogFile returns member i's server log.
func (p *Processes) LogFile(i int) string { return filepath.Join(p.member(i), "server.log") }
func (p *Processes) config(i int) string  { return filepath.Join(p.member(i), "zoo.cfg") }
func (p *Processes) clockFile(i int) string {
	return filepath.Join(p.member(i), "clock-offset")
}

// Addrs returns the members' client addresses.
func (p *Processes) Addrs() []string { return p.clients }

// Members implements Target.
func (p *Processes) Members() int { return len(p.clients) }

func (p *Processes) start(i int) error {
	log, err := os.OpenFile(filepath.Join(p.member(i), "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(p.bin, "-config", p.config(i), "-id", fmt.Sprint(i+1), "-peer-via", p.via[i],
		"-clock-offset-file", p.clockFile(i))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	p.mu.Lock()
	p.procs[i] = cmd
	p.mu.Unlock()
	return nil
}

// Leader implements Target: the member whose srvr says it leads, or -1.
func (p *Processes) Leader() int {
	for i, addr := range p.clients {
		if mode, _ := visibility.ModeWithin(addr, time.Second); mode == "leader" {
			return i
		}
	}
	return -1
}

// Durable implements Lagger.
func (p *Processes) Durable() bool { return p.durable }

// Lags implements Lagger, from each member's srvr Zxid.
func (p *Processes) Lags() []int64 {
	zxids := make([]int64, len(p.clients))
	for i, addr := range p.clients {
		zxids[i] = -1
		out, err := visibility.FourLetterWord(addr, "srvr", time.Second)
		if err != nil {
			continue
		}
		for line := range strings.Lines(out) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Zxid: "); ok {
				if z, err := strconv.ParseInt(strings.TrimPrefix(v, "0x"), 16, 64); err == nil {
					zxids[i] = z
				}
			}
		}
	}
	return LagsOf(zxids)
}

// Describe returns each member's state as its srvr answer gives it (mode
// and last zxid), or why it does not answer, for a failure report.
func (p *Processes) Describe() string {
	var b strings.Builder
	for i, addr := range p.clients {
		p.mu.Lock()
		running := p.procs[i] != nil
		p.mu.Unlock()
		fmt.Fprintf(&b, "member %d (%s, running %v, log %s):", i, addr, running, filepath.Join(p.member(i), "server.log"))
		out, err := visibility.FourLetterWord(addr, "srvr", time.Second)
		if err != nil {
			fmt.Fprintf(&b, " %v\n", err)
			continue
		}
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "Mode:") || strings.HasPrefix(line, "Zxid:") {
				b.WriteString(" " + strings.TrimSpace(line))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Kill implements Target: SIGKILL, and the process reaped.
func (p *Processes) Kill(i int) {
	p.mu.Lock()
	cmd := p.procs[i]
	p.procs[i] = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process dies as well
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// Restart implements Target.
func (p *Processes) Restart(i int) {
	if err := p.start(i); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: restart member %d: %v\n", i, err)
	}
}

// Pause implements Pauser.
func (p *Processes) Pause(i int) { p.signal(i, syscall.SIGSTOP) }

// Resume implements Pauser.
func (p *Processes) Resume(i int) { p.signal(i, syscall.SIGCONT) }

func (p *Processes) signal(i int, sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.procs[i]
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// Wipe implements Wiper: the data dir keeps only myid.
func (p *Processes) Wipe(i int) {
	entries, _ := os.ReadDir(p.dataDir(i))
	for _, e := range entries {
		if e.Name() != "myid" {
			_ = os.RemoveAll(filepath.Join(p.dataDir(i), e.Name()))
		}
	}
}

// Partition implements Partitioner: members that share a group reach each
// other, and no others (a member in two groups bridges them).
func (p *Processes) Partition(groups ...[]int) { p.links.partition(len(p.clients), groups...) }

// Degrade implements Degrader: the link between members i and j, both
// ways, delays each chunk up to delay and loses one with probability loss,
// which breaks its connection.
func (p *Processes) Degrade(i, j int, delay time.Duration, loss float64) {
	p.links.degrade(i, j, delay, loss)
}

// StepClock implements ClockStepper: the member's clock offset file says
// the new offset, and SIGUSR1 makes the member read it.
func (p *Processes) StepClock(i int, d time.Duration) {
	p.mu.Lock()
	p.offsets[i] += d
	offset := p.offsets[i]
	p.mu.Unlock()
	if err := os.WriteFile(p.clockFile(i), []byte(offset.String()+"\n"), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: step the clock of member %d: %v\n", i, err)
		return
	}
	// Only a member that serves has its handler in place: SIGUSR1 would
	// end one still starting. One that does not reads the file when it
	// next starts.
	if _, err := visibility.ModeWithin(p.clients[i], time.Second); err == nil {
		p.signal(i, syscall.SIGUSR1)
	}
}

// Heal implements Partitioner and Degrader.
func (p *Processes) Heal() { p.links.heal() }

// Close kills every member and stops the proxies.
func (p *Processes) Close() {
	for i := range p.procs {
		p.Kill(i)
	}
	p.links.close()
}

// holdPorts returns n distinct ports the OS had free, each held by a
// listener until release is called (more than once is fine).
func holdPorts(n int) (ports []int, release func(), err error) {
	var lns []net.Listener
	release = func() {
		for _, ln := range lns {
			ln.Close()
		}
		lns = nil
	}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			release()
			return nil, nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, release, nil
}

// Damage implements Damager: one kind of damage, chosen with r, to the
// killed member's files (durable members only).
func (p *Processes) Damage(i int, r *rand.Rand) (string, error) {
	if !p.durable {
		return "", damage.ErrNothing
	}
	kind := damage.Kinds[r.IntN(len(damage.Kinds))]
	what, err := damage.Apply(p.dataDir(i), kind, r)
	return string(kind) + ": " + what, err
}

// Repaired implements Repairer: the member answers mntr as a leader or a
// follower, with zk_repairing 0.
func (p *Processes) Repaired(i int) bool {
	out, err := visibility.FourLetterWord(p.clients[i], "mntr", time.Second)
	if err != nil {
		return false
	}
	serving, repairing := false, true
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "\t")
		switch k {
		case "zk_server_state":
			serving = v == "leader" || v == "follower"
		case "zk_repairing":
			repairing = v != "0"
		}
	}
	return serving && !repairing
}
