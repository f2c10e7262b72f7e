// Command tfmirror builds static mirrors of OpenTofu and Terraform providers.
package main

import (
	"context"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/tfmirror/tfmirror/internal/cli"
)

// Set by the release build with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

func main() {
	// Lines libraries write through the standard logger (net/http's
	// "Unsolicited response received on idle HTTP channel", with the
	// bytes) are not tfmirror's output: that is the printer's.
	log.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first interrupt lets the command finish what it must (a
	// publication under way, the records of what was published); a second
	// one ends the process at once, as the signal's default does.
	context.AfterFunc(ctx, stop)
	code := cli.Main(ctx, cli.Env{
		Args:    os.Args[1:],
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Environ: os.Environ(),
		Version: version,
		Commit:  commit,
	})
	stop()
	os.Exit(code)
}
