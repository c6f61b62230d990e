package integration

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestCreateModes creates a node of every kind go-zookeeper can ask for,
// checks the path the server gives it and its ephemeralOwner, then closes
// the creating session and checks which nodes went with it.
func TestCreateModes(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	owner, _ := mustConnectRecorded(t, addr, 5*time.Second)
	other, _ := mustConnectRecorded(t, addr, 5*time.Second)
	mustCreate(t, other, "/modes", nil)

	seq := `\d{10}`
	tests := []struct {
		name      string
		create    func(c *zk.Conn) (string, error)
		wantPath  string // regexp
		ephemeral bool
	}{
		{"persistent", func(c *zk.Conn) (string, error) {
			return c.Create("/modes/p", []byte("d"), zk.FlagPersistent, openACL)
		}, `/modes/p`, false},
		{"ephemeral", func(c *zk.Conn) (string, error) {
			return c.Create("/modes/e", []byte("d"), zk.FlagEphemeral, openACL)
		}, `/modes/e`, true},
		{"persistent sequential", func(c *zk.Conn) (string, error) {
			return c.Create("/modes/ps-", []byte("d"), zk.FlagSequence, openACL)
		}, `/modes/ps-` + seq, false},
		{"ephemeral sequential", func(c *zk.Conn) (string, error) {
			return c.Create("/modes/es-", []byte("d"), zk.FlagEphemeralSequential, openACL)
		}, `/modes/es-` + seq, true},
		{"container", func(c *zk.Conn) (string, error) {
			return c.CreateContainer("/modes/c", []byte("d"), zk.FlagContainer, openACL)
		}, `/modes/c`, false},
		{"container flag through plain create", func(c *zk.Conn) (string, error) {
			return c.Create("/modes/c4", []byte("d"), zk.FlagContainer, openACL)
		}, `/modes/c4`, false},
		{"ttl", func(c *zk.Conn) (string, error) {
			return c.CreateTTL("/modes/t", []byte("d"), zk.FlagTTL, openACL, time.Hour)
		}, `/modes/t`, false},
		{"ttl sequential", func(c *zk.Conn) (string, error) {
			return c.CreateTTL("/modes/ts-", []byte("d"), zk.FlagPersistentSequentialWithTTL, openACL, time.Hour)
		}, `/modes/ts-` + seq, false},
		{"protected ephemeral sequential", func(c *zk.Conn) (string, error) {
			return c.CreateProtectedEphemeralSequential("/modes/pes-", []byte("d"), openACL)
		}, `/modes/_c_[0-9a-f]{32}-pes-` + seq, true},
	}
	created := make([]string, len(tests))
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.create(owner)
			require.NoError(t, err)
			assert.Regexp(t, regexp.MustCompile(`\A`+tc.wantPath+`\z`), p)
			created[i] = p
			data, st, err := other.Get(p)
			require.NoError(t, err)
			assert.Equal(t, "d", string(data))
			assert.Equal(t, int32(1), st.DataLength)
			if tc.ephemeral {
				assert.Equal(t, owner.SessionID(), st.EphemeralOwner)
			} else {
				assert.Zero(t, st.EphemeralOwner, "containers and TTL nodes show ephemeralOwner 0")
			}
		})
	}

	owner.Close()
	for i, tc := range tests {
		if created[i] == "" {
			continue
		}
		ok, _, err := other.Exists(created[i])
		require.NoError(t, err)
		assert.Equal(t, !tc.ephemeral, ok, "%s (%s) after its creator's session closed", tc.name, created[i])
	}
}

