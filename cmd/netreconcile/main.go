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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, &cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Stdin: os.Stdin}, os.Args[1:])
	stop()
	os.Exit(code)
}
