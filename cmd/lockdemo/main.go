// Command lockdemo runs the seeds' lock experiment with the lockrecipe
// package: N workers, each with its own ZooKeeper session, contend for one
// lock, each holding it briefly. It prints who got the lock in which order
// (with each holder's node) and checks that no two workers ever held it at
// once and that the lock went in the order of the nodes' sequence numbers.
//
//	go run ./cmd/lockdemo                         against an embedded zkraft
//	go run ./cmd/lockdemo -server 127.0.0.1:2181  against any ZooKeeper
//	go run ./cmd/lockdemo -workers 50 -rounds 3 -hold 5ms
//
// It exits with status 1 if the check fails, 2 on a bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server"
)

type config struct {
	server  string
	path    string
	workers int
	rounds  int
	hold    time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockdemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.server, "server", "", "ZooKeeper connect string (host:port,...); empty: an embedded zkraft")
	fs.StringVar(&cfg.path, "path", "", "lock path (default: /lockdemo/<unique>)")
	fs.IntVar(&cfg.workers, "workers", 10, "workers, each with its own session")
	fs.IntVar(&cfg.rounds, "rounds", 1, "times each worker takes the lock")
	fs.DurationVar(&cfg.hold, "hold", 20*time.Millisecond, "how long each worker holds the lock")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.workers < 1 || cfg.rounds < 1 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "lockdemo: -workers and -rounds must be at least 1, and no arguments are taken")
		return 2
	}
	if cfg.path == "" {
		cfg.path = fmt.Sprintf("/lockdemo/run-%x", time.Now().UnixNano())
	}
	if cfg.server == "" {
		srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0"})
		if err == nil {
			err = srv.Start()
		}
		if err != nil {
			fmt.Fprintln(stderr, "lockdemo: embedded zkraft:", err)
			return 1
		}
		defer srv.Close()
		cfg.server = srv.ConnectString()
		fmt.Fprintf(stdout, "embedded zkraft on %s\n", cfg.server)
	}
	if err := experiment(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "lockdemo:", err)
		return 1
	}
	return 0
}

// acquisition is one worker's turn with the lock.
type acquisition struct {
	worker int
	node   string
}

// demo is the state the workers share.
type demo struct {
	cfg     config
	stdout  io.Writer
	holders atomic.Int32 // workers inside the lock now
	overlap atomic.Int32 // times a worker found another inside

	mu    sync.Mutex // guards order, errs and stdout
	order []acquisition
	errs  []error
}

// experiment connects the workers, lets them contend, and checks the
// outcome.
func experiment(ctx context.Context, cfg config, stdout io.Writer) error {
	conns, err := connect(cfg)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d workers x %d rounds contend for %s, holding it %v each\n",
		cfg.workers, cfg.rounds, cfg.path, cfg.hold)
	d := &demo{cfg: cfg, stdout: stdout}
	var wg sync.WaitGroup
	for w, conn := range conns {
		m := lockrecipe.NewMutex(conn, cfg.path)
		wg.Go(func() { d.work(ctx, w, m) })
	}
	wg.Wait()
	if err := errors.Join(d.errs...); err != nil {
		return err
	}
	return report(stdout, cfg, d.order, int(d.overlap.Load()))
}

// work is one worker: take the lock, note it, hold it, let go.
func (d *demo) work(ctx context.Context, w int, m *lockrecipe.Mutex) {
	for range d.cfg.rounds {
		lease, err := m.Acquire(ctx)
		if err != nil {
			d.fail(w, err)
			return
		}
		if d.holders.Add(1) > 1 {
			d.overlap.Add(1)
		}
		d.mu.Lock()
		d.order = append(d.order, acquisition{w, lease.Node()})
		fmt.Fprintf(d.stdout, "%4d. worker %-3d holds %s\n", len(d.order), w, lease.Node())
		d.mu.Unlock()
		time.Sleep(d.cfg.hold) // the work done under the lock
		d.holders.Add(-1)
		if err := lease.Release(); err != nil {
			d.fail(w, err)
		}
	}
}

func (d *demo) fail(w int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errs = append(d.errs, fmt.Errorf("worker %d: %w", w, err))
}

// connect opens one session per worker.
func connect(cfg config) ([]*zk.Conn, error) {
	var conns []*zk.Conn
	for range cfg.workers {
		c, _, err := zk.Connect(strings.Split(cfg.server, ","), 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			return conns, fmt.Errorf("connect to %s: %w", cfg.server, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// report prints the checks and returns an error if one failed.
func report(stdout io.Writer, cfg config, order []acquisition, overlaps int) error {
	inOrder := true
	for i := 1; i < len(order); i++ {
		if seq(order[i].node) < seq(order[i-1].node) {
			inOrder = false
		}
	}
	fmt.Fprintf(stdout, "%d acquisitions (want %d)\n", len(order), cfg.workers*cfg.rounds)
	fmt.Fprintf(stdout, "never two holders at once: %v\n", overlaps == 0)
	fmt.Fprintf(stdout, "taken in sequence order (FIFO): %v\n", inOrder)
	if overlaps > 0 || !inOrder || len(order) != cfg.workers*cfg.rounds {
		return errors.New("check failed")
	}
	fmt.Fprintln(stdout, "OK")
	return nil
}

// seq returns the sequence number part of a lock node's name.
func seq(node string) string { return node[max(len(node)-10, 0):] }