func TestCreateErrors(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	mustCreate(t, c, "/x", nil)
	_, err := c.Create("/eph", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)

	tests := []struct {
		name string
		path string
		flag int32
		want error
	}{
		{"node exists", "/x", zk.FlagPersistent, zk.ErrNodeExists},
		{"parent missing", "/missing/child", zk.FlagPersistent, zk.ErrNoNode},
		{"sequential with parent missing", "/missing/s-", zk.FlagSequence, zk.ErrNoNode},
		{"child of an ephemeral", "/eph/child", zk.FlagPersistent, zk.ErrNoChildrenForEphemerals},
		{"ephemeral child of an ephemeral", "/eph/child", zk.FlagEphemeral, zk.ErrNoChildrenForEphemerals},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(tc.path, nil, tc.flag, openACL)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	t.Run("ttl out of range", func(t *testing.T) {
		_, err := c.CreateTTL("/ttl0", nil, zk.FlagTTL, openACL, 0)
		assert.ErrorIs(t, err, zk.ErrBadArguments)
	})
	t.Run("container under an ephemeral", func(t *testing.T) {
		_, err := c.CreateContainer("/eph/c", nil, zk.FlagContainer, openACL)
		assert.ErrorIs(t, err, zk.ErrNoChildrenForEphemerals)
	})
}

func TestCreateTTLDisabled(t *testing.T) {
	srv := servertest.NewServer(t, servertest.WithConfig(func(c *server.Config) { c.ExtendedTypesEnabled = false }))
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	_, err := c.CreateTTL("/t", nil, zk.FlagTTL, openACL, time.Hour)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-6", "UNIMPLEMENTED when TTL nodes are disabled")
	ok, _, err := c.Exists("/t")
	require.NoError(t, err)
	assert.False(t, ok)
}

// waitReaperPass waits until the container and TTL reaper has run a full
// pass that began after the call: it waits twice for a TTL node of 1ms to
// be reaped. Every node that was reapable when the call began has been
// proposed for deletion by then, and the deletion applied.
func waitReaperPass(t testing.TB, c *zk.Conn) {
	t.Helper()
	for i := 0; i < 2; i++ {
		p, err := c.CreateTTL("/reaper-barrier-", nil, zk.FlagPersistentSequentialWithTTL, openACL, time.Millisecond)
		require.NoError(t, err)
		ok, _, ch, err := c.ExistsW(p)
		require.NoError(t, err)
		if ok {
			assert.Equal(t, zk.EventNodeDeleted, waitEvent(t, ch).Type)
		}
	}
}

// TestContainersAndTTLNodesAreReaped checks the reaper: a container goes
// once its last child is deleted, a TTL node once it is older than its TTL
// and childless; a node created by plain create with the container flag, a
// never-used container and a TTL node with a child stay.
func TestContainersAndTTLNodesAreReaped(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)

	_, err := c.CreateContainer("/ctr", nil, zk.FlagContainer, openACL)
	require.NoError(t, err)
	_, err = c.CreateContainer("/unused", nil, zk.FlagContainer, openACL)
	require.NoError(t, err)
	_, err = c.Create("/plain4", nil, zk.FlagContainer, openACL)
	require.NoError(t, err)
	mustCreate(t, c, "/plain4/child", nil)
	require.NoError(t, c.Delete("/plain4/child", -1))
	_, err = c.CreateTTL("/ttlparent", nil, zk.FlagTTL, openACL, time.Millisecond)
	require.NoError(t, err)
	mustCreate(t, c, "/ttlparent/child", nil)

	mustCreate(t, c, "/ctr/child", nil)
	_, _, ctrGone, err := c.ExistsW("/ctr")
	require.NoError(t, err)
	require.NoError(t, c.Delete("/ctr/child", -1))
	assert.Equal(t, zk.Event{Type: zk.EventNodeDeleted, State: zk.StateSyncConnected, Path: "/ctr"}, waitEvent(t, ctrGone))

	const ttl = 300 * time.Millisecond
	start := time.Now()
	_, err = c.CreateTTL("/ttl", []byte("x"), zk.FlagTTL, openACL, ttl)
	require.NoError(t, err)
	_, _, ttlGone, err := c.ExistsW("/ttl")
	require.NoError(t, err)
	assert.Equal(t, zk.EventNodeDeleted, waitEvent(t, ttlGone).Type)
	assert.GreaterOrEqual(t, time.Since(start), ttl, "a TTL node lives at least its TTL")

	// A container whose only child was an ephemeral of a session that
	// ended (the lock-recipe pattern) goes too.
	_, err = c.CreateContainer("/lockdir", nil, zk.FlagContainer, openACL)
	require.NoError(t, err)
	locker, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	_, err = locker.Create("/lockdir/lock-", nil, zk.FlagEphemeralSequential, openACL)
	require.NoError(t, err)
	_, _, lockdirGone, err := c.ExistsW("/lockdir")
	require.NoError(t, err)
	locker.Close()
	assert.Equal(t, zk.EventNodeDeleted, waitEvent(t, lockdirGone).Type)

	waitReaperPass(t, c)
	for _, p := range []string{"/plain4", "/unused", "/ttlparent"} {
		ok, _, err := c.Exists(p)
		require.NoError(t, err)
		assert.True(t, ok, "%s must not be reaped", p)
	}
}

