// Command zkfailover measures what killing the leader costs clients, on
// clusters of separate processes: sessions write in a loop through the whole
// connect string, the leader is killed with SIGKILL, and each trial reports
// the time from the kill to the first write issued after it that succeeds,
// and how much of it the operating system took to close the killed
// process's connections (a session held on the killed member sees when).
// The killed member is started again before the next trial.
//
//	../shared/tools/realzk cluster /tmp/rz3 12181
//	integration/scripts/zkraft-cluster start /tmp/zr3 22181
//	zkfailover -trials 10 realzk=../shared/tools/realzk,/tmp/rz3 zkraft=integration/scripts/zkraft-cluster,/tmp/zr3
//
// A cluster is NAME=TOOL,DIR: a script with realzk's verbs and layout
// (member i's zoo.cfg and pid in DIR/ni, `TOOL start-member DIR i`). Trials
// alternate between the clusters.
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

	"github.com/zkraft/zkraft/integration/failover"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type target struct {
	name   string
	c      *failover.Script
	trials []failover.Trial
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkfailover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := failover.Config{}
	fs.IntVar(&cfg.Trials, "trials", 5, "leader kills per cluster")
	fs.IntVar(&cfg.Sessions, "sessions", 4, "writing sessions")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "how long a trial may wait for a write, or for the members to serve again")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: zkfailover [flags] NAME=TOOL,DIR ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	var targets []*target
	for _, arg := range fs.Args() {
		name, spec, _ := strings.Cut(arg, "=")
		tool, dir, ok := strings.Cut(spec, ",")
		if !ok {
			fmt.Fprintf(stderr, "zkfailover: %q: want NAME=TOOL,DIR\n", arg)
			return 2
		}
		c, err := failover.NewScript(tool, dir)
		if err != nil {
			fmt.Fprintln(stderr, "zkfailover:", err)
			return 1
		}
		targets = append(targets, &target{name: name, c: c})
	}
	trials := cfg.Trials
	cfg.Trials = 1
	for i := range trials {
		cfg.Numbered = i
		for _, t := range targets {
			res, err := failover.Run(t.c, cfg, prefixed{stderr, t.name + ": "})
			if err != nil {
				fmt.Fprintf(stderr, "zkfailover: %s: %v\n", t.name, err)
				return 1
			}
			t.trials = append(t.trials, res...)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cluster\ttrials\tmin\tmedian\tmax\tkernel closed (median)\tafter the close: min\tmedian\tmax\twrites failed\t")
	for _, t := range targets {
		var d, closed, after []time.Duration
		failed := 0
		for _, tr := range t.trials {
			d = append(d, tr.FirstAck)
			closed = append(closed, tr.Closed)
			after = append(after, tr.FirstAck-tr.Closed)
			failed += tr.Failed
		}
		ms := func(v time.Duration) time.Duration { return v.Round(time.Millisecond) }
		slices.Sort(d)
		slices.Sort(closed)
		slices.Sort(after)
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%d\t\n", t.name, len(d), ms(d[0]), ms(d[len(d)/2]), ms(d[len(d)-1]),
			ms(closed[len(closed)/2]), ms(after[0]), ms(after[len(after)/2]), ms(after[len(after)-1]), failed)
	}
	tw.Flush()
	return 0
}

type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
