package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/build"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
)

// replicaOptions are the flags of "tfmirror replica".
type replicaOptions struct {
	JSON        bool
	LockTimeout time.Duration
	Trust       trustFlags
}

func newReplicaCmd(env Env) *cobra.Command {
	var opts replicaOptions
	cmd := &cobra.Command{
		Use:   "replica SITE",
		Short: "Write a static copy of the provider registry protocol into a built mirror",
		Long: `replica (re)writes SITE/replica/: for every origin host in the mirror,
the provider registry protocol's documents (versions lists and download
documents, with the release's upstream SHA256SUMS, its signature and the
origin's signing keys), so a client pointed at it with a CLI-config host
block installs exactly as from the origin, verifying the signature itself:

  host "registry.opentofu.org" {
    services = { "providers.v1" = "https://mirror.example.com/replica/registry.opentofu.org/v1/providers/" }
  }

The documents point at the archives and signed files the mirror already
holds; nothing is downloaded. "tfmirror build --registry-replica" does the
same after a build. A release whose kept files no longer verify is left out
and the exit code is 3. Which releases are offered is the build's trust
decision, with the manifest's trust blocks (--config).`,
		Example: `  tfmirror replica site`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplica(cmd.Context(), env, opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per message, for CI")
	cmd.Flags().DurationVar(&opts.LockTimeout, "lock-timeout", 5*time.Minute, "how long to wait for a tfmirror build writing the same directory (0 fails at once)")
	addTrustFlags(cmd, &opts.Trust)
	return cmd
}

func runReplica(ctx context.Context, env Env, opts replicaOptions, site string) (err error) {
	trust, err := opts.Trust.policy()
	if err != nil {
		return err
	}
	if _, err := layout.OpenExisting(site); err != nil {
		return usageError{err}
	}
	if layout.ExistingKind(site) == layout.Filesystem {
		return usageError{fmt.Errorf("%s is a filesystem mirror (built with --layout packed or unpacked); a registry replica needs a network mirror's files", site)}
	}
	tree, err := layout.OpenWait(ctx, site, opts.LockTimeout)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := tree.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return build.WriteReplica(ctx, tree.Tree, signing.Checker{}, trust, newPrinter(env.Stdout, opts.JSON).line)
}
