//go:build realzk

package integration

// Differential comparison of reconfig: the same script against a zkraft
// cluster (servertest, reconfig allowed, the tests' super user) and a real
// ZooKeeper 3.8 ensemble started with reconfigEnabled=true and the same
// super digest. Each run removes one follower with an incremental reconfig
// and adds it back, with ZooKeeper's refusals along the way, and records
// what its clients see: the answers, /zookeeper/config (member ids and
// ports normalized: the member removed is "G", the others "K1" and "K2" in
// id order), its Stat, the watch event, and what happens to a client of
// the member removed. Both runs leave the ensemble as they found it, so the
// test may run again on the same reference:
//
//	/work/shared/tools/realzk cluster /tmp/rzr 14181
//	/work/shared/tools/realzk stop /tmp/rzr
//	for i in 1 2 3; do
//	  printf 'reconfigEnabled=true\nDigestAuthenticationProvider.superDigest=%s\n' \
//	    'super:D/InIHSb7yEEbrWz8b9l71RjZJU=' >>/tmp/rzr/n$i/zoo.cfg
//	  /work/shared/tools/realzk start-member /tmp/rzr $i
//	done
//	ZKRAFT_REALZK_RECONFIG=127.0.0.1:14181,127.0.0.1:14182,127.0.0.1:14183 \
//	    go test -tags realzk -count=1 -run RealzkReconfig -v ./integration

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

const realzkReconfigEnv = "ZKRAFT_REALZK_RECONFIG"

func TestRealzkReconfig(t *testing.T) {
	ref := os.Getenv(realzkReconfigEnv)
	if ref == "" {
		t.Skip("differential reconfig test against a real ZooKeeper ensemble: set " + realzkReconfigEnv +
			" (see realzk_reconfig_test.go)")
	}
	var runs [2][]string
	ok := t.Run("zkraft", func(t *testing.T) {
		c := servertest.NewCluster(t, 3, servertest.WithConfig(func(cfg *server.Config) {
			cfg.ReconfigEnabled, cfg.SuperDigest = true, superDigest
		}))
		runs[0] = rzReconfigScript(t, []string{c.Addr(0), c.Addr(1), c.Addr(2)})
	})
	ok = t.Run("zookeeper", func(t *testing.T) {
		runs[1] = rzReconfigScript(t, strings.Split(ref, ","))
	}) && ok
	require.True(t, ok, "a run did not complete; nothing compared")
	differ := 0
	for i := range max(len(runs[0]), len(runs[1])) {
		var a, b string
		if i < len(runs[0]) {
			a = runs[0][i]
		}
		if i < len(runs[1]) {
			b = runs[1][i]
		}
		if a != b {
			differ++
			t.Errorf("step %d differs:\n  zkraft:    %s\n  zookeeper: %s", i, a, b)
		} else {
			t.Logf("step %d: %s", i, a)
		}
	}
	t.Logf("reconfig: %d steps compared, %d differences", len(runs[1]), differ)
}