func TestGetAndSet(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)

	t.Run("null and empty data differ", func(t *testing.T) {
		mustCreate(t, c, "/null", nil)
		mustCreate(t, c, "/empty", []byte{})
		data, st, err := c.Get("/null")
		require.NoError(t, err)
		assert.Nil(t, data)
		assert.Zero(t, st.DataLength)
		data, st, err = c.Get("/empty")
		require.NoError(t, err)
		assert.NotNil(t, data)
		assert.Empty(t, data)
		assert.Zero(t, st.DataLength)
	})
	t.Run("get missing", func(t *testing.T) {
		_, _, err := c.Get("/nope")
		assert.ErrorIs(t, err, zk.ErrNoNode)
		_, _, _, err = c.GetW("/nope")
		assert.ErrorIs(t, err, zk.ErrNoNode)
	})

	mustCreate(t, c, "/v", []byte("0"))
	tests := []struct {
		name        string
		path        string
		version     int32
		want        error
		wantVersion int32 // after the call
	}{
		{"matching version", "/v", 0, nil, 1},
		{"stale version", "/v", 0, zk.ErrBadVersion, 1},
		{"future version", "/v", 7, zk.ErrBadVersion, 1},
		{"any version", "/v", -1, nil, 2},
		{"matching version again", "/v", 2, nil, 3},
		{"missing node", "/nope", -1, zk.ErrNoNode, 3},
		{"missing node with a version", "/nope", 3, zk.ErrNoNode, 3},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := mustStat(t, c, "/v")
			payload := []byte(fmt.Sprintf("data-%d", i))
			st, err := c.Set(tc.path, payload, tc.version)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.wantVersion, st.Version)
				assert.Equal(t, int32(len(payload)), st.DataLength)
				assert.Greater(t, st.Mzxid, before.Mzxid)
			}
			data, st, err := c.Get("/v")
			require.NoError(t, err)
			assert.Equal(t, tc.wantVersion, st.Version)
			if tc.want == nil {
				assert.Equal(t, payload, data)
			} else {
				assert.Equal(t, before.Mzxid, st.Mzxid, "a failed set changes nothing")
			}
		})
	}
}

func TestDelete(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	mustCreate(t, c, "/d", nil)
	_, err := c.Set("/d", []byte("v1"), -1)
	require.NoError(t, err)
	mustCreate(t, c, "/parent", nil)
	mustCreate(t, c, "/parent/child", nil)

	tests := []struct {
		name    string
		path    string
		version int32
		want    error
		gone    bool
	}{
		{"missing", "/nope", -1, zk.ErrNoNode, true},
		{"missing under a missing parent", "/nope/nope", -1, zk.ErrNoNode, true},
		{"stale version", "/d", 0, zk.ErrBadVersion, false},
		{"children and stale version: version checked first", "/parent", 3, zk.ErrBadVersion, false},
		{"children", "/parent", 0, zk.ErrNotEmpty, false},
		{"children, any version", "/parent", -1, zk.ErrNotEmpty, false},
		{"system node /zookeeper", "/zookeeper", -1, zk.ErrBadArguments, false},
		{"system node /zookeeper/quota", "/zookeeper/quota", -1, zk.ErrBadArguments, false},
		{"matching version", "/d", 1, nil, true},
		{"leaf, any version", "/parent/child", -1, nil, true},
		{"now empty", "/parent", 0, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Delete(tc.path, tc.version)
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.want)
			}
			ok, _, err := c.Exists(tc.path)
			require.NoError(t, err)
			assert.Equal(t, !tc.gone, ok)
		})
	}
}

func TestExistsAndChildren(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)

	ok, _, err := c.Exists("/nope")
	require.NoError(t, err)
	assert.False(t, ok)

	kids, st, err := c.Children("/")
	require.NoError(t, err)
	assert.Equal(t, []string{"zookeeper"}, kids)
	assert.Equal(t, int32(1), st.NumChildren)
	assert.Equal(t, int32(-1), st.Cversion, "a fresh root: 0 creates, 1 child")

	kids, _, err = c.Children("/zookeeper")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"quota", "config"}, kids)

	mustCreate(t, c, "/p", []byte("data"))
	for _, n := range []string{"a", "b", "c"} {
		mustCreate(t, c, "/p/"+n, nil)
	}
	kids, st, err = c.Children("/p")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b", "c"}, kids)
	assert.Equal(t, int32(3), st.NumChildren)
	assert.Equal(t, int32(4), st.DataLength)
	assert.Equal(t, mustStat(t, c, "/p"), st, "getChildren2 returns the node's Stat")

	kids, _, err = c.Children("/p/a")
	require.NoError(t, err)
	assert.Empty(t, kids)
	_, _, err = c.Children("/nope")
	assert.ErrorIs(t, err, zk.ErrNoNode)
	_, _, _, err = c.ChildrenW("/nope")
	assert.ErrorIs(t, err, zk.ErrNoNode)

	ok, st, err = c.Exists("/p")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int32(3), st.NumChildren)
}

