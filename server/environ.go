package server

import (
	"math"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// membershipKey starts the block of member lines in a cluster member's
// conf, as ZooKeeper prints it: "membership: " then the dynamic
// configuration, each line ending in a new line.
const membershipKey = "membership: "

// InMemory is what conf and the configuration command show as the data
// and log directories of a server that keeps its state in memory.
const InMemory = "(in memory)"

// DataDirs returns the directories the snapshots and the Raft log are kept
// in, made absolute, or InMemory for both.
func (s *Server) DataDirs() (data, log string) {
	if s.cfg.DataDir == "" {
		return InMemory, InMemory
	}
	return absPath(s.cfg.DataDir), absPath(s.node.Config().LogDir())
}

// DirSizes returns the bytes of the snapshots and of the Raft log on disk
// (dirs, conf); both 0 in memory.
func (s *Server) DirSizes() (data, log int64) { return s.dirSizes() }

// ClientPort returns the port clients connect to, 0 before Start.
func (s *Server) ClientPort() int {
	_, port, _ := net.SplitHostPort(s.ConnectString())
	n, _ := strconv.Atoi(port)
	return n
}

// Conf returns the lines of conf in ZooKeeper 3.8's order: the
// standalone ones, then on a cluster member the quorum settings, and last
// the membership (key membershipKey, whose value is the member lines and
// the configuration version, as /zookeeper/config holds them).
func (s *Server) Conf() []Property {
	data, logs := s.dirSizes()
	dataDir, logDir := s.DataDirs()
	c := &s.cfg
	out := []Property{
		{"clientPort", strconv.Itoa(s.ClientPort())}, {"secureClientPort", "-1"},
		{"dataDir", dataDir}, {"dataDirSize", itoa64(data)},
		{"dataLogDir", logDir}, {"dataLogSize", itoa64(logs)},
		{"tickTime", itoa64(c.TickTime.Milliseconds())}, {"maxClientCnxns", strconv.Itoa(max(c.MaxClientCnxns, 0))},
		{"minSessionTimeout", itoa64(c.MinSessionTimeout.Milliseconds())},
		{"maxSessionTimeout", itoa64(c.MaxSessionTimeout.Milliseconds())},
		{"clientPortListenBacklog", "-1"}, {"serverId", strconv.Itoa(c.ServerID)},
	}
	if !c.clustered() {
		return out
	}
	self, _ := s.node.Config().Self()
	for _, p := range s.node.Servers() {
		if p.ID == c.ServerID {
			self = p
		}
	}
	_, quorumPort, _ := net.SplitHostPort(self.RaftAddr)
	_, electionPort, _ := net.SplitHostPort(self.ForwardAddr)
	peerType := "0"
	if self.Observer {
		peerType = "1"
	}
	return append(out,
		Property{"initLimit", strconv.Itoa(c.InitLimit)}, Property{"syncLimit", strconv.Itoa(c.SyncLimit)},
		Property{"electionAlg", "raft"}, Property{"electionPort", electionPort}, Property{"quorumPort", quorumPort},
		Property{"peerType", peerType}, Property{membershipKey, "\n" + string(s.fsm.Config())})
}

// Environment returns envi's lines: ZooKeeper 3.8's keys, with the Go
// runtime's figures where ZooKeeper gives the JVM's (java.version is the
// Go version, java.home the executable's directory, os.memory.* the Go
// heap).
func (s *Server) Environment() []Property {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	exe, _ := os.Executable()
	var userName, home string
	if u, err := user.Current(); err == nil {
		userName, home = u.Username, u.HomeDir
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		var si unix.Sysinfo_t
		if unix.Sysinfo(&si) == nil {
			limit = int64(si.Totalram) * int64(si.Unit)
		}
	}
	mb := func(n uint64) string { return strconv.FormatUint(n>>20, 10) + "MB" }
	return []Property{
		{"zookeeper.version", Version + ", built on " + buildDate},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "Go " + runtime.Compiler},
		{"java.home", filepath.Dir(exe)},
		{"java.class.path", exe},
		{"java.library.path", os.Getenv("LD_LIBRARY_PATH")},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", runtime.Compiler},
		{"os.name", osName()},
		{"os.arch", runtime.GOARCH},
		{"os.version", unix.ByteSliceToString(uts.Release[:])},
		{"user.name", userName},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", mb(mem.HeapIdle - mem.HeapReleased)},
		{"os.memory.max", mb(uint64(limit))},
		{"os.memory.total", mb(mem.HeapSys)},
	}
}

// osName is GOOS as Java's os.name spells it.
func osName() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "freebsd":
		return "FreeBSD"
	}
	return runtime.GOOS
}
