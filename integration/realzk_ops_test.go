//go:build realzk

package integration

// The go-zookeeper half of the differential comparison: every go-zookeeper
// v1.0.4 operation and its errors, watch events, ACLs, multi, ephemerals,
// containers and TTL nodes. See realzk_test.go.

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// rzGZClient is a go-zookeeper connection whose received frames are tapped.
type rzGZClient struct {
	name string
	c    *zk.Conn
	tap  *rzTapLog
}

type rzQuietLogger struct{}

func (rzQuietLogger) Printf(string, ...any) {}

// connectGZ connects a tapped go-zookeeper client and records the connect
// as a step.
func (r *rzRun) connectGZ(name string) *rzGZClient {
	r.t.Helper()
	tap := &rzTapLog{}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &rzTapConn{Conn: nc, log: tap, first: true}, nil
	}
	c, events, err := zk.Connect([]string{r.nextAddr()}, 10*time.Second,
		zk.WithLogInfo(false), zk.WithLogger(rzQuietLogger{}), zk.WithDialer(dialer))
	if err != nil {
		r.t.Fatalf("%s: connect %s: %v", r.target, name, err)
	}
	r.t.Cleanup(c.Close)
	waitState(r.t, events, zk.StateHasSession)
	go func() {
		for range events {
		}
	}()
	r.sessions[c.SessionID()] = name
	cl := &rzGZClient{name: name, c: c, tap: tap}
	o := r.begin(name, "connect")
	o.add("state=%v", c.State())
	o.frames(tap.takeAll(), false)
	r.end(o, name+": connect")
	return cl
}

// do runs one go-zookeeper call as a step: fn records the call's results,
// then the frames the server sent up to the call's reply are appended.
func (r *rzRun) do(cl *rzGZClient, name string, write bool, fn func(o *rzObs)) {
	if write {
		// Let the clock move on, so that whether a write's mtime equals an
		// earlier write's time does not depend on how fast the server is.
		time.Sleep(2 * time.Millisecond)
	}
	if r.needsSync(cl.name) {
		if _, err := cl.c.Sync("/"); err != nil {
			r.t.Logf("%s: %s: sync before %q: %v", r.target, cl.name, name, err)
		}
		cl.tap.dropReplies()
	}
	o := r.begin(cl.name, name)
	fn(o)
	o.frames(cl.tap.takeReply(), write)
	r.end(o, cl.name+": "+name)
}

func (r *rzRun) p(rel string) string { return r.root + rel }

func (r *rzRun) create(cl *rzGZClient, path string, data []byte, flags int32, acl []zk.ACL) string {
	var got string
	r.do(cl, fmt.Sprintf("create %s %s flags=%d acl=%v", path, rzData(data), flags, acl), true, func(o *rzObs) {
		p, err := cl.c.Create(path, data, flags, acl)
		got = p
		o.add("path=%q err=%s", p, rzErr(err))
	})
	return got
}

func (r *rzRun) createContainer(cl *rzGZClient, path string, data []byte, flag int32, acl []zk.ACL) {
	r.do(cl, fmt.Sprintf("createContainer %s %s flag=%d acl=%v", path, rzData(data), flag, acl), true, func(o *rzObs) {
		p, err := cl.c.CreateContainer(path, data, flag, acl)
		o.add("path=%q err=%s", p, rzErr(err))
	})
}

func (r *rzRun) createTTL(cl *rzGZClient, path string, data []byte, flag int32, acl []zk.ACL, ttl time.Duration) string {
	var got string
	r.do(cl, fmt.Sprintf("createTTL %s %s flag=%d ttl=%v", path, rzData(data), flag, ttl), true, func(o *rzObs) {
		p, err := cl.c.CreateTTL(path, data, flag, acl, ttl)
		got = p
		o.add("path=%q err=%s", p, rzErr(err))
	})
	return got
}

func (r *rzRun) get(cl *rzGZClient, path string) {
	r.do(cl, "get "+path, false, func(o *rzObs) {
		data, st, err := cl.c.Get(path)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" data=%s stat=", rzData(data))
			o.zkStat(st)
		}
	})
}

func (r *rzRun) getW(cl *rzGZClient, path, watch string) {
	r.do(cl, "getW "+path+" as "+watch, false, func(o *rzObs) {
		data, st, ch, err := cl.c.GetW(path)
		r.watches[watch] = ch
		o.add("err=%s watch=%v", rzErr(err), ch != nil)
		if err == nil {
			o.add(" data=%s stat=", rzData(data))
			o.zkStat(st)
		}
	})
}

func (r *rzRun) set(cl *rzGZClient, path string, data []byte, version int32) {
	r.do(cl, fmt.Sprintf("set %s %s version=%d", path, rzData(data), version), true, func(o *rzObs) {
		st, err := cl.c.Set(path, data, version)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" stat=")
			o.zkStat(st)
		}
	})
}

func (r *rzRun) del(cl *rzGZClient, path string, version int32) {
	r.do(cl, fmt.Sprintf("delete %s version=%d", path, version), true, func(o *rzObs) {
		o.add("err=%s", rzErr(cl.c.Delete(path, version)))
	})
}