func TestSync(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	other, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	mustCreate(t, other, "/s", []byte("x"))
	for _, p := range []string{"/s", "/", "/does/not/exist"} {
		got, err := c.Sync(p)
		require.NoError(t, err)
		assert.Equal(t, p, got, "sync echoes its path")
	}
	data, _, err := c.Get("/s")
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))
}

func TestServerAndSessionID(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	a, _ := mustConnectRecorded(t, addr, 5*time.Second)
	b, _ := mustConnectRecorded(t, addr, 5*time.Second)
	assert.Equal(t, addr, a.Server())
	assert.Equal(t, zk.StateHasSession, a.State())
	assert.NotZero(t, a.SessionID())
	assert.NotZero(t, b.SessionID())
	assert.NotEqual(t, a.SessionID(), b.SessionID())
	_, err := a.Create("/mine", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	assert.Equal(t, a.SessionID(), mustStat(t, b, "/mine").EphemeralOwner)
}

// digest is ZooKeeper's digest id for user:password.
func digest(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestACLs(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()
	owner, _ := mustConnectRecorded(t, addr, 5*time.Second)
	other, _ := mustConnectRecorded(t, addr, 5*time.Second)

	t.Run("default ACL and aversion", func(t *testing.T) {
		mustCreate(t, owner, "/open", []byte("x"))
		acl, st, err := owner.GetACL("/open")
		require.NoError(t, err)
		assert.Equal(t, openACL, acl)
		assert.Zero(t, st.Aversion)

		acl, st, err = owner.GetACL("/zookeeper/config")
		require.NoError(t, err)
		assert.Equal(t, zk.WorldACL(zk.PermRead), acl)
		assert.Equal(t, int32(-1), st.Aversion)
	})

	t.Run("setACL versions", func(t *testing.T) {
		mustCreate(t, owner, "/acl", []byte("x"))
		before := mustStat(t, owner, "/acl")
		steps := []struct {
			version  int32
			want     error
			aversion int32
		}{
			{0, nil, 1},
			{0, zk.ErrBadVersion, 1},
			{5, zk.ErrBadVersion, 1},
			{-1, nil, 2},
			{2, nil, 3},
		}
		for _, s := range steps {
			st, err := owner.SetACL("/acl", zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin), s.version)
			if s.want != nil {
				assert.ErrorIs(t, err, s.want, "version %d", s.version)
			} else if assert.NoError(t, err, "version %d", s.version) {
				assert.Equal(t, s.aversion, st.Aversion)
			}
		}
		after := mustStat(t, owner, "/acl")
		assert.Equal(t, int32(3), after.Aversion)
		assert.Equal(t, before.Mzxid, after.Mzxid, "setACL changes only the ACL and aversion")
		assert.Equal(t, before.Mtime, after.Mtime)
		assert.Equal(t, before.Version, after.Version)
		_, err := owner.SetACL("/nope", openACL, -1)
		assert.ErrorIs(t, err, zk.ErrNoNode)
	})

	t.Run("digest ACL with addauth", func(t *testing.T) {
		require.NoError(t, owner.AddAuth("digest", []byte("alice:secret")))
		_, err := owner.Create("/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
		require.NoError(t, err)
		acl, _, err := owner.GetACL("/secret")
		require.NoError(t, err)
		assert.Equal(t, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: digest("alice", "secret")}}, acl)

		_, _, err = other.Get("/secret")
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		_, err = other.Set("/secret", nil, -1)
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		_, _, err = other.Children("/secret")
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		_, _, err = other.GetACL("/secret")
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		_, err = other.Create("/secret/child", nil, 0, openACL)
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		err = other.Delete("/secret/missing", -1)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "DELETE on the parent is checked before the node's existence")
		_, err = other.SetACL("/secret", openACL, -1)
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		ok, _, err := other.Exists("/secret")
		require.NoError(t, err, "ZooKeeper 3.8.0's exists does not check READ")
		assert.True(t, ok)

		require.NoError(t, other.AddAuth("digest", []byte("alice:wrong")))
		_, _, err = other.Get("/secret")
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		require.NoError(t, other.AddAuth("digest", []byte("alice:secret")))
		data, _, err := other.Get("/secret")
		require.NoError(t, err)
		assert.Equal(t, "s", string(data))
	})

	t.Run("getACL masks digests without ADMIN", func(t *testing.T) {
		reader, _ := mustConnectRecorded(t, addr, 5*time.Second)
		acl := append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "alice", "secret")...)
		_, err := owner.Create("/masked", nil, 0, acl)
		require.NoError(t, err)
		got, _, err := reader.GetACL("/masked")
		require.NoError(t, err)
		assert.Equal(t, []zk.ACL{{Perms: zk.PermRead, Scheme: "world", ID: "anyone"},
			{Perms: zk.PermAll, Scheme: "digest", ID: "alice:x"}}, got)
		got, _, err = owner.GetACL("/masked")
		require.NoError(t, err)
		assert.Equal(t, acl, got)
	})

	t.Run("read-only node", func(t *testing.T) {
		_, err := owner.Create("/ro", []byte("r"), 0, zk.WorldACL(zk.PermRead))
		require.NoError(t, err)
		_, err = other.Set("/ro", nil, -1)
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		_, err = other.Create("/ro/child", nil, 0, openACL)
		assert.ErrorIs(t, err, zk.ErrNoAuth)
		data, _, err := other.Get("/ro")
		require.NoError(t, err)
		assert.Equal(t, "r", string(data))
	})

	t.Run("auth scheme", func(t *testing.T) {
		anon, _ := mustConnectRecorded(t, addr, 5*time.Second)
		_, err := anon.Create("/byauth", nil, 0, zk.AuthACL(zk.PermAll))
		assert.ErrorIs(t, err, zk.ErrInvalidACL, "auth scheme without an authenticated id")
		require.NoError(t, anon.AddAuth("digest", []byte("bob:pw")))
		_, err = anon.Create("/byauth", nil, 0, zk.AuthACL(zk.PermAll))
		require.NoError(t, err)
		acl, _, err := anon.GetACL("/byauth")
		require.NoError(t, err)
		assert.Equal(t, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: digest("bob", "pw")}}, acl)
	})

	t.Run("invalid ACLs", func(t *testing.T) {
		mustCreate(t, owner, "/target", nil)
		tests := []struct {
			name string
			acl  []zk.ACL
		}{
			{"empty list", []zk.ACL{}},
			{"world id other than anyone", []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "someone"}}},
			{"unknown scheme", []zk.ACL{{Perms: zk.PermAll, Scheme: "nosuch", ID: "x"}}},
			{"digest id without a colon", []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}}},
			{"digest id with two colons", []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "a:b:c"}}},
			{"ip id that does not parse", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "not-an-ip"}}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := owner.Create("/invalid", nil, 0, tc.acl)
				assert.ErrorIs(t, err, zk.ErrInvalidACL)
				_, err = owner.SetACL("/target", tc.acl, -1)
				assert.ErrorIs(t, err, zk.ErrInvalidACL)
			})
		}
		ok, _, err := owner.Exists("/invalid")
		require.NoError(t, err)
		assert.False(t, ok)
		acl, _, err := owner.GetACL("/target")
		require.NoError(t, err)
		assert.Equal(t, openACL, acl)
	})
}

