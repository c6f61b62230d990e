package history

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// hist builds a history by hand: each op is called and answered in turn
// unless its times are given.
type hist struct{ r *Recorder }

func newHist() *hist { return &hist{r: New()} }

// op appends a completed op: called and answered after everything before.
func (h *hist) op(o Op) *Op {
	o.Call = h.r.seq.Add(1)
	o.Return = h.r.seq.Add(1)
	return h.add(o)
}

func (h *hist) add(o Op) *Op {
	if o.Session == 0 {
		o.Session = int64(o.Client + 1) // a session of its own unless told
	}
	if o.Err != nil {
		o.Outcome = outcome(o.Err)
	}
	o.ID = len(h.r.ops)
	h.r.ops = append(h.r.ops, &o)
	return &o
}

func (h *hist) event(client int, ev zk.Event) {
	h.r.events = append(h.r.events, Event{Client: client, Seq: h.r.seq.Add(1), Event: ev})
}

func stat(czxid, mzxid int64, version int32) *zk.Stat {
	return &zk.Stat{Czxid: czxid, Mzxid: mzxid, Version: version}
}

func guarantees(rep *Report) []string {
	var out []string
	for _, v := range rep.Violations {
		out = append(out, v.Guarantee)
	}
	return out
}

func TestCheck_ZxidOrder(t *testing.T) {
	h := newHist()
	h.op(Op{Client: 0, Kind: "set", Path: "/a", Data: []byte("x"), Version: -1, Stat: stat(2, 10, 1)})
	h.op(Op{Client: 1, Kind: "get", Path: "/b", Result: []byte(""), Stat: stat(3, 12, 0)}) // seen zxid 12
	h.op(Op{Client: 1, Kind: "get", Path: "/a", Result: []byte(""), Stat: stat(2, 5, 0)})  // but /a older than 10
	rep := h.r.Check()
	assert.Equal(t, []string{"writes in zxid order"}, guarantees(rep))

	// The same read on a session that had seen nothing past 9 is fine.
	h = newHist()
	h.op(Op{Client: 0, Kind: "set", Path: "/a", Data: []byte("x"), Version: -1, Stat: stat(2, 10, 1)})
	h.op(Op{Client: 1, Kind: "get", Path: "/b", Result: []byte(""), Stat: stat(3, 9, 0)})
	h.op(Op{Client: 1, Kind: "get", Path: "/a", Result: []byte(""), Stat: stat(2, 5, 0)})
	assert.Empty(t, h.r.Check().Violations)
}