func (r *rzRun) exists(cl *rzGZClient, path string) {
	r.do(cl, "exists "+path, false, func(o *rzObs) {
		ok, st, err := cl.c.Exists(path)
		o.add("exists=%v err=%s", ok, rzErr(err))
		if ok {
			o.add(" stat=")
			o.zkStat(st)
		}
	})
}

func (r *rzRun) existsW(cl *rzGZClient, path, watch string) {
	r.do(cl, "existsW "+path+" as "+watch, false, func(o *rzObs) {
		ok, st, ch, err := cl.c.ExistsW(path)
		r.watches[watch] = ch
		o.add("exists=%v err=%s watch=%v", ok, rzErr(err), ch != nil)
		if ok {
			o.add(" stat=")
			o.zkStat(st)
		}
	})
}

func (r *rzRun) children(cl *rzGZClient, path string) {
	r.do(cl, "children "+path, false, func(o *rzObs) {
		kids, st, err := cl.c.Children(path)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" children=%s stat=", rzList(kids))
			o.zkStat(st)
		}
	})
}

func (r *rzRun) childrenW(cl *rzGZClient, path, watch string) {
	r.do(cl, "childrenW "+path+" as "+watch, false, func(o *rzObs) {
		kids, st, ch, err := cl.c.ChildrenW(path)
		r.watches[watch] = ch
		o.add("err=%s watch=%v", rzErr(err), ch != nil)
		if err == nil {
			o.add(" children=%s stat=", rzList(kids))
			o.zkStat(st)
		}
	})
}

func rzACLText(acl []zk.ACL) string {
	s := "["
	for i, a := range acl {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%s:%s", a.Perms, a.Scheme, a.ID)
	}
	return s + "]"
}

func (r *rzRun) getACL(cl *rzGZClient, path string) {
	r.do(cl, "getACL "+path, false, func(o *rzObs) {
		acl, st, err := cl.c.GetACL(path)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" acl=%s stat=", rzACLText(acl))
			o.zkStat(st)
		}
	})
}

func (r *rzRun) setACL(cl *rzGZClient, path string, acl []zk.ACL, version int32) {
	r.do(cl, fmt.Sprintf("setACL %s %s version=%d", path, rzACLText(acl), version), true, func(o *rzObs) {
		st, err := cl.c.SetACL(path, acl, version)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" stat=")
			o.zkStat(st)
		}
	})
}

func (r *rzRun) addAuth(cl *rzGZClient, scheme, auth string) {
	r.do(cl, "addAuth "+scheme+" "+auth, false, func(o *rzObs) {
		o.add("err=%s", rzErr(cl.c.AddAuth(scheme, []byte(auth))))
	})
}

func (r *rzRun) sync(cl *rzGZClient, path string) {
	r.do(cl, "sync "+path, false, func(o *rzObs) {
		p, err := cl.c.Sync(path)
		o.add("path=%q err=%s", p, rzErr(err))
	})
}

// barrier is a read on cl whose reply follows every notification the
// server queued for cl before it: the step shows those notifications.
func (r *rzRun) barrier(cl *rzGZClient) {
	r.do(cl, "barrier (exists ~)", false, func(o *rzObs) {
		ok, _, err := cl.c.Exists(r.root)
		o.add("exists=%v err=%s", ok, rzErr(err))
	})
}

func rzMultiOpText(op any) string {
	switch q := op.(type) {
	case *zk.CreateRequest:
		return fmt.Sprintf("create(%s %s flags=%d)", q.Path, rzData(q.Data), q.Flags)
	case *zk.DeleteRequest:
		return fmt.Sprintf("delete(%s v=%d)", q.Path, q.Version)
	case *zk.SetDataRequest:
		return fmt.Sprintf("set(%s %s v=%d)", q.Path, rzData(q.Data), q.Version)
	case *zk.CheckVersionRequest:
		return fmt.Sprintf("check(%s v=%d)", q.Path, q.Version)
	}
	return fmt.Sprintf("%T", op)
}

func (r *rzRun) multi(cl *rzGZClient, ops ...any) {
	name := "multi"
	for _, op := range ops {
		name += " " + rzMultiOpText(op)
	}
	r.do(cl, name, true, func(o *rzObs) {
		res, err := cl.c.Multi(ops...)
		o.add("err=%s results=[", rzErr(err))
		for i, m := range res {
			if i > 0 {
				o.add(", ")
			}
			o.add("{path=%q err=%s", m.String, rzErr(m.Error))
			if m.Stat != nil {
				o.add(" stat=")
				o.zkStat(m.Stat)
			}
			o.add("}")
		}
		o.add("]")
	})
}

// closeGZ closes a client's session and records every frame it received
// in the next 300ms: the close reply, and whether the socket was closed.
func (r *rzRun) closeGZ(cl *rzGZClient) {
	time.Sleep(2 * time.Millisecond)
	o := r.begin(cl.name, "close")
	cl.c.Close()
	time.Sleep(300 * time.Millisecond)
	o.add("state=%v", cl.c.State())
	o.frames(cl.tap.takeAll(), true)
	r.end(o, cl.name+": close")
}