func TestAddAuth(t *testing.T) {
	srv := servertest.NewServer(t)
	addr := srv.ConnectString()

	t.Run("digest without a colon succeeds", func(t *testing.T) {
		c, _ := mustConnectRecorded(t, addr, 5*time.Second)
		assert.NoError(t, c.AddAuth("digest", []byte("blah")))
		_, err := c.Create("/blah", nil, 0, zk.AuthACL(zk.PermAll))
		require.NoError(t, err)
		acl, _, err := c.GetACL("/blah")
		require.NoError(t, err)
		sum := sha1.Sum([]byte("blah"))
		assert.Equal(t, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest",
			ID: "blah:" + base64.StdEncoding.EncodeToString(sum[:])}}, acl)
	})

	t.Run("unknown scheme fails and closes the connection", func(t *testing.T) {
		c, rec := mustConnectRecorded(t, addr, 5*time.Second)
		id := c.SessionID()
		_, err := c.Create("/keep", nil, zk.FlagEphemeral, openACL)
		require.NoError(t, err)
		assert.ErrorIs(t, c.AddAuth("bogus", []byte("x")), zk.ErrAuthFailed)
		rec.waitState(t, zk.StateDisconnected)
		// The session is untouched: the client resumes it.
		rec.waitState(t, zk.StateHasSession)
		assert.Equal(t, id, c.SessionID())
		assert.Equal(t, id, mustStat(t, c, "/keep").EphemeralOwner)
	})
}

