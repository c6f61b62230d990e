package server

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/zkraft/zkraft/tree"
)

// Version is the version zkraft reports in srvr, stat, mntr and envi: the
// ZooKeeper release whose behaviour it follows, then zkraft's own. It must
// match go-zookeeper's FLWSrvr pattern [A-Za-z0-9.-]+.
const Version = "3.8.0-zkraft-0.1.0"

// buildDate is printed as ZooKeeper's build date, in the pre-3.7 format
// (MM/dd/yyyy HH:mm zone) that go-zookeeper's FLWSrvr parses.
const buildDate = "11/22/2026 00:00 UTC"

var fourLetterWords = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "isro", "mntr", "ruok",
	"srst", "srvr", "stat", "wchc", "wchp", "wchs",
}

// fourLetterWord reports whether a first frame's length prefix spells a
// four-letter word this server answers.
func fourLetterWord(n int32) (string, bool) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	w := string(b[:])
	return w, slices.Contains(fourLetterWords, w)
}

// fourLetter answers a four-letter word and closes the connection once the
// text is written, as ZooKeeper does (clients read until EOF).
func (c *conn) fourLetter(word string) {
	s := c.srv
	var out string
	if !s.cfg.fourLetterAllowed(word) {
		out = word + " is not executed because it is not in the whitelist.\n"
		c.rejected(slog.LevelInfo, rejectFourLetterWord, slog.String("word", word))
	} else {
		out = s.fourLetterText(word, c)
	}
	c.omu.Lock()
	c.out = append(c.out, out...)
	c.omu.Unlock()
	c.finish()
	<-c.done
}

func (s *Server) fourLetterText(word string, self *conn) string {
	var b strings.Builder
	if !s.node.Serving() && !s.readOnlyActive() {
		switch word {
		case "srvr", "stat", "cons", "mntr", "conf", "dump", "wchs", "wchc", "wchp", "dirs":
			return "This ZooKeeper instance is not currently serving requests\n"
		}
	}
	switch word {
	case "ruok":
		return "imok"
	case "isro":
		switch {
		case s.readOnlyActive():
			return "ro"
		case s.node.Serving():
			return "rw"
		}
		return "null" // as ZooKeeper answers while no server runs

	case "srvr":
		s.writeSrvr(&b)
	case "stat":
		s.writeStat(&b, self)
	case "cons":
		s.writeCons(&b)
	case "mntr":
		s.writeMntr(&b)
	case "conf":
		s.writeConf(&b)
	case "envi":
		s.writeEnvi(&b)
	case "wchs":
		conns, paths, total := s.watches.counts()
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", conns, paths, total)
	case "wchc", "wchp":
		s.writeWatches(&b, word == "wchp")
	case "dump":
		s.writeDump(&b)
	case "dirs":
		data, logs := s.dirSizes()
		fmt.Fprintf(&b, "datadir_size: %d\nlogdir_size: %d\n", data, logs)
	case "crst":
		for _, c := range s.connList() {
			c.stats.reset()
		}
		b.WriteString("Connection stats reset.\n")
	case "srst":
		s.stats.reset()
		b.WriteString("Server stats reset.\n")
	}
	return b.String()
}

// connList returns the live connections that have a session, by session id.
func (s *Server) connList() []*conn {
	s.mu.Lock()
	out := make([]*conn, 0, len(s.bySession))
	for _, c := range s.bySession {
		out = append(out, c)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *conn) int { return strings.Compare(hexID(a.session), hexID(b.session)) })
	return out
}

func (s *Server) nodeCount() int {
	n := 0
	s.fsm.Read(func(t *tree.Tree) { n = t.Len() + 1 }) // ZooKeeper counts the root twice ("" and "/")
	return n
}

func (s *Server) writeSrvr(b *strings.Builder) {
	fmt.Fprintf(b, "Zookeeper version: %s, built on %s\n", Version, buildDate)
	s.writeCounters(b)
}

// writeCounters writes the srvr lines after the version line.
func (s *Server) writeCounters(b *strings.Builder) {
	lo, avg, hi := s.stats.lat.minAvgMax()
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", lo, avg, hi)
	fmt.Fprintf(b, "Received: %d\nSent: %d\n", s.stats.received.Load(), s.stats.sent.Load())
	fmt.Fprintf(b, "Connections: %d\nOutstanding: %d\n", s.connCount(), s.stats.outstanding.Load())
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", s.fsm.LastZxid(), s.mode(), s.nodeCount())
}

func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) writeStat(b *strings.Builder, self *conn) {
	fmt.Fprintf(b, "Zookeeper version: %s, built on %s\nClients:\n", Version, buildDate)
	for _, c := range s.connList() {
		fmt.Fprintf(b, " /%s[1](queued=%d,recved=%d,sent=%d)\n", c.remote, c.queued(), c.stats.recv.Load(), c.stats.sent.Load())
	}
	fmt.Fprintf(b, " /%s[0](queued=0,recved=%d,sent=0)\n\n", self.remote, self.stats.recv.Load())
	s.writeCounters(b)
}

func (c *conn) queued() int {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.inflight
}

