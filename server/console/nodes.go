package console

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkraft/zkraft/tree"
	"github.com/zkraft/zkraft/wire"
)

// maxListed bounds the children one listing returns unless asked for more.
const maxListed = 1000

// hexLimit bounds the data shown as a hex dump.
const hexLimit = 4096

// Stat is a node's Stat in JSON. Session ids are hex strings: they do not
// fit a JavaScript number.
type Stat struct {
	Czxid          int64  `json:"czxid"`
	Mzxid          int64  `json:"mzxid"`
	Pzxid          int64  `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
}

func statOf(s wire.Stat) Stat {
	return Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid, Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: sessionID(s.EphemeralOwner),
		DataLength: s.DataLength, NumChildren: s.NumChildren}
}

func sessionID(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }

// Child is one entry of a listing.
type Child struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	Kind        string `json:"kind"`
	NumChildren int32  `json:"numChildren"`
	DataLength  int32  `json:"dataLength"`
}

// Listing is a node's children, in name order.
type Listing struct {
	Path      string  `json:"path"`
	Children  []Child `json:"children"`
	Total     int     `json:"total"`
	Truncated bool    `json:"truncated"`
}

// children lists ?path's children (?limit of them, default 1000).
func (c *Console) children(w http.ResponseWriter, r *http.Request) {
	p, ok := pathParam(w, r)
	if !ok {
		return
	}
	limit := maxListed
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, "", fmt.Sprintf("limit %q is not a positive number", s))
			return
		}
		limit = n
	}
	var l Listing
	var code wire.Code
	c.src.Read(func(t *tree.Tree) {
		var names []string
		names, _, code = t.Children(p, c.ids)
		if code != wire.CodeOK {
			return
		}
		names = slices.Sorted(slices.Values(names)) // a copy: the tree's list is shared
		l = Listing{Path: p, Total: len(names), Truncated: len(names) > limit, Children: []Child{}}
		for _, name := range names[:min(len(names), limit)] {
			cp := join(p, name)
			st, _ := t.Stat(cp)
			kind, _, _ := t.KindOf(cp)
			l.Children = append(l.Children, Child{Name: name, Path: cp, Kind: kindName(kind),
				NumChildren: st.NumChildren, DataLength: st.DataLength})
		}
	})
	if !codeOK(w, code, p) {
		return
	}
	writeJSON(w, l)
}

// Node is a node's detail: its Stat, kind, ACL and data with renderings.
type Node struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	TTL      int64  `json:"ttlMs,omitempty"`
	Stat     Stat   `json:"stat"`
	Ctime    string `json:"ctimeText"`
	Mtime    string `json:"mtimeText"`
	ACL      []ACL  `json:"acl"`
	ACLError string `json:"aclError,omitempty"`
	Data     *Data  `json:"data,omitempty"`
	// DataError says why the data is not shown (no READ permission).
	DataError string `json:"dataError,omitempty"`
}

// ACL is one ACL entry, with its permissions as zkCli prints them.
type ACL struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

// Data is a node's data and how to show it. Format is the hint: "empty",
// "json" (valid JSON: Pretty holds it indented), "text" (UTF-8 without
// control characters but white space) or "binary". Hex is a hex dump of
// the first 4 KiB; Base64 the whole data.
type Data struct {
	Format       string `json:"format"`
	Length       int    `json:"length"`
	Text         string `json:"text,omitempty"`
	Pretty       string `json:"pretty,omitempty"`
	Hex          string `json:"hex"`
	HexTruncated bool   `json:"hexTruncated,omitempty"`
	Base64       string `json:"base64"`
}

// node answers ?path's detail. The Stat shows whatever the ACL (as
// exists); the data needs READ, the ACL READ or ADMIN, as for a client.
func (c *Console) node(w http.ResponseWriter, r *http.Request) {
	p, ok := pathParam(w, r)
	if !ok {
		return
	}
	var n Node
	found := false
	c.src.Read(func(t *tree.Tree) {
		st, code := t.Exists(p)
		if code != wire.CodeOK {
			return
		}
		found = true
		kind, ttl, _ := t.KindOf(p)
		n = Node{Path: p, Kind: kindName(kind), TTL: ttl, Stat: statOf(st),
			Ctime: msText(st.Ctime), Mtime: msText(st.Mtime), ACL: []ACL{}}
		if data, _, code := t.Get(p, c.ids); code == wire.CodeOK {
			n.Data = render(data)
		} else {
			n.DataError = denied(code, "READ")
		}
		if acl, _, code := t.ACL(p, c.ids); code == wire.CodeOK {
			for _, a := range acl {
				n.ACL = append(n.ACL, ACL{Scheme: a.ID.Scheme, ID: a.ID.ID, Perms: perms(a.Perms)})
			}
		} else {
			n.ACLError = denied(code, "READ or ADMIN")
		}
	})
	if !found {
		httpError(w, http.StatusNotFound, wire.CodeNoNode.String(), "no node "+p)
		return
	}
	writeJSON(w, n)
}

func denied(code wire.Code, perm string) string {
	if code == wire.CodeNoAuth {
		return "the console's identities lack " + perm + " permission"
	}
	return code.String()
}

// render copies data and says how to show it.
func render(data []byte) *Data {
	d := &Data{Length: len(data), Base64: base64.StdEncoding.EncodeToString(data)}
	shown := data[:min(len(data), hexLimit)]
	d.Hex, d.HexTruncated = strings.TrimSuffix(hex.Dump(shown), "\n"), len(data) > hexLimit
	switch {
	case len(data) == 0:
		d.Format = "empty"
	case isJSON(data):
		var b bytes.Buffer
		json.Indent(&b, data, "", "  ") // valid: cannot fail
		d.Format, d.Text, d.Pretty = "json", string(data), b.String()
	case isText(data):
		d.Format, d.Text = "text", string(data)
	default:
		d.Format = "binary"
	}
	return d
}

// isJSON reports whether data is a JSON object or array: a bare number or
// string is shown as text.
func isJSON(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t)
}

// isText reports whether data is UTF-8 without control characters other
// than white space.
func isText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if r < ' ' && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// perms renders ACL permissions as zkCli does: c, d, r, w, a.
func perms(p int32) string {
	var b strings.Builder
	for _, f := range []struct {
		bit int32
		c   byte
	}{{wire.PermCreate, 'c'}, {wire.PermDelete, 'd'}, {wire.PermRead, 'r'}, {wire.PermWrite, 'w'}, {wire.PermAdmin, 'a'}} {
		if p&f.bit != 0 {
			b.WriteByte(f.c)
		}
	}
	return b.String()
}

func kindName(k tree.Kind) string {
	switch k {
	case tree.KindEphemeral:
		return "ephemeral"
	case tree.KindContainer:
		return "container"
	case tree.KindTTL:
		return "ttl"
	}
	return "persistent"
}

func msText(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// pathParam reads ?path, which must be a valid ZooKeeper path.
func pathParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	if err := validPath(p); err != "" {
		httpError(w, http.StatusBadRequest, wire.CodeBadArguments.String(), fmt.Sprintf("path %q: %s", p, err))
		return "", false
	}
	return p, true
}

// validPath checks a path as ZooKeeper's PathUtils.validatePath, returning
// what is wrong, or "".
func validPath(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "must start with /"
	case p == "/":
		return ""
	case strings.HasSuffix(p, "/"):
		return "must not end with /"
	case strings.ContainsRune(p, 0):
		return "must not contain a NUL character"
	}
	for _, part := range strings.Split(p[1:], "/") {
		switch part {
		case "":
			return "empty node name"
		case ".", "..":
			return "relative node name " + part
		}
	}
	return ""
}

// codeOK answers the HTTP error a read's code means, and reports whether
// it was OK.
func codeOK(w http.ResponseWriter, code wire.Code, p string) bool {
	switch code {
	case wire.CodeOK:
		return true
	case wire.CodeNoNode:
		httpError(w, http.StatusNotFound, code.String(), "no node "+p)
	case wire.CodeNoAuth:
		httpError(w, http.StatusForbidden, code.String(), "the console's identities lack READ permission on "+p)
	default:
		httpError(w, http.StatusInternalServerError, code.String(), "read "+p+": "+code.String())
	}
	return false
}

func join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