// TestStatFields follows one node's Stat through creates, deletes, sets and
// setACL and checks every field as ZooKeeper computes it.
func TestStatFields(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)

	before := time.Now().UnixMilli()
	mustCreate(t, c, "/s", []byte("abc"))
	after := time.Now().UnixMilli()
	s0 := mustStat(t, c, "/s")
	z1 := s0.Czxid
	assert.Positive(t, z1)
	assert.Equal(t, zk.Stat{Czxid: z1, Mzxid: z1, Ctime: s0.Ctime, Mtime: s0.Ctime, DataLength: 3, Pzxid: z1}, *s0)
	assert.GreaterOrEqual(t, s0.Ctime, before)
	assert.LessOrEqual(t, s0.Ctime, after)

	// Children: cversion counts creates and deletes, pzxid follows them,
	// the node's own mzxid and version do not move.
	mustCreate(t, c, "/s/a", nil)
	sa := mustStat(t, c, "/s/a")
	z2 := sa.Czxid
	assert.Greater(t, z2, z1)
	assert.Equal(t, zk.Stat{Czxid: z2, Mzxid: z2, Ctime: sa.Ctime, Mtime: sa.Ctime, Pzxid: z2}, *sa)
	mustCreate(t, c, "/s/b", []byte("12345"))
	z3 := mustStat(t, c, "/s/b").Czxid
	assert.Greater(t, z3, z2)
	s := mustStat(t, c, "/s")
	assert.Equal(t, zk.Stat{Czxid: z1, Mzxid: z1, Ctime: s0.Ctime, Mtime: s0.Ctime, Cversion: 2,
		DataLength: 3, NumChildren: 2, Pzxid: z3}, *s)

	require.NoError(t, c.Delete("/s/a", -1))
	s = mustStat(t, c, "/s")
	assert.Equal(t, int32(3), s.Cversion, "a delete counts in the visible cversion")
	assert.Equal(t, int32(1), s.NumChildren)
	assert.Greater(t, s.Pzxid, z3, "a delete moves pzxid")
	assert.Equal(t, z1, s.Mzxid)
	z4 := s.Pzxid

	// setData: version, mzxid, mtime, dataLength.
	st, err := c.Set("/s", []byte("hello"), 0)
	require.NoError(t, err)
	z5, mtime := st.Mzxid, st.Mtime
	assert.Greater(t, z5, z4)
	assert.Equal(t, zk.Stat{Czxid: z1, Mzxid: z5, Ctime: s0.Ctime, Mtime: st.Mtime, Version: 1, Cversion: 3,
		DataLength: 5, NumChildren: 1, Pzxid: z4}, *st)
	assert.GreaterOrEqual(t, st.Mtime, s0.Ctime)
	assert.Equal(t, st, mustStat(t, c, "/s"))

	// setACL: aversion only.
	st, err = c.SetACL("/s", openACL, 0)
	require.NoError(t, err)
	assert.Equal(t, zk.Stat{Czxid: z1, Mzxid: z5, Ctime: s0.Ctime, Mtime: mtime, Version: 1, Cversion: 3,
		Aversion: 1, DataLength: 5, NumChildren: 1, Pzxid: z4}, *st)

	// A sequential child counts as a create; its suffix is the stored
	// create count (a, b and this one: 2).
	p, err := c.Create("/s/q-", nil, zk.FlagSequence, openACL)
	require.NoError(t, err)
	assert.Equal(t, "/s/q-0000000002", p)
	s = mustStat(t, c, "/s")
	assert.Equal(t, int32(4), s.Cversion)
	assert.Equal(t, int32(2), s.NumChildren)

	// An ephemeral carries its owner.
	_, err = c.Create("/s/e", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	assert.Equal(t, c.SessionID(), mustStat(t, c, "/s/e").EphemeralOwner)

	// A failed write consumes a zxid too.
	last := mustStat(t, c, "/s/e").Czxid
	_, err = c.Set("/s", nil, 42)
	require.ErrorIs(t, err, zk.ErrBadVersion)
	mustCreate(t, c, "/t", nil)
	assert.GreaterOrEqual(t, mustStat(t, c, "/t").Czxid, last+2, "the failed setData used a zxid")

	// The root counts its creates and deletes too.
	root := mustStat(t, c, "/")
	assert.Equal(t, int32(3), root.NumChildren)
	assert.Equal(t, int32(2*2-3), root.Cversion, "2 creates (/s, /t) and the /zookeeper child")
}

