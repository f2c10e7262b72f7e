package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// Env is everything the CLI takes from the process.
type Env struct {
	Args    []string
	Stdout  io.Writer
	Stderr  io.Writer
	Environ []string
	Version string
	Commit  string

	// clientCerts are the manifest's client certificates, once a command
	// has read it: every HTTP client the command makes presents them.
	clientCerts map[string]tls.Certificate
	// now is the clock of the cool-down; nil means time.Now (tests set it).
	now func() time.Time
}

// Main runs tfmirror and returns its exit code.
func Main(ctx context.Context, env Env) int {
	started := false
	root := newRootCmd(env)
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	root.SetArgs(env.Args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if !started {
		err = usageError{err}
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	fmt.Fprintf(env.Stderr, "tfmirror: %v\n", err)
	return ExitCode(err)
}

func newRootCmd(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "tfmirror",
		Short: "Build static provider mirrors for OpenTofu and Terraform",
		Long: `tfmirror reads the providers you need from an HCL manifest, downloads them
from their origin registries, verifies their signed checksums, and writes a
static tree that any web server can serve as a network mirror.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newBuildCmd(env), newLockCmd(env), newVerifyCmd(env), newBundleCmd(env), newServeCmd(env), newReplicaCmd(env), newPruneCmd(env), newVersionCmd(env))
	return root
}

func newVersionCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tfmirror's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, c := versionInfo(env)
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "tfmirror %s (commit %s)\n", v, c)
			return err
		},
	}
}

// versionInfo returns the release version and commit, falling back to what
// the Go toolchain recorded for builds that were not made by the release.
func versionInfo(env Env) (string, string) {
	v, c := env.Version, env.Commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}