// peek reports, without waiting, whether a go-zookeeper watch channel has
// delivered its event. Used right after a step of the watch's client, whose
// reply follows every notification queued before it.
func (r *rzRun) peek(cl *rzGZClient, watch string) {
	o := r.begin(cl.name, "peek")
	ch := r.watches[watch]
	switch {
	case ch == nil:
		o.add("no watch channel")
	default:
		select {
		case ev, ok := <-ch:
			if !ok {
				o.add("channel closed")
			} else {
				o.add("event{%v %s %v err=%s}", ev.Type, ev.Path, ev.State, rzErr(ev.Err))
			}
		default:
			o.add("pending")
		}
	}
	r.end(o, cl.name+": peek "+watch)
}

// await waits up to d for a go-zookeeper watch event (for changes the
// server makes by itself: container and TTL deletions), then records it and
// every frame cl received meanwhile.
func (r *rzRun) await(cl *rzGZClient, watch string, d time.Duration) {
	o := r.begin(cl.name, "await")
	ch := r.watches[watch]
	if ch == nil {
		o.add("no watch channel")
	} else {
		select {
		case ev, ok := <-ch:
			if !ok {
				o.add("channel closed")
			} else {
				o.add("event{%v %s %v err=%s}", ev.Type, ev.Path, ev.State, rzErr(ev.Err))
			}
		case <-time.After(d):
			o.add("no event within %v", d)
		}
	}
	o.frames(cl.tap.takeAll(), false)
	r.end(o, cl.name+": await "+watch)
}

// settle waits d, then records every frame cl received since its last step
// (connection closes and reconnects after a step that may close it).
func (r *rzRun) settle(cl *rzGZClient, d time.Duration) {
	time.Sleep(d)
	o := r.begin(cl.name, "settle")
	o.add("state=%v", cl.c.State())
	o.frames(cl.tap.takeAll(), false)
	r.end(o, cl.name+": settle")
}

// note records an observation that is not a server call (a wait).
func (r *rzRun) note(name string) {
	o := r.begin("", name)
	r.end(o, "-- "+name)
}

// ---------------------------------------------------------------------------

func TestRealzkGoZK(t *testing.T) {
	addrs := realzkAddrs(t)
	root := newRZRoot(t)
	t.Cleanup(func() { realzkCleanup(t, addrs[0], root) })
	t.Logf("root %s", root)

	var runs [2]*rzRun
	ok := t.Run("zkraft", func(t *testing.T) {
		runs[0] = newRZRun(t, "zkraft", rzServers(t, len(addrs)), root)
		rzGoZKScript(runs[0])
	})
	ok = t.Run("zookeeper", func(t *testing.T) {
		runs[1] = newRZRun(t, "zookeeper", addrs, root)
		rzGoZKScript(runs[1])
	}) && ok
	if !ok || runs[0] == nil || runs[1] == nil {
		t.Fatal("a run did not complete; nothing compared")
	}
	rzCompare(t, "go-zk", runs[0], runs[1])
}

