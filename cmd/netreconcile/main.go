// Command netreconcile makes a Linux host's network match one YAML file.
// See `netreconcile --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/netreconcile/netreconcile/internal/cli"
)

func main() {
	// The service runs for months and paces its own memory
	// (internal/daemon); every other command is a process of its own.
	if len(os.Args) < 2 || os.Args[1] != "run" {
		oneShotGC()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, &cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Stdin: os.Stdin}, os.Args[1:])
	stop()
	os.Exit(code)
}
