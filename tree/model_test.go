package tree_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// This file checks Tree against a deliberately naive model (STYLE rule 23):
// a flat map from path to node, children found by scanning every key, and
// each operation written straight from PROTOCOL.md 4.2 and 5.3-5.6, 5.10.

// modelNode is one znode of the model. readOnly marks the ACL
// world:anyone:READ, which denies WRITE, CREATE, DELETE and ADMIN.
type modelNode struct {
	data      []byte
	readOnly  bool
	owner     int64 // the session of an ephemeral, else 0
	container bool
	czxid     int64
	mzxid     int64
	pzxid     int64
	ctime     int64
	mtime     int64
	version   int32
	creates   int32 // the stored cversion
	aversion  int32
}

type model map[string]modelNode

func newModel() model {
	return model{
		"/":                 {data: []byte{}},
		"/zookeeper":        {data: []byte{}},
		"/zookeeper/quota":  {data: []byte{}},
		"/zookeeper/config": {data: []byte{}, readOnly: true, aversion: -1},
	}
}

func modelParent(p string) string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// children scans every path for those whose parent is p.
func (m model) children(p string) []string {
	var out []string
	for k := range m {
		if k != "/" && modelParent(k) == p {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (m model) stat(p string) wire.Stat {
	n := m[p]
	nc := int32(len(m.children(p)))
	return wire.Stat{
		Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime, Mtime: n.mtime,
		Version: n.version, Cversion: 2*n.creates - nc, Aversion: n.aversion,
		EphemeralOwner: n.owner, DataLength: int32(len(n.data)), NumChildren: nc, Pzxid: n.pzxid,
	}
}

// modelValid is path validity for the names the generator produces.
func modelValid(p string) bool {
	return p == "/" || (!strings.HasSuffix(p, "/") && !strings.Contains(p, "//"))
}

type modelOp struct {
	zxid, now, session int64
	triggers           []tree.Trigger
}

func (o *modelOp) fire(p string, ev wire.EventType) {
	o.triggers = append(o.triggers, tree.Trigger{Path: p, Event: ev})
}

func (m model) create(o *modelOp, path string, data []byte, readOnly bool, flags int32, container bool) (string, wire.Code) {
	if flags < 0 || flags > 4 {
		return "", wire.CodeBadArguments
	}
	pp := modelParent(path)
	parent, ok := m[pp]
	if !ok {
		return "", wire.CodeNoNode
	}
	if parent.readOnly {
		return "", wire.CodeNoAuth
	}
	final := path
	if flags == 2 || flags == 3 {
		final += fmt.Sprintf("%010d", parent.creates)
	}
	if !modelValid(final) {
		return "", wire.CodeBadArguments
	}
	if _, ok := m[final]; ok {
		return "", wire.CodeNodeExists
	}
	if parent.owner != 0 {
		return "", wire.CodeNoChildrenForEphemerals
	}
	n := modelNode{
		data: data, readOnly: readOnly, container: container && flags == 4,
		czxid: o.zxid, mzxid: o.zxid, pzxid: o.zxid, ctime: o.now, mtime: o.now,
	}
	if flags == 1 || flags == 3 {
		n.owner = o.session
	}
	m[final] = n
	parent.creates++
	parent.pzxid = o.zxid
	m[pp] = parent
	o.fire(final, wire.EventNodeCreated)
	o.fire(pp, wire.EventNodeChildrenChanged)
	return final, wire.CodeOK
}

func (m model) delete(o *modelOp, path string, version int32) wire.Code {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return wire.CodeBadArguments
	}
	pp := modelParent(path)
	parent, ok := m[pp]
	if !ok {
		return wire.CodeNoNode
	}
	if parent.readOnly {
		return wire.CodeNoAuth
	}
	n, ok := m[path]
	if !ok {
		return wire.CodeNoNode
	}
	if version != -1 && version != n.version {
		return wire.CodeBadVersion
	}
	if len(m.children(path)) > 0 {
		return wire.CodeNotEmpty
	}
	delete(m, path)
	parent.pzxid = o.zxid
	m[pp] = parent
	o.fire(path, wire.EventNodeDeleted)
	o.fire(pp, wire.EventNodeChildrenChanged)
	return wire.CodeOK
}

func (m model) setData(o *modelOp, path string, data []byte, version int32) wire.Code {
	n, ok := m[path]
	switch {
	case !ok:
		return wire.CodeNoNode
	case n.readOnly:
		return wire.CodeNoAuth
	case version != -1 && version != n.version:
		return wire.CodeBadVersion
	}
	n.data, n.version, n.mzxid, n.mtime = data, n.version+1, o.zxid, o.now
	m[path] = n
	o.fire(path, wire.EventNodeDataChanged)
	return wire.CodeOK
}

func (m model) check(path string, version int32) wire.Code {
	n, ok := m[path]
	switch {
	case !ok:
		return wire.CodeNoNode
	case version != -1 && version != n.version:
		return wire.CodeBadVersion
	}
	return wire.CodeOK
}

// multi applies ops to a copy and keeps it only if every op succeeded.
func (m *model) multi(o *modelOp, ops []wire.MultiOp) []wire.MultiResult {
	work := maps.Clone(*m)
	results := make([]wire.MultiResult, len(ops))
	for i, op := range ops {
		var code wire.Code
		switch r := op.Req.(type) {
		case *wire.CreateRequest:
			var p string
			p, code = work.create(o, r.Path, r.Data, false, r.Flags, true)
			results[i] = wire.MultiResult{Type: wire.OpCreate, Path: p}
			if code == wire.CodeOK && r.Flags == wire.FlagContainer {
				results[i] = wire.MultiResult{Type: wire.OpCreate2, Path: p, Stat: work.stat(p)}
			}
		case *wire.DeleteRequest:
			code = work.delete(o, r.Path, r.Version)
			results[i] = wire.MultiResult{Type: wire.OpDelete}
		case *wire.SetDataRequest:
			code = work.setData(o, r.Path, r.Data, r.Version)
			results[i] = wire.MultiResult{Type: wire.OpSetData}
			if code == wire.CodeOK {
				results[i].Stat = work.stat(r.Path)
			}
		case *wire.CheckVersionRequest:
			code = work.check(r.Path, r.Version)
			results[i] = wire.MultiResult{Type: wire.OpCheck}
		}
		if code != wire.CodeOK {
			o.triggers = nil
			return failed(len(ops), i, code)
		}
	}
	*m = work
	return results
}

func (m model) closeSession(o *modelOp, session int64) []string {
	paths := []string{}
	for p, n := range m {
		if n.owner == session {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		pp := modelParent(p)
		parent := m[pp]
		parent.pzxid = o.zxid
		m[pp] = parent
		delete(m, p)
		o.fire(p, wire.EventNodeDeleted)
		o.fire(pp, wire.EventNodeChildrenChanged)
	}
	return paths
}

func (m model) ephemerals(session int64) []string {
	out := []string{}
	for p, n := range m {
		if n.owner == session {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// requireTriggers compares trigger lists, nil and empty alike.
func requireTriggers(t *rapid.T, want, got []tree.Trigger) {
	t.Helper()
	w, g := noACL(want), noACL(got)
	require.Truef(t, slices.EqualFunc(w, g, func(a, b tree.Trigger) bool { return a.Path == b.Path && a.Event == b.Event }),
		"triggers: want %v, got %v", w, g)
}

// treeMachine drives a Tree and the model with the same random operations.
type treeMachine struct {
	tr   *tree.Tree
	m    model
	zxid int64
}

var (
	modelSessions = []int64{sessA, sessB}
	modelNames    = []string{"a", "b", "c", ""}
	// modelUniverse holds paths that may or may not exist.
	modelUniverse = []string{
		"/", "/a", "/b", "/a/a", "/a/b", "/b/c", "/a/a/a", "/zookeeper", "/zookeeper/config", "/nope/a",
	}
)

func (s *treeMachine) next() *modelOp {
	s.zxid++
	return &modelOp{zxid: s.zxid, now: 5 * s.zxid}
}

func (s *treeMachine) ctx(o *modelOp) *tree.Context {
	return &tree.Context{Zxid: o.zxid, Time: o.now, Session: o.session}
}

func (s *treeMachine) drawPath(t *rapid.T, label string) string {
	existing := slices.Sorted(maps.Keys(s.m))
	if rapid.IntRange(0, 9).Draw(t, label+"Source") < 7 {
		return rapid.SampledFrom(existing).Draw(t, label)
	}
	return rapid.SampledFrom(modelUniverse).Draw(t, label)
}

func (s *treeMachine) drawChild(t *rapid.T) string {
	parent := s.drawPath(t, "parent")
	name := rapid.SampledFrom(modelNames).Draw(t, "name")
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

func (s *treeMachine) drawVersion(t *rapid.T, path string) int32 {
	v := s.m[path].version
	return rapid.SampledFrom([]int32{-1, v, v + 1}).Draw(t, "version")
}

func drawData(t *rapid.T) []byte {
	if rapid.IntRange(0, 4).Draw(t, "nilData") == 0 {
		return nil
	}
	return rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "data")
}

func (s *treeMachine) Create(t *rapid.T) {
	o := s.next()
	o.session = rapid.SampledFrom(modelSessions).Draw(t, "session")
	path := s.drawChild(t)
	flags := rapid.SampledFrom([]int32{0, 1, 2, 3, 4, 7}).Draw(t, "flags")
	readOnly := rapid.IntRange(0, 9).Draw(t, "readOnly") == 0
	data := drawData(t)
	acl := wire.OpenACLUnsafe
	if readOnly {
		acl = wire.ReadACLUnsafe
	}

	wantPath, wantCode := s.m.create(o, path, data, readOnly, flags, false)
	c := s.ctx(o)
	gotPath, st, code := s.tr.Create(c, tree.CreateArgs{Op: wire.OpCreate, Path: path, Data: data, ACL: acl, Flags: flags, TTL: -1})
	require.Equal(t, wantCode, code, "create %q flags %d", path, flags)
	require.Equal(t, wantPath, gotPath)
	if code == wire.CodeOK {
		require.Equal(t, s.m.stat(wantPath), st)
	}
	requireTriggers(t, o.triggers, c.Triggers)
}

func (s *treeMachine) Delete(t *rapid.T) {
	o := s.next()
	path := s.drawPath(t, "path")
	version := s.drawVersion(t, path)
	want := s.m.delete(o, path, version)
	c := s.ctx(o)
	require.Equal(t, want, s.tr.Delete(c, path, version), "delete %q version %d", path, version)
	requireTriggers(t, o.triggers, c.Triggers)
}

func (s *treeMachine) SetData(t *rapid.T) {
	o := s.next()
	path := s.drawPath(t, "path")
	version := s.drawVersion(t, path)
	data := drawData(t)
	want := s.m.setData(o, path, data, version)
	c := s.ctx(o)
	st, code := s.tr.SetData(c, path, data, version)
	require.Equal(t, want, code, "setData %q version %d", path, version)
	if code == wire.CodeOK {
		require.Equal(t, s.m.stat(path), st)
	}
	requireTriggers(t, o.triggers, c.Triggers)
}

func (s *treeMachine) Multi(t *rapid.T) {
	o := s.next()
	o.session = rapid.SampledFrom(modelSessions).Draw(t, "session")
	n := rapid.IntRange(0, 4).Draw(t, "ops")
	ops := make([]wire.MultiOp, n)
	for i := range ops {
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			flags := rapid.SampledFrom([]int32{0, 1, 2, 3, 4, 7}).Draw(t, "flags")
			ops[i] = wire.MultiOp{Type: wire.OpCreate, Req: &wire.CreateRequest{
				Path: s.drawChild(t), Data: drawData(t), ACL: wire.OpenACLUnsafe, Flags: flags,
			}}
		case 1:
			p := s.drawPath(t, "path")
			ops[i] = wire.MultiOp{Type: wire.OpDelete, Req: &wire.DeleteRequest{Path: p, Version: s.drawVersion(t, p)}}
		case 2:
			p := s.drawPath(t, "path")
			ops[i] = wire.MultiOp{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: p, Data: drawData(t), Version: s.drawVersion(t, p)}}
		default:
			p := s.drawPath(t, "path")
			// Versions one or two ahead can match after a setData earlier in the multi.
			v := s.m[p].version + rapid.Int32Range(-1, 2).Draw(t, "ahead")
			ops[i] = wire.MultiOp{Type: wire.OpCheck, Req: &wire.CheckVersionRequest{Path: p, Version: v}}
		}
	}
	want := s.m.multi(o, ops)
	c := s.ctx(o)
	got := s.tr.Multi(c, ops)
	require.Equal(t, want, got)
	requireTriggers(t, o.triggers, c.Triggers)
}

func (s *treeMachine) CloseSession(t *rapid.T) {
	o := s.next()
	session := rapid.SampledFrom(modelSessions).Draw(t, "session")
	want := s.m.closeSession(o, session)
	c := s.ctx(o)
	got := s.tr.CloseSession(c, session)
	// The model cannot predict ZooKeeper's (Java HashSet) order, which
	// TestTree_CloseSessionJavaOrder checks; here the sets must agree.
	require.ElementsMatch(t, want, got)
	require.ElementsMatch(t, noACL(o.triggers), noACL(c.Triggers))
}

// Check compares every node, its Stat and data, and the ephemeral index.
func (s *treeMachine) Check(t *rapid.T) {
	require.NoError(t, s.tr.Check())
	paths := slices.Sorted(maps.Keys(s.m))
	require.Equal(t, paths, treePaths(s.tr))
	require.Equal(t, len(paths), s.tr.Len())
	for _, p := range paths {
		data, st, code := s.tr.Get(p, nil)
		require.Equal(t, wire.CodeOK, code, p)
		require.Equal(t, s.m.stat(p), st, "stat of %s", p)
		want := s.m[p].data
		require.Equal(t, want == nil, data == nil, "null data of %s", p)
		require.Equal(t, string(want), string(data), "data of %s", p)
	}
	for _, sess := range modelSessions {
		require.Equal(t, s.m.ephemerals(sess), sorted(s.tr.Ephemerals(sess, "/")), "ephemerals of %#x", sess)
	}
}

func TestTree_Model(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := &treeMachine{tr: tree.New(), m: newModel()}
		rt.Repeat(rapid.StateMachineActions(s))
		require.NoError(rt, s.tr.Check(), "tree invariants at the end")
	})
}
