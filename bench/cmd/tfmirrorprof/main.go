// Command tfmirrorprof is tfmirror with profiling, for the benchmark's
// "where does the time go" figures (bench/README.md): the same CLI
// (internal/cli, as cmd/tfmirror runs it), with a CPU profile, a heap
// profile at exit, or an execution trace written where asked.
//
// Usage: tfmirrorprof [-cpuprofile FILE] [-memprofile FILE] [-trace FILE] -- TFMIRROR_ARGS...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/tfmirror/tfmirror/internal/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("tfmirrorprof", flag.ContinueOnError)
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
	mem := fs.String("memprofile", "", "write a heap profile (allocations) at the end to `FILE`")
	tr := fs.String("trace", "", "write an execution trace to `FILE`")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tfmirrorprof: %v\n", err)
			return 2
		}
		defer func() { _ = f.Close() }() // the profile is flushed by StopCPUProfile
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "tfmirrorprof: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if *tr != "" {
		f, err := os.Create(*tr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tfmirrorprof: %v\n", err)
			return 2
		}
		defer func() { _ = f.Close() }() // flushed by trace.Stop
		if err := trace.Start(f); err != nil {
			fmt.Fprintf(os.Stderr, "tfmirrorprof: %v\n", err)
			return 2
		}
		defer trace.Stop()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := cli.Main(ctx, cli.Env{
		Args:    fs.Args(),
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Environ: os.Environ(),
		Version: "tfmirrorprof",
	})
	if *mem != "" {
		runtime.GC()
		f, err := os.Create(*mem)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tfmirrorprof: %v\n", err)
			return 2
		}
	}
	return code
}