func TestMulti(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)

	t.Run("empty", func(t *testing.T) {
		res, err := c.Multi()
		require.NoError(t, err)
		assert.Empty(t, res)
	})

	t.Run("success", func(t *testing.T) {
		_, _, created, err := c.ExistsW("/m")
		require.NoError(t, err)
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/m", Data: []byte("a"), Acl: openACL},
			&zk.CreateRequest{Path: "/m/c", Acl: openACL},
			&zk.SetDataRequest{Path: "/m", Data: []byte("bb"), Version: 0},
			&zk.CheckVersionRequest{Path: "/m", Version: 1},
			&zk.DeleteRequest{Path: "/m/c", Version: 0},
			&zk.CreateRequest{Path: "/m/s-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.CreateRequest{Path: "/m/s-", Acl: openACL, Flags: zk.FlagSequence},
		)
		require.NoError(t, err)
		// The writer's own watch fired before the reply.
		assert.Equal(t, zk.EventNodeCreated, eventNow(t, created, "exists watch on /m").Type)
		require.Len(t, res, 7)
		for i, r := range res {
			assert.NoError(t, r.Error, "op %d", i)
		}
		assert.Equal(t, "/m", res[0].String)
		assert.Equal(t, "/m/c", res[1].String)
		require.NotNil(t, res[2].Stat)
		assert.Equal(t, int32(1), res[2].Stat.Version)
		assert.Equal(t, res[2].Stat.Czxid, res[2].Stat.Mzxid, "all ops share one zxid")
		assert.Equal(t, "/m/s-0000000001", res[5].String)
		assert.Equal(t, "/m/s-0000000002", res[6].String)

		data, st, err := c.Get("/m")
		require.NoError(t, err)
		assert.Equal(t, "bb", string(data))
		assert.Equal(t, zk.Stat{Czxid: st.Czxid, Mzxid: st.Czxid, Ctime: st.Ctime, Mtime: st.Ctime, Version: 1,
			Cversion: 4, DataLength: 2, NumChildren: 2, Pzxid: st.Czxid}, *st)
		kids, _, err := c.Children("/m")
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"s-0000000001", "s-0000000002"}, kids)
	})

	mustCreate(t, c, "/base", []byte("orig"))
	mustCreate(t, c, "/full", nil)
	mustCreate(t, c, "/full/kid", nil)
	errRuntimeInconsistency := "unknown error: -2"

	rollbacks := []struct {
		name    string
		ops     []any
		wantErr error
		results []string // per op: "" for success, else the error text
	}{
		{"setData on a missing node", []any{
			&zk.CreateRequest{Path: "/r", Acl: openACL},
			&zk.CreateRequest{Path: "/r/c", Acl: openACL},
			&zk.SetDataRequest{Path: "/missing", Version: -1},
			&zk.CreateRequest{Path: "/r2", Acl: openACL},
		}, zk.ErrNoNode, []string{"", "", zk.ErrNoNode.Error(), errRuntimeInconsistency}},
		{"check with a wrong version", []any{
			&zk.SetDataRequest{Path: "/base", Data: []byte("changed"), Version: -1},
			&zk.CheckVersionRequest{Path: "/base", Version: 0},
			&zk.CreateRequest{Path: "/r", Acl: openACL},
		}, zk.ErrBadVersion, []string{"", zk.ErrBadVersion.Error(), errRuntimeInconsistency}},
		{"delete of a node with children", []any{
			&zk.CreateRequest{Path: "/base/s-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.DeleteRequest{Path: "/full", Version: -1},
		}, zk.ErrNotEmpty, []string{"", zk.ErrNotEmpty.Error()}},
		{"create of an existing node first", []any{
			&zk.CreateRequest{Path: "/base", Acl: openACL},
			&zk.SetDataRequest{Path: "/base", Data: []byte("changed"), Version: -1},
			&zk.DeleteRequest{Path: "/full/kid", Version: -1},
		}, zk.ErrNodeExists, []string{zk.ErrNodeExists.Error(), errRuntimeInconsistency, errRuntimeInconsistency}},
		{"delete then use of the deleted node", []any{
			&zk.DeleteRequest{Path: "/full/kid", Version: -1},
			&zk.SetDataRequest{Path: "/full/kid", Data: []byte("x"), Version: -1},
		}, zk.ErrNoNode, []string{"", zk.ErrNoNode.Error()}},
	}
	for _, tc := range rollbacks {
		t.Run("rollback: "+tc.name, func(t *testing.T) {
			base := mustStat(t, c, "/base")
			full := mustStat(t, c, "/full")
			kid := mustStat(t, c, "/full/kid")
			res, err := c.Multi(tc.ops...)
			assert.ErrorIs(t, err, tc.wantErr)
			require.Len(t, res, len(tc.results))
			for i, want := range tc.results {
				if want == "" {
					assert.NoError(t, res[i].Error, "op %d", i)
				} else if assert.Error(t, res[i].Error, "op %d", i) {
					assert.Equal(t, want, res[i].Error.Error(), "op %d", i)
				}
			}
			// No trace: nothing created, nothing changed, no sequence
			// number used.
			for _, p := range []string{"/r", "/r/c", "/r2"} {
				ok, _, err := c.Exists(p)
				require.NoError(t, err)
				assert.False(t, ok, "%s exists after a failed multi", p)
			}
			data, st, err := c.Get("/base")
			require.NoError(t, err)
			assert.Equal(t, "orig", string(data))
			assert.Equal(t, *base, *st)
			assert.Equal(t, *full, *mustStat(t, c, "/full"))
			assert.Equal(t, *kid, *mustStat(t, c, "/full/kid"))
		})
	}
	p, err := c.Create("/base/s-", nil, zk.FlagSequence, openACL)
	require.NoError(t, err)
	assert.Equal(t, "/base/s-0000000000", p, "failed multis consumed no sequence number")
}

