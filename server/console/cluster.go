package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/tree"
)

// Member is one member in the cluster view.
type Member struct {
	ID       int    `json:"id"`
	Role     string `json:"role"`
	Self     bool   `json:"self"`
	RaftAddr string `json:"raftAddr,omitempty"`
	Client   string `json:"client,omitempty"`
	// Applied is the zxid the member applied, -1 where this member does
	// not know it (a follower knows only its own).
	Applied int64 `json:"applied"`
	// Lag is how far the member is behind (server.MemberStatus.Lag); -1
	// where unknown.
	Lag int64 `json:"lag"`
	// HeardMsAgo is how long ago the leader last heard from it; -1 where
	// unknown.
	HeardMsAgo int64 `json:"heardMsAgo"`
	// Console is the URL of its web console, if it said.
	Console string `json:"console,omitempty"`
}

// Cluster is the cluster view, with what this member holds.
type Cluster struct {
	Self    int      `json:"self"`
	Leader  int      `json:"leader"`
	Members []Member `json:"members"`
	Holds   Holdings `json:"holds"`
	Disk    Disk     `json:"disk"`
}

// Disk is what this member found wrong with its disk and, on the leader,
// with the members' trees (server.DiskHealth).
type Disk struct {
	Corruptions      int64 `json:"corruptions"`
	TornWrites       int64 `json:"tornWrites"`
	Repairing        bool  `json:"repairing"`
	DigestMismatches int64 `json:"digestMismatches"`
	// LastMismatch is the newest member whose tree differed from the
	// leader's, nil if none.
	LastMismatch *Mismatch `json:"lastMismatch,omitempty"`
}

// Mismatch is a member whose tree's digest differed from the leader's.
type Mismatch struct {
	Member   int    `json:"member"`
	Zxid     string `json:"zxid"` // hex, as ZooKeeper shows zxids
	MsAgo    int64  `json:"msAgo"`
	Leader   string `json:"leaderDigest"`
	Differed string `json:"memberDigest"`
}

// Holdings counts what this member's copy of the state holds.
type Holdings struct {
	Znodes     int   `json:"znodes"`
	Ephemerals int   `json:"ephemerals"`
	DataBytes  int64 `json:"dataBytes"`
	Sessions   int   `json:"sessions"`
	Watches    int   `json:"watches"` // held by this member's clients
}

// cluster answers the members as this member sees them.
func (c *Console) cluster(w http.ResponseWriter, r *http.Request) {
	v := clusterOf(c.src.Cluster(), time.Now())
	v.Holds.Sessions, v.Holds.Watches = len(c.src.Sessions()), len(c.src.Watches())
	c.src.Read(func(t *tree.Tree) {
		v.Holds.Znodes, v.Holds.Ephemerals, v.Holds.DataBytes = t.Len(), t.EphemeralCount(), t.ApproximateDataSize()
	})
	writeJSON(w, v)
}

func clusterOf(v server.ClusterView, now time.Time) Cluster {
	out := Cluster{Self: v.Self, Leader: v.Leader, Members: []Member{}, Disk: Disk{Corruptions: v.Disk.Corruptions,
		TornWrites: v.Disk.TornWrites, Repairing: v.Disk.Repairing, DigestMismatches: v.Disk.DigestMismatches}}
	if m := v.Disk.LastMismatch; m != nil {
		out.Disk.LastMismatch = &Mismatch{Member: m.Member, Zxid: "0x" + strconv.FormatUint(m.Zxid, 16),
			MsAgo: now.Sub(m.At).Milliseconds(), Leader: strconv.FormatUint(m.Leader, 16), Differed: strconv.FormatUint(m.Ours, 16)}
	}
	for _, m := range v.Members {
		mm := Member{ID: m.ID, Role: m.Role, Self: m.ID == v.Self, RaftAddr: m.RaftAddr, Client: m.Client,
			Applied: m.Applied, Lag: m.Lag, HeardMsAgo: -1, Console: m.Console}
		if !m.Heard.IsZero() {
			mm.HeardMsAgo = now.Sub(m.Heard).Milliseconds()
		}
		out.Members = append(out.Members, mm)
	}
	return out
}