// rzGoZKScript is the go-zookeeper script. It must take the same steps
// whatever the server answers.
func rzGoZKScript(r *rzRun) {
	p := r.p
	world := zk.WorldACL(zk.PermAll)
	worldRead := zk.WorldACL(zk.PermRead)
	or := func(got, fallback string) string {
		if got == "" {
			return fallback
		}
		return got
	}

	A := r.connectGZ("A")
	B := r.connectGZ("B")
	C := r.connectGZ("C")
	W := r.connectGZ("W")

	r.create(A, r.root, nil, zk.FlagPersistent, world)

	// --- create, every flag
	r.create(A, p("/p"), []byte("data"), zk.FlagPersistent, world)
	r.get(A, p("/p"))
	r.exists(A, p("/p"))
	r.create(A, p("/p"), []byte("again"), zk.FlagPersistent, world)
	r.create(A, p("/e"), []byte("eph"), zk.FlagEphemeral, world)
	r.exists(A, p("/e"))
	r.exists(B, p("/e"))
	r.create(A, p("/e"), nil, zk.FlagEphemeral, world)
	r.create(A, p("/e/child"), nil, zk.FlagPersistent, world)
	r.create(A, p("/e/child"), nil, zk.FlagEphemeral, world)
	r.create(A, p("/e/seq-"), nil, zk.FlagSequence, world)
	r.create(A, p("/e/eseq-"), nil, zk.FlagEphemeralSequential, world)
	r.createContainer(A, p("/e/ct"), nil, zk.FlagContainer, world)
	r.createTTL(A, p("/e/ttl"), nil, zk.FlagTTL, world, time.Hour)
	r.create(A, p("/missing/x"), nil, zk.FlagPersistent, world)
	r.create(A, p("/missing/x"), nil, zk.FlagEphemeral, world)
	r.create(A, p("/missing/x-"), nil, zk.FlagSequence, world)
	r.createContainer(A, p("/missing/x"), nil, zk.FlagContainer, world)
	r.createTTL(A, p("/missing/x"), nil, zk.FlagTTL, world, time.Hour)

	// sequential names, across deletes, and a trailing slash
	r.create(A, p("/s"), nil, zk.FlagPersistent, world)
	s0 := r.create(A, p("/s/"), []byte("slash"), zk.FlagSequence, world)
	s1 := r.create(A, p("/s/n-"), nil, zk.FlagSequence, world)
	r.create(A, p("/s/n-"), nil, zk.FlagEphemeralSequential, world)
	r.create(A, p("/s/n-"), nil, zk.FlagSequence, world)
	r.del(A, or(s1, p("/s/n-0000000001")), -1)
	s4 := r.create(A, p("/s/n-"), nil, zk.FlagSequence, world)
	r.del(A, or(s0, p("/s/0000000000")), -1)
	r.del(A, or(s4, p("/s/n-0000000004")), -1)
	r.create(A, p("/s/n-"), nil, zk.FlagEphemeralSequential, world)
	r.create(A, p("/s/"), nil, zk.FlagEphemeralSequential, world)
	r.children(A, p("/s"))
	r.exists(A, p("/s"))
	r.create(A, p("/s//"), nil, zk.FlagSequence, world)
	r.create(A, p("/s/\uffff-"), nil, zk.FlagSequence, world)

	// container flag through Create, CreateContainer, TTL, invalid flags
	r.create(A, p("/c4"), []byte("c"), zk.FlagContainer, world)
	r.exists(A, p("/c4"))
	r.createContainer(A, p("/ct"), []byte{}, zk.FlagContainer, world)
	r.exists(A, p("/ct"))
	r.createContainer(A, p("/ct"), nil, zk.FlagContainer, world)
	r.createContainer(A, p("/ct-never"), nil, zk.FlagContainer, world)
	r.createContainer(A, p("/ctx"), nil, zk.FlagPersistent, world)
	r.createContainer(A, p("/ctx"), nil, zk.FlagSequence, world)
	r.create(A, p("/f5"), nil, zk.FlagTTL, world)
	r.create(A, p("/f6"), nil, zk.FlagPersistentSequentialWithTTL, world)
	r.create(A, p("/f7"), nil, 7, world)
	r.create(A, p("/fm1"), nil, -1, world)
	r.createTTL(A, p("/ttl"), []byte("t"), zk.FlagTTL, world, time.Hour)
	r.exists(A, p("/ttl"))
	r.createTTL(A, p("/ttl"), nil, zk.FlagTTL, world, time.Hour)
	r.createTTL(A, p("/ttlseq-"), nil, zk.FlagPersistentSequentialWithTTL, world, time.Hour)
	r.createTTL(A, p("/ttl0"), nil, zk.FlagTTL, world, 0)
	r.createTTL(A, p("/ttlsub"), nil, zk.FlagTTL, world, 500*time.Microsecond)
	r.createTTL(A, p("/ttlneg"), nil, zk.FlagTTL, world, -time.Millisecond)
	r.createTTL(A, p("/ttlmax"), nil, zk.FlagTTL, world, 0xFFFFFFFFFF*time.Millisecond)
	r.createTTL(A, p("/ttlover"), nil, zk.FlagTTL, world, 0x10000000000*time.Millisecond)
	r.createTTL(A, p("/ttlx"), nil, zk.FlagPersistent, world, time.Hour)
	r.createTTL(A, p("/ttlx"), nil, zk.FlagEphemeral, world, time.Hour)
	r.createTTL(A, p("/ttlx"), nil, zk.FlagContainer, world, time.Hour)
	r.create(A, p("/ttl/child"), nil, zk.FlagPersistent, world)
	r.create(A, p("/ct-never/.."), nil, zk.FlagPersistent, world)
	r.exists(A, p("/ttl"))

	// paths go-zookeeper lets through but the server's validatePath rejects, and odd valid ones
	r.create(A, p("/\ue000"), nil, zk.FlagPersistent, world)
	r.create(A, p("/\uffff"), nil, zk.FlagPersistent, world)
	r.create(A, p("/\U0001F600"), nil, zk.FlagPersistent, world)
	r.create(A, p("/..."), nil, zk.FlagPersistent, world)
	r.create(A, p("/a b"), nil, zk.FlagPersistent, world)
	r.create(A, "", nil, zk.FlagPersistent, world)
	r.create(A, "rel", nil, zk.FlagPersistent, world)
	r.create(A, p("/x/"), nil, zk.FlagPersistent, world)
	r.create(A, p("//x"), nil, zk.FlagPersistent, world)
	r.create(A, p("/x\u0001"), nil, zk.FlagPersistent, world)
	r.del(A, p("/\uffff"), -1)
	r.get(A, p("/\uffff"))
	r.exists(A, p("/\uffff"))
	r.set(A, p("/\uffff"), nil, -1)

	// the special nodes
	r.del(A, "/", -1)
	r.del(A, "/zookeeper", -1)
	r.del(A, "/zookeeper/quota", -1)
	r.del(A, "/zookeeper/config", -1)
	r.create(A, "/zookeeper", nil, zk.FlagPersistent, world)
	r.create(A, "/", nil, zk.FlagPersistent, world)
	r.set(A, "/zookeeper/config", []byte("x"), -1)
	r.create(A, "/zookeeper/config/x", nil, zk.FlagPersistent, world)
	r.setACL(A, "/zookeeper/config", world, -1)
	r.get(A, "/zookeeper")
	r.getACL(A, "/zookeeper")
	r.children(A, "/zookeeper")
	r.get(A, "/zookeeper/quota")
	r.getACL(A, "/zookeeper/quota")
	r.get(A, "/zookeeper/config")
	r.getACL(A, "/zookeeper/config")
	r.exists(A, "/zookeeper/config")
	r.children(A, "/zookeeper/config")
	r.sync(A, "/zookeeper/config")

	// --- get, set, delete with good and bad versions
	r.set(A, p("/p"), []byte("v1"), 0)
	r.set(A, p("/p"), []byte("v2"), 0)
	r.set(A, p("/p"), []byte("v2"), -1)
	r.set(A, p("/p"), []byte("v3"), 5)
	r.set(A, p("/p"), []byte("v3"), -2)
	r.get(A, p("/p"))
	r.set(A, p("/p"), nil, 2)
	r.get(A, p("/p"))
	r.set(A, p("/p"), []byte{}, -1)
	r.get(A, p("/p"))
	r.create(A, p("/nil"), nil, zk.FlagPersistent, world)
	r.get(A, p("/nil"))
	r.create(A, p("/empty"), []byte{}, zk.FlagPersistent, world)
	r.get(A, p("/empty"))
	r.set(A, p("/missing"), []byte("x"), -1)
	r.set(A, p("/missing"), []byte("x"), 3)
	r.get(A, p("/missing"))
	r.get(A, p("/missing/x"))
	r.del(A, p("/p"), 9)
	r.del(A, p("/s"), -1)
	r.del(A, p("/s"), 99)
	r.del(A, p("/missing"), -1)
	r.del(A, p("/missing"), 7)
	r.del(A, p("/missing/x"), -1)
	r.del(A, p("/e"), 1)
	r.exists(A, p("/missing"))
	r.exists(A, p("/missing/x"))
	r.children(A, p("/missing"))
	r.children(A, p("/e"))
	r.children(A, p("/s"))
	r.getACL(A, p("/missing"))
	r.sync(A, r.root)
	r.sync(A, p("/missing/x"))
	r.sync(A, "/")

	// --- watches: every write type, one event per watcher, ordering
	r.getW(A, p("/p"), "a-data-p")
	r.set(B, p("/p"), []byte("w1"), -1)
	r.barrier(A)
	r.peek(A, "a-data-p")
	r.set(B, p("/p"), []byte("w2"), -1)
	r.barrier(A)

	r.existsW(A, p("/wn"), "a-exist-wn")
	r.create(B, p("/wn"), []byte("n"), zk.FlagPersistent, world)
	r.barrier(A)
	r.peek(A, "a-exist-wn")
	r.existsW(A, p("/wn"), "a-exist-wn2")
	r.set(B, p("/wn"), []byte("n2"), -1)
	r.barrier(A)
	r.peek(A, "a-exist-wn2")
	r.existsW(A, p("/wn"), "a-exist-wn3")
	r.del(B, p("/wn"), -1)
	r.barrier(A)
	r.peek(A, "a-exist-wn3")

	r.childrenW(A, p("/s"), "a-child-s")
	r.create(B, p("/s/k"), nil, zk.FlagPersistent, world)
	r.barrier(A)
	r.peek(A, "a-child-s")
	r.childrenW(A, p("/s"), "a-child-s2")
	r.set(B, p("/s/k"), []byte("no child event"), -1)
	r.set(B, p("/s"), []byte("no child event"), -1)
	r.barrier(A)
	r.peek(A, "a-child-s2")
	r.del(B, p("/s/k"), -1)
	r.barrier(A)
	r.peek(A, "a-child-s2")

	// delete with data, child and exist watches on one connection and on another
	r.create(A, p("/wd"), nil, zk.FlagPersistent, world)
	r.create(A, p("/wd/k"), nil, zk.FlagPersistent, world)
	r.getW(A, p("/wd/k"), "a-data-wdk")
	r.childrenW(A, p("/wd/k"), "a-child-wdk")
	r.existsW(A, p("/wd/k"), "a-exist-wdk")
	r.getW(C, p("/wd/k"), "c-data-wdk")
	r.childrenW(C, p("/wd/k"), "c-child-wdk")
	r.childrenW(B, p("/wd"), "b-child-wd")
	r.del(B, p("/wd/k"), -1)
	r.barrier(A)
	r.peek(A, "a-data-wdk")
	r.peek(A, "a-child-wdk")
	r.peek(A, "a-exist-wdk")
	r.barrier(C)
	r.peek(C, "c-data-wdk")
	r.peek(C, "c-child-wdk")
	r.peek(B, "b-child-wd")
	r.childrenW(C, p("/wd"), "c-child-wd")
	r.del(B, p("/wd"), -1)
	r.barrier(C)
	r.peek(C, "c-child-wd")

	// a connection's own write: the event comes before the reply
	r.getW(A, p("/p"), "a-own")
	r.childrenW(A, r.root, "a-own-root")
	r.set(A, p("/p"), []byte("own"), -1)
	r.peek(A, "a-own")
	r.create(A, p("/own"), nil, zk.FlagEphemeral, world)
	r.peek(A, "a-own-root")

	// failed reads leave no watch; exists on a missing node does
	r.getW(A, p("/nw"), "a-nw-data")
	r.childrenW(A, p("/nw"), "a-nw-child")
	r.create(B, p("/nw"), nil, zk.FlagPersistent, world)
	r.barrier(A)
	r.peek(A, "a-nw-data")

	// setACL fires nothing
	r.getW(A, p("/p"), "a-acl")
	r.existsW(C, p("/p"), "c-acl")
	r.setACL(B, p("/p"), world, -1)
	r.barrier(A)
	r.peek(A, "a-acl")
	r.set(B, p("/p"), []byte("after setACL"), -1)
	r.barrier(A)
	r.peek(A, "a-acl")
	r.barrier(C)
	r.peek(C, "c-acl")

	// a multi's events, in op order
	r.getW(A, p("/p"), "a-m-data")
	r.existsW(A, p("/mw"), "a-m-exist")
	r.childrenW(A, r.root, "a-m-root")
	r.multi(B,
		&zk.CreateRequest{Path: p("/mw"), Data: []byte("m"), Acl: world},
		&zk.SetDataRequest{Path: p("/p"), Data: []byte("multi"), Version: -1},
		&zk.SetDataRequest{Path: p("/mw"), Data: []byte("m2"), Version: -1},
		&zk.DeleteRequest{Path: p("/mw"), Version: -1},
	)
	r.barrier(A)
	r.peek(A, "a-m-data")
	r.peek(A, "a-m-exist")
	r.peek(A, "a-m-root")
	// a failed multi fires nothing
	r.getW(A, p("/p"), "a-mf")
	r.multi(B,
		&zk.SetDataRequest{Path: p("/p"), Data: []byte("no"), Version: -1},
		&zk.DeleteRequest{Path: p("/missing"), Version: -1},
	)
	r.barrier(A)
	r.peek(A, "a-mf")

	// --- ACLs
	r.getACL(A, p("/p"))
	r.setACL(A, p("/p"), worldRead, 0)
	r.setACL(A, p("/p"), world, 1)
	r.setACL(A, p("/p"), world, -1)
	r.getACL(A, p("/p"))
	r.setACL(A, p("/missing"), world, -1)
	r.setACL(A, p("/missing"), nil, -1)
	r.setACL(A, p("/p"), []zk.ACL{}, -1)
	r.setACL(A, p("/p"), []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "someone"}}, -1)

	r.create(A, p("/ro"), []byte("r"), zk.FlagPersistent, worldRead)
	r.get(A, p("/ro"))
	r.set(A, p("/ro"), []byte("w"), -1)
	r.create(A, p("/ro/c"), nil, zk.FlagPersistent, world)
	r.del(A, p("/ro/c"), -1)
	r.getACL(A, p("/ro"))
	r.setACL(A, p("/ro"), world, -1)
	r.children(A, p("/ro"))
	r.create(A, p("/noread"), []byte("x"), zk.FlagPersistent, zk.WorldACL(zk.PermWrite|zk.PermCreate|zk.PermDelete|zk.PermAdmin))
	r.get(A, p("/noread"))
	r.exists(A, p("/noread"))
	r.children(A, p("/noread"))
	r.getACL(A, p("/noread"))
	r.set(A, p("/noread"), []byte("y"), -1)
	r.create(A, p("/nodel"), nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll&^zk.PermDelete))
	r.create(A, p("/nodel/c"), nil, zk.FlagPersistent, world)
	r.del(A, p("/nodel/c"), -1)
	r.del(A, p("/nodel/missing"), -1)
	r.del(A, p("/nodel/c"), 5)
	r.setACL(A, p("/nodel"), world, -1)
	r.del(A, p("/nodel/c"), -1)
	r.getACL(A, p("/nodel"))
	r.create(A, p("/noacl"), []byte("x"), zk.FlagPersistent, zk.WorldACL(0))
	r.get(A, p("/noacl"))
	r.getACL(A, p("/noacl"))
	r.create(A, p("/bits"), nil, zk.FlagPersistent, zk.WorldACL(0x7f))
	r.getACL(A, p("/bits"))

	// invalid ACLs, and their order against other checks
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, nil)
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "someone"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "a:b:c"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "300.1.1.1"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1/33"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "host.example"}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "super", ID: ""}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "", ID: ""}})
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, zk.AuthACL(zk.PermAll))
	r.create(A, p("/bad-acl"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "anyone"}, {Perms: zk.PermRead, Scheme: "foo", ID: "x"}})
	r.create(A, p("/missing/x"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}})
	r.create(A, p("/p"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}})
	r.create(A, p("/ro/x"), nil, zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}})
	r.create(A, p("/f7"), nil, 7, []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}})
	r.setACL(A, p("/missing"), []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}}, -1)
	r.setACL(A, p("/ro"), []zk.ACL{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}}, 99)

	// duplicates, ip ACLs with masks
	r.create(A, p("/dup"), nil, zk.FlagPersistent, []zk.ACL{
		{Perms: zk.PermAll, Scheme: "world", ID: "anyone"},
		{Perms: zk.PermAll, Scheme: "world", ID: "anyone"},
		{Perms: zk.PermRead, Scheme: "world", ID: "anyone"},
	})
	r.getACL(A, p("/dup"))
	for i, id := range []string{"127.0.0.0/8", "10.0.0.0/8", "127.0.0.1", "127.0.0.2", "127.0.0.1/32", "0.0.0.0/0", "::1", "127.1.2.3/8"} {
		n := p(fmt.Sprintf("/ip%d", i))
		r.create(A, n, []byte(id), zk.FlagPersistent, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: id}})
		r.get(A, n)
		r.getACL(A, n)
	}

	// digest auth, auth scheme, masking, no super user
	r.addAuth(A, "digest", "user1:pass1")
	r.create(A, p("/auth"), []byte("a"), zk.FlagPersistent, zk.AuthACL(zk.PermAll))
	r.getACL(A, p("/auth"))
	r.get(A, p("/auth"))
	r.get(B, p("/auth"))
	r.getACL(B, p("/auth"))
	r.exists(B, p("/auth"))
	r.set(B, p("/auth"), []byte("b"), -1)
	r.create(B, p("/auth/c"), nil, zk.FlagPersistent, world)
	r.addAuth(A, "digest", "blah")
	r.addAuth(A, "digest", "user1:pass1")
	r.create(A, p("/auth2"), nil, zk.FlagPersistent, zk.AuthACL(zk.PermRead))
	r.getACL(A, p("/auth2"))
	r.create(A, p("/auth3"), nil, zk.FlagPersistent, append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...))
	r.getACL(A, p("/auth3"))
	r.create(A, p("/dig"), []byte("d"), zk.FlagPersistent, zk.DigestACL(zk.PermAll, "user2", "pw2"))
	r.get(A, p("/dig"))
	r.getACL(A, p("/dig"))
	r.create(A, p("/mixed"), []byte("m"), zk.FlagPersistent,
		append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "user2", "pw2")...))
	r.getACL(A, p("/mixed"))
	r.getACL(B, p("/mixed"))
	r.setACL(A, p("/mixed"), world, -1)
	r.addAuth(B, "digest", "user2:pw2")
	r.getACL(B, p("/mixed"))
	r.get(B, p("/dig"))
	r.setACL(B, p("/dig"), zk.DigestACL(zk.PermRead|zk.PermAdmin, "user2", "pw2"), 0)
	r.getACL(B, p("/dig"))
	r.addAuth(B, "digest", "super:test")
	r.get(B, p("/auth"))
	r.del(B, p("/auth"), -1)
	r.addAuth(B, "digest", "")
	r.addAuth(B, "digest", ":")
	r.addAuth(B, "ip", "127.0.0.1")
	r.get(B, p("/auth"))

	// --- ephemerals vanish when their session closes, seen from other sessions
	r.create(A, p("/eph"), nil, zk.FlagPersistent, world)
	E := r.connectGZ("E")
	r.create(E, p("/eph/e1"), []byte("x"), zk.FlagEphemeral, world)
	r.create(E, p("/eph/es-"), nil, zk.FlagEphemeralSequential, world)
	r.create(E, p("/s/e-"), nil, zk.FlagEphemeralSequential, world)
	r.exists(A, p("/eph/e1"))
	r.getW(A, p("/eph/e1"), "a-e1")
	r.childrenW(C, p("/eph"), "c-eph")
	r.existsW(B, p("/eph/e1"), "b-e1")
	r.closeGZ(E)
	r.barrier(A)
	r.peek(A, "a-e1")
	r.barrier(B)
	r.peek(B, "b-e1")
	r.barrier(C)
	r.peek(C, "c-eph")
	r.exists(A, p("/eph/e1"))
	r.children(A, p("/eph"))
	r.children(A, p("/s"))

	// --- multi
	r.multi(A,
		&zk.CreateRequest{Path: p("/m1"), Data: []byte("m"), Acl: world},
		&zk.CreateRequest{Path: p("/m1/c"), Acl: world, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: p("/m1"), Data: []byte("m2"), Version: 0},
		&zk.CheckVersionRequest{Path: p("/m1"), Version: 1},
		&zk.DeleteRequest{Path: p("/m1/c"), Version: -1},
		&zk.CreateRequest{Path: p("/m1/s-"), Acl: world, Flags: zk.FlagSequence},
		&zk.CreateRequest{Path: p("/m1/s-"), Acl: world, Flags: zk.FlagEphemeralSequential},
	)
	r.get(A, p("/m1"))
	r.children(A, p("/m1"))
	r.multi(A,
		&zk.CreateRequest{Path: p("/m2"), Acl: world},
		&zk.SetDataRequest{Path: p("/missing"), Data: []byte("x"), Version: -1},
		&zk.DeleteRequest{Path: p("/p"), Version: -1},
	)
	r.exists(A, p("/m2"))
	r.multi(A, &zk.SetDataRequest{Path: p("/missing"), Version: -1}, &zk.CreateRequest{Path: p("/m2"), Acl: world})
	r.multi(A, &zk.CreateRequest{Path: p("/m3"), Acl: world}, &zk.CreateRequest{Path: p("/m3"), Acl: world})
	r.multi(A)
	r.multi(A, &zk.CheckVersionRequest{Path: p("/p"), Version: 99})
	r.multi(A, &zk.CheckVersionRequest{Path: p("/missing"), Version: -1})
	r.multi(A, &zk.CheckVersionRequest{Path: p("/noread"), Version: -1})
	r.multi(A, &zk.CheckVersionRequest{Path: p("/p"), Version: -1})
	r.multi(A, &zk.CreateRequest{Path: p("/bad/"), Acl: world})
	r.multi(A, &zk.CreateRequest{Path: p("/m4"), Acl: world}, &zk.DeleteRequest{Path: "/", Version: -1})
	r.multi(A, &zk.SetDataRequest{Path: p("/x/"), Version: -1})
	r.multi(A, &zk.CreateRequest{Path: p("/m5"), Acl: world, Flags: 9})
	r.multi(A, &zk.CreateRequest{Path: p("/m5"), Acl: nil})
	r.multi(A, &zk.CreateRequest{Path: p("/m5"), Acl: []zk.ACL{{Perms: 31, Scheme: "foo", ID: "x"}}})
	r.multi(A, &zk.CreateRequest{Path: p("/e/m"), Acl: world})
	r.multi(A, &zk.CreateRequest{Path: p("/ro/m"), Acl: world})
	r.multi(A, &zk.DeleteRequest{Path: p("/s"), Version: -1})
	r.multi(A,
		&zk.CreateRequest{Path: p("/m6"), Acl: world},
		&zk.DeleteRequest{Path: p("/m6"), Version: -1},
		&zk.CreateRequest{Path: p("/m6"), Data: []byte("again"), Acl: world},
		&zk.SetDataRequest{Path: p("/m6"), Data: []byte("x"), Version: 0},
		&zk.CheckVersionRequest{Path: p("/m6"), Version: 1},
	)
	r.get(A, p("/m6"))
	r.multi(A, &zk.CreateRequest{Path: p("/mc"), Acl: world, Flags: zk.FlagContainer})
	r.exists(A, p("/mc"))
	r.multi(A, &zk.CreateRequest{Path: p("/mseq-"), Acl: world, Flags: zk.FlagSequence},
		&zk.CreateRequest{Path: p("/mseq-"), Acl: world, Flags: zk.FlagSequence})

	// --- reconfig (disabled on both)
	r.do(A, "reconfig", true, func(o *rzObs) {
		st, err := A.c.Reconfig([]string{"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181"}, -1)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" stat=")
			o.zkStat(st)
		}
	})
	r.do(A, "incrementalReconfig", true, func(o *rzObs) {
		st, err := A.c.IncrementalReconfig(nil, []string{"2"}, -1)
		o.add("err=%s", rzErr(err))
		if err == nil {
			o.add(" stat=")
			o.zkStat(st)
		}
	})

	// --- containers and TTL nodes the server deletes by itself
	r.existsW(W, p("/ct"), "w-ct")
	r.create(A, p("/ct/x"), nil, zk.FlagPersistent, world)
	r.exists(A, p("/ct"))
	r.del(A, p("/ct/x"), -1)
	r.await(W, "w-ct", 20*time.Second)
	r.exists(A, p("/ct"))
	r.createTTL(A, p("/ttl-short"), []byte("s"), zk.FlagTTL, world, time.Second)
	r.existsW(W, p("/ttl-short"), "w-ttl")
	r.await(W, "w-ttl", 20*time.Second)
	r.exists(A, p("/ttl-short"))
	r.create(A, p("/c4/x"), nil, zk.FlagPersistent, world)
	r.del(A, p("/c4/x"), -1)
	r.create(A, p("/ttl-kids"), nil, zk.FlagPersistent, world)
	r.createTTL(A, p("/ttl-kids/t"), nil, zk.FlagTTL, world, 300*time.Millisecond)
	r.create(A, p("/ttl-kids/t/c"), nil, zk.FlagPersistent, world)
	r.note("sleep 3.5s (containers and TTLs are checked every 1s on ZooKeeper, 100ms on zkraft)")
	time.Sleep(3500 * time.Millisecond)
	r.exists(A, p("/c4"))
	r.exists(A, p("/ct-never"))
	r.exists(A, p("/ttl"))
	r.exists(A, p("/ttlmax"))
	r.exists(A, p("/ttl-kids/t"))
	r.exists(A, p("/mc"))
	r.children(A, r.root)
	r.exists(A, r.root)
	r.barrier(W)

	// --- steps that may close the connection, on a client of their own
	D := r.connectGZ("D")
	r.multi(D, &zk.CreateRequest{Path: p("/mttl"), Acl: world, Flags: zk.FlagTTL})
	r.settle(D, 1500*time.Millisecond)
	r.sync(D, r.root)
	r.exists(D, p("/mttl"))
	r.addAuth(D, "foo", "bar")
	r.settle(D, 1500*time.Millisecond)
	r.sync(D, r.root)

	// --- no stray notifications left anywhere
	for _, cl := range []*rzGZClient{A, B, C, W, D} {
		r.barrier(cl)
	}
}
