// Command sbx is the sbx daemon (sbx serve) and its command-line client.
// Client commands are plain clients of the HTTP API (package client); the
// command line is parsed by kong (cli.go).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbx-dev/sbx/internal/volume"
)

func main() {
	volume.RunHolderIfAsked()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], osStdio())
	stop()
	os.Exit(code)
}
