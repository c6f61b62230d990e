package server_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkraft/zkraft/server"
)

// An embedded server: start it, talk to it with any ZooKeeper client, stop it.
func ExampleNew() {
	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	conn, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	path, err := conn.Create("/jobs-", []byte("first"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		panic(err)
	}
	data, stat, err := conn.Get(path)
	if err != nil {
		panic(err)
	}
	fmt.Println(path, string(data), stat.Version)
	// Output: /jobs-0000000000 first 0
}