func TestCheck_WatchBeforeData(t *testing.T) {
	build := func(eventFirst, disconnect bool) *Report {
		h := newHist()
		h.event(0, zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
		h.op(Op{Client: 0, Kind: "get", Path: "/w", Watch: true, Result: []byte("1"), Stat: stat(2, 2, 0)})
		h.op(Op{Client: 1, Kind: "set", Path: "/w", Data: []byte("2"), Version: 0, Stat: stat(2, 3, 1)})
		if disconnect {
			h.event(0, zk.Event{Type: zk.EventSession, State: zk.StateDisconnected})
		}
		if eventFirst {
			h.event(0, zk.Event{Type: zk.EventNodeDataChanged, Path: "/w"})
		}
		h.op(Op{Client: 0, Kind: "get", Path: "/w", Result: []byte("2"), Stat: stat(2, 3, 1)})
		return h.r.Check()
	}
	assert.Empty(t, build(true, false).Violations, "the event came first")
	assert.Equal(t, []string{"watch before data"}, guarantees(build(false, false)))
	assert.Empty(t, build(false, true).Violations, "the connection was lost in between: not held against the server")
}

func TestCheck_ReadYourWrites(t *testing.T) {
	h := newHist()
	h.op(Op{Client: 0, Kind: "create", Path: "/n", Created: "/n", Data: []byte("1")})
	h.op(Op{Client: 0, Kind: "exists", Path: "/n"}) // no node
	assert.Equal(t, []string{"read your writes"}, guarantees(h.r.Check()))

	h = newHist()
	h.op(Op{Client: 0, Kind: "create", Path: "/n", Created: "/n", Data: []byte("1")})
	h.op(Op{Client: 1, Kind: "delete", Path: "/n", Version: -1})
	h.op(Op{Client: 0, Kind: "exists", Path: "/n"})
	assert.Empty(t, h.r.Check().Violations, "another client deleted it")

	h = newHist()
	h.op(Op{Client: 0, Kind: "create", Path: "/n", Created: "/n", Flags: zk.FlagEphemeral})
	h.op(Op{Client: 0, Kind: "exists", Path: "/n"})
	assert.Empty(t, h.r.Check().Violations, "an ephemeral may vanish")
}

func TestCheck_Linearizability(t *testing.T) {
	sync := func(h *hist, client int) { h.op(Op{Client: client, Kind: "sync", Path: "/"}) }
	t.Run("a synced read older than a completed write", func(t *testing.T) {
		h := newHist()
		h.op(Op{Client: 0, Kind: "create", Path: "/r", Created: "/r", Data: []byte("a")})
		h.op(Op{Client: 0, Kind: "set", Path: "/r", Data: []byte("b"), Version: 0, Stat: stat(1, 2, 1)})
		sync(h, 1)
		h.op(Op{Client: 1, Kind: "get", Path: "/r", Result: []byte("a"), Stat: stat(1, 1, 0)})
		rep := h.r.Check()
		assert.Equal(t, "Illegal", rep.Verdict)
		assert.Equal(t, []string{"/r"}, rep.Illegal)
	})
	t.Run("an unsynced stale read is not checked", func(t *testing.T) {
		h := newHist()
		h.op(Op{Client: 0, Kind: "create", Path: "/r", Created: "/r", Data: []byte("a")})
		h.op(Op{Client: 0, Kind: "set", Path: "/r", Data: []byte("b"), Version: 0, Stat: stat(1, 2, 1)})
		h.op(Op{Client: 1, Kind: "get", Path: "/r", Result: []byte("a"), Stat: stat(1, 1, 0)})
		assert.Equal(t, "Ok", h.r.Check().Verdict)
	})
	t.Run("a write of unknown outcome may have happened", func(t *testing.T) {
		for _, happened := range []bool{true, false} {
			h := newHist()
			h.op(Op{Client: 0, Kind: "create", Path: "/r", Created: "/r", Data: []byte("a")})
			h.op(Op{Client: 0, Kind: "set", Path: "/r", Data: []byte("b"), Version: 0, Err: zk.ErrConnectionClosed})
			sync(h, 1)
			got := Op{Client: 1, Kind: "get", Path: "/r", Result: []byte("a"), Stat: stat(1, 1, 0)}
			if happened {
				got.Result, got.Stat = []byte("b"), stat(1, 2, 1)
			}
			h.op(got)
			assert.Equal(t, "Ok", h.r.Check().Verdict, "happened: %v", happened)
		}
	})
	t.Run("a node from before the history starts unknown", func(t *testing.T) {
		h := newHist()
		sync(h, 0)
		h.op(Op{Client: 0, Kind: "get", Path: "/old", Result: []byte("x"), Stat: stat(1, 1, 4)})
		h.op(Op{Client: 1, Kind: "set", Path: "/old", Data: []byte("y"), Version: 4, Stat: stat(1, 9, 5)})
		h.op(Op{Client: 1, Kind: "create", Path: "/old", Err: zk.ErrNodeExists})
		assert.Equal(t, "Ok", h.r.Check().Verdict)
		h.op(Op{Client: 1, Kind: "set", Path: "/old", Data: []byte("z"), Version: 4, Stat: stat(1, 10, 5)})
		assert.Equal(t, "Illegal", h.r.Check().Verdict, "version 4 was gone")
	})
	t.Run("a multi's ops happen together", func(t *testing.T) {
		h := newHist()
		h.op(Op{Client: 0, Kind: "multi", Sub: []*Op{
			{Kind: "create", Path: "/m", Created: "/m", Data: []byte("1")},
			{Kind: "set", Path: "/m", Data: []byte("2"), Version: 0, Stat: stat(1, 1, 1)},
		}})
		sync(h, 1)
		h.op(Op{Client: 1, Kind: "get", Path: "/m", Result: []byte("2"), Stat: stat(1, 1, 1)})
		assert.Equal(t, "Ok", h.r.Check().Verdict)
	})
}

// What a correct ZooKeeper history may hold, and the checker must accept.
func TestCheck_NoFalsePositives(t *testing.T) {
	t.Run("a write refused for its ACL or arguments", func(t *testing.T) {
		h := newHist()
		h.op(Op{Client: 0, Kind: "create", Path: "/a", Created: "/a", Data: []byte("x")})
		h.op(Op{Client: 1, Kind: "set", Path: "/a", Data: []byte("y"), Version: -1, Err: zk.ErrNoAuth})
		h.op(Op{Client: 1, Kind: "create", Path: "/a", Flags: 5, Err: zk.ErrInvalidFlags})
		h.op(Op{Client: 1, Kind: "delete", Path: "/a", Version: -1, Err: zk.ErrBadArguments})
		rep := h.r.Check()
		assert.Equal(t, "Ok", rep.Verdict)
		assert.Empty(t, rep.Violations)
	})
	t.Run("one client's calls answered in another order than returned", func(t *testing.T) {
		// A get sent and answered first (mzxid 3), a set sent second and
		// answered second (mzxid 7), whose goroutine returned first.
		h := newHist()
		get := h.add(Op{Client: 0, Kind: "get", Path: "/a", Result: []byte("x"), Stat: stat(2, 3, 1),
			Call: h.r.seq.Add(1)})
		set := h.add(Op{Client: 0, Kind: "set", Path: "/a", Data: []byte("y"), Version: 1, Stat: stat(2, 7, 2),
			Call: h.r.seq.Add(1)})
		set.Return = h.r.seq.Add(1)
		get.Return = h.r.seq.Add(1)
		h.r.ops[0], h.r.ops[1] = get, set
		assert.Empty(t, h.r.Check().Violations)
	})
	t.Run("a new session after an expiry", func(t *testing.T) {
		h := newHist()
		h.op(Op{Client: 0, Session: 10, Kind: "create", Path: "/n", Created: "/n", Data: []byte("1")})
		h.op(Op{Client: 0, Session: 10, Kind: "sync", Path: "/"})
		h.op(Op{Client: 0, Session: 11, Kind: "exists", Path: "/n"}) // a new session on a member behind
		rep := h.r.Check()
		assert.Empty(t, rep.Violations)
		assert.Equal(t, "Ok", rep.Verdict, "the sync was another session's: the read is not checked")
	})
	t.Run("a node from before the history may be reaped", func(t *testing.T) {
		h := newHist()
		h.op(Op{Client: 0, Kind: "sync", Path: "/"})
		h.op(Op{Client: 0, Kind: "get", Path: "/box", Result: []byte{}, Stat: stat(1, 1, 0)}) // a container
		h.op(Op{Client: 0, Kind: "sync", Path: "/"})
		h.op(Op{Client: 0, Kind: "get", Path: "/box", Err: zk.ErrNoNode})
		assert.Equal(t, "Ok", h.r.Check().Verdict)
	})
}