// writeCons lists every connection with a session in ZooKeeper's full
// format. Unlike ZooKeeper, it leaves out connections without a session (the
// cons request's own among them), which go-zookeeper's FLWCons cannot parse.
func (s *Server) writeCons(b *strings.Builder) {
	for _, c := range s.connList() {
		st := &c.stats
		lo, _, hi := st.lat.minAvgMax()
		var avg int64
		if n := st.lat.count.Load(); n > 0 {
			avg = st.lat.sum.Load() / n
		}
		st.mu.Lock()
		lop, lcxid, lzxid, lresp, llat := st.lastOp, st.lastCxid, st.lastZxid, st.lastResp, st.lastLat
		st.mu.Unlock()
		if lop == "" {
			lop = "NA"
		}
		fmt.Fprintf(b, " /%s[1](queued=%d,recved=%d,sent=%d,sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d)\n",
			c.remote, c.queued(), st.recv.Load(), st.sent.Load(), uint64(c.session), lop, st.established.UnixMilli(),
			c.timeout.Milliseconds(), uint32(lcxid), uint64(lzxid), millis(lresp), llat, lo, avg, hi)
	}
	b.WriteString("\n")
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func (s *Server) writeMntr(b *strings.Builder) {
	lo, avg, hi := s.stats.lat.minAvgMax()
	var znodes, ephemerals int
	var dataSize int64
	s.fsm.Read(func(t *tree.Tree) {
		znodes, ephemerals, dataSize = t.Len()+1, t.EphemeralCount(), t.ApproximateDataSize()
	})
	kv := func(k string, v any) { fmt.Fprintf(b, "zk_%s\t%v\n", k, v) }
	kv("version", Version+", built on "+buildDate)
	kv("server_state", s.mode())
	if s.cfg.clustered() {
		kv("peer_state", peerState(s.mode()))
	}
	kv("ephemerals_count", ephemerals)
	kv("num_alive_connections", s.connCount())
	kv("avg_latency", avg)
	kv("outstanding_requests", s.stats.outstanding.Load())
	kv("znode_count", znodes)
	kv("global_sessions", len(s.fsm.Sessions()))
	kv("packets_sent", s.stats.sent.Load())
	kv("packets_received", s.stats.received.Load())
	kv("watch_count", s.watches.total())
	kv("min_latency", lo)
	kv("max_latency", hi)
	kv("approximate_data_size", dataSize)
	kv("local_sessions", 0)
	kv("uptime", time.Since(s.started).Milliseconds())
	kv("connection_rejected", s.stats.rejected.Load())
	kv("stale_sessions_expired", s.stats.expired.Load())
	kv("last_zxid", fmt.Sprintf("0x%x", s.fsm.LastZxid()))
	if s.cfg.clustered() && s.node.IsLeader() {
		followers, observers := s.node.SyncedLearners()
		kv("learners", followers+observers)
		kv("synced_followers", followers)
		kv("synced_non_voting_followers", 0)
		kv("synced_observers", observers)
		kv("pending_syncs", 0)
		kv("quorum_size", s.node.Voters())
	}
}

// peerState is ZooKeeper's zk_peer_state for a mode.
func peerState(mode string) string {
	switch mode {
	case "leader":
		return "leading - broadcast"
	case "observer":
		return "observing - broadcast"
	}
	return "following - broadcast"
}

func (s *Server) writeConf(b *strings.Builder) {
	_, port, _ := net.SplitHostPort(s.ConnectString())
	maxCnxns := max(s.cfg.MaxClientCnxns, 0)
	fmt.Fprintf(b, "clientPort=%s\nsecureClientPort=-1\n", port)
	if s.cfg.DataDir != "" {
		data, logs := s.dirSizes()
		fmt.Fprintf(b, "dataDir=%s\ndataDirSize=%d\n", absPath(s.cfg.DataDir), data)
		fmt.Fprintf(b, "dataLogDir=%s\ndataLogSize=%d\n", absPath(s.node.Config().LogDir()), logs)
	}
	fmt.Fprintf(b, "tickTime=%d\nmaxClientCnxns=%d\n", s.cfg.TickTime.Milliseconds(), maxCnxns)
	fmt.Fprintf(b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds(), s.cfg.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(b, "clientPortListenBacklog=-1\nserverId=%d\n", s.cfg.ServerID)
}

// dirSizes returns the bytes of the snapshots (the data directory's files)
// and of the Raft log; both 0 in memory.
func (s *Server) dirSizes() (data, logs int64) {
	if s.cfg.DataDir == "" {
		return 0, 0
	}
	logs = treeSize(s.node.Config().LogPath())
	data = treeSize(s.cfg.DataDir)
	if s.node.Config().LogDir() == s.cfg.DataDir {
		data -= logs
	}
	return data, logs
}

// treeSize adds up the sizes of the regular files under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (s *Server) writeEnvi(b *strings.Builder) {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	b.WriteString("Environment:\n")
	fmt.Fprintf(b, "zookeeper.version=%s, built on %s\n", Version, buildDate)
	fmt.Fprintf(b, "host.name=%s\ngo.version=%s\n", host, runtime.Version())
	fmt.Fprintf(b, "os.name=%s\nos.arch=%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "user.name=%s\nuser.home=%s\nuser.dir=%s\n", os.Getenv("USER"), home, wd)
	fmt.Fprintf(b, "os.memory.heap=%dMB\nos.memory.sys=%dMB\n", mem.HeapAlloc>>20, mem.Sys>>20)
}
