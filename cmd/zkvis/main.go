// Command zkvis measures how soon a write acknowledged through one member
// of an ensemble shows through another: the share of first reads that are
// stale and the visibility delay (from the writer's reply to the first read
// that shows the write), leader to follower and follower to follower.
//
//	zkvis zkraft=127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 \
//	      zk=127.0.0.1:12181,127.0.0.1:12182,127.0.0.1:12183
//	zkvis -tries 500 -rounds 5 pair=127.0.0.1:2181,127.0.0.1:2182   (two addresses: write through the first, read through the second)
//
// Each ensemble's roles come from srvr. Rounds alternate between the
// ensembles, so that the machine's noise falls on all of them alike.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkraft/zkraft/integration/visibility"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type pair struct {
	ensemble, kind string
	write, read    string
	total          visibility.Result
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkvis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tries := fs.Int("tries", 200, "writes per pair and round")
	rounds := fs.Int("rounds", 3, "rounds; each measures every pair once")
	path := fs.String("path", "/zkvis", "znode written")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: zkvis [flags] NAME=host:port,host:port[,...] ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	var pairs []*pair
	for _, arg := range fs.Args() {
		name, list, ok := strings.Cut(arg, "=")
		if !ok {
			name, list = arg, arg
		}
		addrs := strings.Split(list, ",")
		if len(addrs) == 2 {
			pairs = append(pairs, &pair{ensemble: name, kind: "first to second", write: addrs[0], read: addrs[1]})
			continue
		}
		leader, followers, err := visibility.Roles(addrs, 30*time.Second)
		if err != nil {
			fmt.Fprintln(stderr, "zkvis:", name+":", err)
			return 1
		}
		if len(followers) == 0 {
			fmt.Fprintln(stderr, "zkvis:", name+": no followers")
			return 1
		}
		pairs = append(pairs, &pair{ensemble: name, kind: "leader to follower", write: leader, read: followers[0]})
		if len(followers) > 1 {
			pairs = append(pairs, &pair{ensemble: name, kind: "follower to follower", write: followers[0], read: followers[1]})
		}
	}
	for round := range *rounds {
		for _, p := range pairs {
			res, err := visibility.Measure(visibility.Config{Write: p.write, Read: p.read, Tries: *tries, Path: *path})
			if err != nil {
				fmt.Fprintf(stderr, "zkvis: %s %s: %v\n", p.ensemble, p.kind, err)
				return 1
			}
			fmt.Fprintf(stderr, "round %d: %s %s: stale first reads %d/%d, p99 %v\n",
				round+1, p.ensemble, p.kind, res.StaleFirst, res.Tries, res.Percentile(0.99).Round(time.Microsecond))
			p.total.Tries += res.Tries
			p.total.StaleFirst += res.StaleFirst
			p.total.Delays = append(p.total.Delays, res.Delays...)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ensemble\tpath\ttries\tstale first reads\tp50\tp99\tmax\t")
	for _, p := range pairs {
		t := p.total
		slices.Sort(t.Delays)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%v\t%v\t%v\t\n", p.ensemble, p.kind, t.Tries, 100*t.StaleShare(),
			t.Percentile(0.5).Round(time.Microsecond), t.Percentile(0.99).Round(time.Microsecond), t.Max().Round(time.Microsecond))
	}
	tw.Flush()
	return 0
}
