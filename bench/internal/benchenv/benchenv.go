// Package benchenv is what the benchmark's helper programs (benchorigin,
// benchs3, benchoci) share: how they run, how they serve their own
// endpoints, and how they tell bench/run that they are ready and how to
// reach them.
package benchenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Main runs a helper program: run gets the command-line arguments and a
// context that ends on SIGINT or SIGTERM. Main returns the exit status:
// 0, or 1 after printing "name: error" on stderr when run fails.
//
//	func main() { os.Exit(benchenv.Main("benchoci", run)) }
func Main(name string, run func(ctx context.Context, args []string) error) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// Listen listens on a free port of 127.0.0.1, for a helper's own plain
// HTTP endpoints (see Serve).
func Listen(ctx context.Context) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", "127.0.0.1:0")
}

// ErrExited is Serve's error when the process behind the helper exits.
var ErrExited = errors.New("exited")

// Serve serves h on ln, plain HTTP, until ctx ends, and then returns nil.
// It returns earlier with an error if the server fails, or with ErrExited
// if exited is closed: the server process the helper stands in front of
// has gone.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, exited <-chan struct{}) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
		return err
	case <-exited:
		err = ErrExited
	case <-ctx.Done():
	}
	_ = srv.Close()
	if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}

// Write writes dir/name as KEY=value lines, atomically, so its presence
// means the server is ready. It may hold credentials: mode 0600.
func Write(dir, name string, info map[string]string) error {
	var env strings.Builder
	for _, k := range slices.Sorted(maps.Keys(info)) {
		fmt.Fprintf(&env, "%s=%s\n", k, info[k])
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(env.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}