// TestMultiCreateFlags covers the create flags a multi handles specially:
// a type-1 create with the container flag becomes a createContainer, whose
// result (type 15) go-zookeeper cannot decode, so it reports ErrAPIError
// although the container was made; a TTL flag carries no TTL in a type-1
// create, so the whole request fails to decode (MARSHALLINGERROR) and
// nothing is made.
func TestMultiCreateFlags(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)

	_, err := c.Multi(&zk.CreateRequest{Path: "/mc", Acl: openACL, Flags: zk.FlagContainer})
	assert.ErrorIs(t, err, zk.ErrAPIError)
	st := mustStat(t, c, "/mc")
	assert.Zero(t, st.EphemeralOwner)
	// It is a container: it goes once its first child is deleted.
	mustCreate(t, c, "/mc/kid", nil)
	_, _, gone, err := c.ExistsW("/mc")
	require.NoError(t, err)
	require.NoError(t, c.Delete("/mc/kid", -1))
	assert.Equal(t, zk.EventNodeDeleted, waitEvent(t, gone).Type)

	for _, flag := range []int32{zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
		res, err := c.Multi(&zk.CreateRequest{Path: "/mt", Acl: openACL, Flags: flag})
		require.Error(t, err, "flag %d", flag)
		assert.Contains(t, err.Error(), "-5", "flag %d", flag)
		assert.Empty(t, res)
		kids, _, err := c.Children("/")
		require.NoError(t, err)
		assert.NotContains(t, kids, "mt")
		for _, k := range kids {
			assert.False(t, strings.HasPrefix(k, "mt"), "%s created", k)
		}
	}
}

// TestOversizedRequest sends a request larger than jute.maxbuffer from
// go-zookeeper: the server closes the connection without reading it, the
// request fails, and the client resumes its session on a new connection
// with nothing changed.
func TestOversizedRequest(t *testing.T) {
	srv := servertest.NewServer(t)
	c, rec := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	mustCreate(t, c, "/big", []byte("small"))
	_, err := c.Create("/mine", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	id := c.SessionID()

	_, err = c.Set("/big", make([]byte, 1100000), -1)
	require.Error(t, err)
	rec.waitState(t, zk.StateDisconnected)
	rec.waitState(t, zk.StateHasSession)
	assert.Equal(t, id, c.SessionID())
	data, st, err := c.Get("/big")
	require.NoError(t, err)
	assert.Equal(t, "small", string(data))
	assert.Zero(t, st.Version)
	assert.Equal(t, id, mustStat(t, c, "/mine").EphemeralOwner)

	// Just under the limit is fine, and so is its reply.
	payload := make([]byte, 1000000)
	_, err = c.Set("/big", payload, -1)
	require.NoError(t, err)
	data, _, err = c.Get("/big")
	require.NoError(t, err)
	assert.Len(t, data, len(payload))
}

// TestReconfigDisabled checks go-zookeeper's reconfig calls: dynamic
// reconfiguration is off (ZooKeeper's default), and /zookeeper/config is
// readable by everyone and unchanged.
func TestReconfigDisabled(t *testing.T) {
	srv := servertest.NewServer(t)
	c, _ := mustConnectRecorded(t, srv.ConnectString(), 5*time.Second)
	_, err := c.IncrementalReconfig([]string{"server.2=127.0.0.1:2888:3888;2181"}, nil, -1)
	assert.ErrorIs(t, err, zk.ErrReconfigDisabled)
	_, err = c.Reconfig([]string{"server.1=127.0.0.1:2888:3888;2181"}, -1)
	assert.ErrorIs(t, err, zk.ErrReconfigDisabled)
	data, st, err := c.Get("/zookeeper/config")
	require.NoError(t, err)
	assert.Empty(t, data)
	assert.Equal(t, zk.Stat{Aversion: -1}, *st)
}
