package cli_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/zkraft/zkraft/cmd/zkraft/internal/cli"
	"github.com/zkraft/zkraft/server"
)

// One command, as `zkraft cli -server host:port create /greeting hello`
// runs it: what zkCli.sh prints, and its exit status.
func ExampleRun() {
	srv, err := server.New(server.Config{ClientPortAddress: "127.0.0.1:0"})
	if err != nil || srv.Start() != nil {
		fmt.Println("no server")
		return
	}
	defer srv.Close()
	addr := srv.Addr().String()

	status := cli.Run([]string{"-server", addr, "create", "/greeting", "hello"}, os.Stdin, new(strings.Builder), os.Stdout)
	fmt.Println("exit", status)
	var out strings.Builder
	status = cli.Run([]string{"-server", addr, "get", "/greeting"}, os.Stdin, &out, os.Stdout)
	fmt.Print(out.String()[strings.LastIndex(out.String(), "path:null\n")+len("path:null\n"):])
	fmt.Println("exit", status)
	status = cli.Run([]string{"-server", addr, "stat", "/nobody"}, os.Stdin, new(strings.Builder), os.Stdout)
	fmt.Println("exit", status)
	// Output:
	// Created /greeting
	// exit 0
	// hello
	// exit 0
	// Node does not exist: /nobody
	// exit 1
}
