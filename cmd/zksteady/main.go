// Command zksteady measures how steady a three-member cluster is on a busy
// machine: with a CPU hog keeping every core busy, one session sets a znode
// every 50 ms, and each member's srvr is polled for who leads. It reports
// the failed writes and the leader changes, for zkraft's -local-cluster,
// three zkraft processes from zoo.cfg files, and a three-member ZooKeeper
// run by ../shared/tools/realzk, one after another on the same machine.
//
//	go build -o /tmp/zkraft ./cmd/zkraft
//	go run ./cmd/zksteady -bin /tmp/zkraft -hog 8 -duration 10m -systems local,processes,realzk
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkraft/zkraft/integration/steady"
	"github.com/zkraft/zkraft/integration/visibility"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-burn" {
		burn()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// burn keeps one core busy until killed.
func burn() {
	runtime.GOMAXPROCS(1)
	x := 0
	for {
		x++
	}
}

type options struct {
	bin, realzk, systems, dir string
	hog, port                 int
	duration                  time.Duration
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("zksteady", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "", "zkraft binary (required for local and processes)")
	fs.StringVar(&o.realzk, "realzk", "../shared/tools/realzk", "the realzk tool that runs ZooKeeper")
	fs.StringVar(&o.systems, "systems", "local,processes,realzk", "systems to measure, in turn: local (-local-cluster 3), processes (three zoo.cfg processes, durable), realzk")
	fs.StringVar(&o.dir, "dir", "", "where the clusters keep their files (default: a temporary dir)")
	fs.IntVar(&o.hog, "hog", 2*runtime.NumCPU()+4, "busy processes beside the cluster (0: none)")
	fs.IntVar(&o.port, "port", 23181, "first client port (below 32768, out of the ephemeral range)")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long each system is measured")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.dir == "" {
		d, err := os.MkdirTemp("", "zksteady-")
		if err != nil {
			fmt.Fprintln(stderr, "zksteady:", err)
			return 1
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	status := 0
	for _, sys := range strings.Split(o.systems, ",") {
		res, err := measure(ctx, o, sys, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "zksteady: %s: %v\n", sys, err)
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "%s, hog %d, %v: %s\n", sys, o.hog, o.duration, res)
	}
	return status
}

// measure starts system sys, waits until every member serves, starts the
// hog, and measures.
func measure(ctx context.Context, o options, sys string, stderr io.Writer) (res steady.Result, err error) {
	dir := filepath.Join(o.dir, sys)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	var clients []string
	for i := range 3 {
		clients = append(clients, "127.0.0.1:"+strconv.Itoa(o.port+i))
	}
	var stopCluster func()
	switch sys {
	case "local":
		stopCluster, err = startLocal(o, dir)
	case "processes":
		stopCluster, err = startProcesses(o, dir)
	case "realzk":
		stopCluster, err = startRealZK(o, dir)
	default:
		return res, fmt.Errorf("unknown system %q", sys)
	}
	if err != nil {
		return res, err
	}
	defer stopCluster()
	if err := waitServing(ctx, clients); err != nil {
		return res, err
	}
	stopHog, err := startHog(o.hog)
	if err != nil {
		return res, err
	}
	defer stopHog()
	fmt.Fprintf(stderr, "zksteady: %s serving; measuring %v beside %d busy processes\n", sys, o.duration, o.hog)
	return steady.Run(ctx, steady.Config{Clients: clients, Duration: o.duration})
}

// startLocal runs zkraft -local-cluster 3.
func startLocal(o options, dir string) (func(), error) {
	return startProc(dir, "local.log", o.bin, "-local-cluster", "3", "-port", strconv.Itoa(o.port))
}

// startProcesses writes three zoo.cfg files, ZooKeeper's sample timing
// (tickTime 2000, syncLimit 5), and starts a zkraft process on each.
func startProcesses(o options, dir string) (func(), error) {
	var servers strings.Builder
	for i := range 3 {
		fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", i+1, o.port+100+i, o.port+200+i)
	}
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	for i := range 3 {
		member := filepath.Join(dir, "n"+strconv.Itoa(i+1))
		cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n%s",
			filepath.Join(member, "data"), o.port+i, servers.String())
		if err := os.MkdirAll(member, 0o755); err != nil {
			return stopAll, err
		}
		path := filepath.Join(member, "zoo.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return stopAll, err
		}
		stop, err := startProc(member, "server.log", o.bin, "-config", path, "-id", strconv.Itoa(i+1))
		if err != nil {
			return stopAll, err
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}

// startRealZK runs a three-member ZooKeeper 3.8 with realzk.
func startRealZK(o options, dir string) (func(), error) {
	out, err := exec.Command(o.realzk, "cluster", dir, strconv.Itoa(o.port)).CombinedOutput()
	stop := func() { exec.Command(o.realzk, "stop", dir).Run() }
	if err != nil {
		return stop, fmt.Errorf("realzk cluster: %v: %s", err, out)
	}
	return stop, nil
}

// startProc starts a process logging to dir/logName; the func returned
// kills it and waits for it.
func startProc(dir, logName, bin string, args ...string) (func(), error) {
	log, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return func() {}, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return func() {}, err
	}
	return func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		log.Close()
	}, nil
}

// startHog starts n processes that each keep a core busy.
func startHog(n int) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return func() {}, err
	}
	var procs []*exec.Cmd
	stop := func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	}
	for range n {
		p := exec.Command(self, "-burn")
		if err := p.Start(); err != nil {
			stop()
			return func() {}, err
		}
		procs = append(procs, p)
	}
	return stop, nil
}

// waitServing waits until every member says it leads or follows.
func waitServing(ctx context.Context, clients []string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		serving := 0
		for _, addr := range clients {
			if mode, err := visibility.ModeWithin(addr, time.Second); err == nil && (mode == "leader" || mode == "follower") {
				serving++
			}
		}
		if serving == len(clients) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the members did not all serve within 2 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
