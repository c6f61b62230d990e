package server

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
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
	c.appendLocked([]byte(out))
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

// writeMntr writes Monitor's figures as ZooKeeper's mntr does: a line
// "zk_<key>\t<value>" each, a summary as its avg_, min_, max_, cnt_ and
// sum_ lines (and p50_ to p999_ for those with percentiles).
func (s *Server) writeMntr(b *strings.Builder) {
	for _, m := range s.Monitor() {
		for _, kv := range m.Pairs() {
			fmt.Fprintf(b, "zk_%s\t%s\n", kv.Key, kv.Value)
		}
	}
}

// Property is one key and value, as a line of mntr, conf or envi shows it.
type Property struct{ Key, Value string }

// Pairs returns the mntr keys and values of m: one for a single value,
// five or nine for a summary.
func (m Metric) Pairs() []Property {
	if m.Kind != KindSummary {
		return []Property{{m.Name, formatValue(m.Value)}}
	}
	v := m.Summary
	out := []Property{{"avg_" + m.Name, javaDouble(v.Avg)},
		{"min_" + m.Name, itoa64(v.Min)}, {"max_" + m.Name, itoa64(v.Max)},
		{"cnt_" + m.Name, itoa64(v.Count)}, {"sum_" + m.Name, itoa64(v.Sum)}}
	if v.Percentiles {
		out = append(out, Property{"p50_" + m.Name, itoa64(v.P50)}, Property{"p95_" + m.Name, itoa64(v.P95)},
			Property{"p99_" + m.Name, itoa64(v.P99)}, Property{"p999_" + m.Name, itoa64(v.P999)})
	}
	return out
}

func formatValue(v any) string {
	switch v := v.(type) {
	case float64:
		return javaDouble(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

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
	for _, p := range s.Conf() {
		if p.Key == membershipKey {
			fmt.Fprintf(b, "%s%s", p.Key, p.Value)
			continue
		}
		fmt.Fprintf(b, "%s=%s\n", p.Key, p.Value)
	}
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
	b.WriteString("Environment:\n")
	for _, p := range s.Environment() {
		fmt.Fprintf(b, "%s=%s\n", p.Key, p.Value)
	}
}
