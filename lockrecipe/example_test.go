package lockrecipe_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/lockrecipe"
	"github.com/zkraft/zkraft/server"
)

// connect returns a client of a ZooKeeper for the examples: here an
// embedded zkraft, which the returned function stops after closing the
// client.
func connect() (*zk.Conn, func()) {
	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	conn, _, err := zk.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		log.Fatal(err)
	}
	return conn, func() { conn.Close(); srv.Close() }
}

func ExampleNewMutex() {
	conn, stop := connect()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	m := lockrecipe.NewMutex(conn, "/locks/nightly-report")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	select {
	case <-m.Lost():
		fmt.Println("lost the lock: stop working")
	default:
		fmt.Println("working under the lock")
	}
	if err := m.Unlock(); err != nil {
		log.Fatal(err) // an ErrLost error: someone may have held it meanwhile
	}
	// Output: working under the lock
}

// Reentrancy: a function that needs the lock takes the Lease its caller
// holds, and nests on it.
func ExampleMutex_Acquire() {
	conn, stop := connect()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	m := lockrecipe.NewMutex(conn, "/locks/accounts")
	lease, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release()
	transfer := func(lease *lockrecipe.Lease) error {
		if err := lease.Acquire(); err != nil { // no round trip
			return err
		}
		defer lease.Release()
		fmt.Println("transfer under", lease.Node()[:16])
		return nil
	}
	if err := transfer(lease); err != nil {
		log.Fatal(err)
	}
	// Output: transfer under /locks/accounts/
}

func ExampleNewRWMutex() {
	conn, stop := connect()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rw := lockrecipe.NewRWMutex(conn, "/locks/config")
	if err := rw.RLock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := rw.RLock(ctx); err != nil { // readers share
		log.Fatal(err)
	}
	fmt.Println("two readers")
	rw.RUnlock()
	rw.RUnlock()
	if err := rw.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("one writer")
	rw.Unlock()
	// Output:
	// two readers
	// one writer
}

func ExampleNewSemaphore() {
	conn, stop := connect()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	sem := lockrecipe.NewSemaphore(conn, "/semaphores/crawlers", 2)
	a, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	b, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := sem.Acquire(short); err == context.DeadlineExceeded {
		fmt.Println("a third lease waits")
	}
	a.Release()
	b.Release()
	// Output: a third lease waits
}

func ExampleNewElection() {
	conn, stop := connect()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	e := lockrecipe.NewElection(conn, "/elections/scheduler")
	if err := e.Campaign(ctx, "host-1"); err != nil {
		log.Fatal(err)
	}
	leader, err := e.Leader()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", leader)
	e.Resign()
	// Output: leader: host-1
}