// rzReconfigScript runs the reconfig script against the three members at
// addrs (client addresses, member i+1 at addrs[i] as in zoo.cfg order) and
// returns its observations.
func rzReconfigScript(t *testing.T, addrs []string) []string {
	var obs []string
	note := func(format string, args ...any) {
		obs = append(obs, fmt.Sprintf(format, args...))
		t.Log(obs[len(obs)-1])
	}

	// Find the members' ids and the leader; remove a follower, and keep the
	// clients on the other two members.
	leader := -1
	for i, a := range addrs {
		if strings.Contains(fourLetterWord(t, a, "srvr"), "Mode: leader") {
			leader = i
		}
	}
	require.GreaterOrEqual(t, leader, 0, "no leader among %v", addrs)
	gone := (leader + 1) % 3
	stay := []int{leader, (leader + 2) % 3}
	slices.Sort(stay)

	connect := func(addr string, super bool) (*zk.Conn, <-chan zk.Event) {
		c, events, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(rzQuietLogger{}))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		waitState(t, events, zk.StateHasSession)
		if super {
			require.NoError(t, c.AddAuth("digest", []byte("super:test")))
		}
		return c, events
	}
	S, _ := connect(addrs[stay[0]], true)
	P, _ := connect(addrs[stay[1]], false)
	W, _ := connect(addrs[stay[1]], false)
	G, gEvents := connect(addrs[gone], false)

	config, st, err := S.Get("/zookeeper/config")
	require.NoError(t, err)
	ids := rzMemberIDs(t, string(config))
	require.Len(t, ids, 3)
	goneID := ids[gone]
	goneLine, _, _ := strings.Cut(configLine(t, string(config), goneID), ";")
	goneLine += ";" + hostPort(t, addrs[gone])
	names := map[int]string{goneID: "G", ids[stay[0]]: "K1", ids[stay[1]]: "K2"}
	if ids[stay[0]] > ids[stay[1]] {
		names[ids[stay[0]]], names[ids[stay[1]]] = "K2", "K1"
	}
	show := func(label string, data []byte, st *zk.Stat) {
		text := string(data)
		if label == "initial" {
			// What earlier runs against the same reference added back
			// carries the client address zoo.cfg's lines lack.
			text = rzNoClientAddrs.ReplaceAllString(text, "")
		}
		note("%s: config=%q stat={version=%d cversion=%d aversion=%d czxid=%d ephemeralOwner=%d numChildren=%d "+
			"mzxid=version:%v mzxid>0:%v}", label, rzNormalConfig(text, names), st.Version, st.Cversion,
			st.Aversion, st.Czxid, st.EphemeralOwner, st.NumChildren, rzConfigVersion(data) == st.Mzxid, st.Mzxid > 0)
	}
	show("initial", config, st)
	version := st.Mzxid

	reconfig := func(label string, c *zk.Conn, joining, leaving []string, from int64) ([]byte, *zk.Stat) {
		st, err := c.IncrementalReconfig(joining, leaving, from)
		note("%s: err=%s", label, rzErr(err))
		if err != nil {
			return nil, nil
		}
		data, got, err := S.Get("/zookeeper/config")
		require.NoError(t, err)
		note("%s: reply stat is the config's: %v", label, st.Mzxid == got.Mzxid && st.Version == got.Version)
		version = got.Mzxid
		return data, got
	}
	goneStr := strconv.Itoa(goneID)
	reconfig("not super", P, nil, []string{goneStr}, -1)
	reconfig("bad version", S, nil, []string{goneStr}, version+0x12345)
	reconfig("all leave", S, nil, []string{strconv.Itoa(ids[0]), strconv.Itoa(ids[1]), strconv.Itoa(ids[2])}, -1)
	reconfig("joiner without client port", S, []string{"server.9=127.0.0.1:1:2"}, nil, -1)
	reconfig("leaving not a number", S, nil, []string{"x"}, -1)
	reconfig("three unreachable joiners", S, unreachable(t, 7, 8, 9), nil, -1)
	reconfig("nothing to change", S, nil, nil, -1)

	_, _, watch, err := W.GetW("/zookeeper/config")
	require.NoError(t, err)
	before := version
	data, st := reconfig("remove a follower", S, nil, []string{goneStr}, version)
	require.NotNil(t, st, "the reconfig that removes a follower failed")
	t.Cleanup(func() { // leave the ensemble as it was, whatever failed
		if config, _, err := S.Get("/zookeeper/config"); err == nil && !strings.Contains(string(config), goneLine) {
			_, err := S.IncrementalReconfig([]string{goneLine}, nil, -1)
			t.Logf("adding member %d back after a failure: %v", goneID, err)
		}
	})
	show("after remove", data, st)
	select {
	case ev := <-watch:
		note("watch: %v %s", ev.Type, ev.Path)
	case <-time.After(10 * time.Second):
		note("watch: none within 10s")
	}
	reconfig("the old version", S, nil, nil, before)
	_, err = S.Create("/zkraft-reconfig-after-remove", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	note("a write without the member removed: err=%s", rzErr(err))
	_, err = G.Sync("/")
	ok, _, err2 := G.Exists("/zkraft-reconfig-after-remove")
	note("the member removed follows the writes: sync err=%s, exists %v err=%s", rzErr(err), ok, rzErr(err2))
	note("the member removed says %s", rzMode(fourLetterWord(t, addrs[gone], "srvr")))
	note("its client was disconnected: %v", rzSawState(gEvents, zk.StateDisconnected))

	data, st = reconfig("add it back", S, []string{goneLine}, nil, version)
	require.NotNil(t, st, "the reconfig that adds the follower back failed")
	show("after add", data, st)
	_, err = S.Set("/zkraft-reconfig-after-remove", []byte("back"), -1)
	note("a write with the member back: err=%s", rzErr(err))
	_, err = G.Sync("/")
	data, _, err2 = G.Get("/zkraft-reconfig-after-remove")
	note("the member added back reads it: sync err=%s, data %q err=%s", rzErr(err), data, rzErr(err2))
	note("the member added back says %s", rzMode(fourLetterWord(t, addrs[gone], "srvr")))
	note("its client was disconnected: %v", rzSawState(gEvents, zk.StateDisconnected))
	return obs
}

// rzSawState reports whether the events that have arrived include a
// session event of state want.
func rzSawState(events <-chan zk.Event, want zk.State) bool {
	saw := false
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return saw
			}
			saw = saw || ev.Type == zk.EventSession && ev.State == want
		default:
			return saw
		}
	}
}

// rzMode returns srvr's Mode line, or what the member said instead.
func rzMode(srvr string) string {
	for l := range strings.Lines(srvr) {
		if strings.HasPrefix(l, "Mode: ") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(srvr)
}

var rzServerLine = regexp.MustCompile(`^server\.(\d+)=`)

// rzMemberIDs returns the ids of the members a configuration lists, in
// its order (zoo.cfg's, by client port).
func rzMemberIDs(t *testing.T, config string) []int {
	var ids []int
	for l := range strings.Lines(config) {
		if m := rzServerLine.FindStringSubmatch(l); m != nil {
			id, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			ids = append(ids, id)
		}
	}
	return ids
}

var (
	rzPort          = regexp.MustCompile(`:\d+`)
	rzNoClientAddrs = regexp.MustCompile(`(?m);.*$`)
)

// rzNormalConfig writes a configuration with member ids named (names) and
// ports and the version hidden, its lines sorted.
func rzNormalConfig(config string, names map[int]string) string {
	var lines []string
	for l := range strings.Lines(config) {
		l = strings.TrimSpace(l)
		if m := rzServerLine.FindStringSubmatch(l); m != nil {
			id, _ := strconv.Atoi(m[1])
			l = "server." + names[id] + "=" + l[len(m[0]):]
		}
		if strings.HasPrefix(l, "version=") {
			l = "version=<zxid>"
		}
		lines = append(lines, rzPort.ReplaceAllString(l, ":<port>"))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// rzConfigVersion returns the version a configuration names, -1 if none.
func rzConfigVersion(config []byte) int64 {
	for l := range strings.Lines(string(config)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "version="); ok {
			if n, err := strconv.ParseInt(v, 16, 64); err == nil {
				return n
			}
		}
	}
	return -1
}
