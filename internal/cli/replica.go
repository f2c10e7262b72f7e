package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/build"
	"github.com/tfmirror/tfmirror/internal/dest"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
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
		Use:   "replica SITE|s3://BUCKET/PREFIX/",
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
decision, with the manifest's trust blocks (--config).

SITE may be a bucket of an S3-compatible store holding a network mirror,
s3://BUCKET/PREFIX/ (credentials and settings from the AWS_* environment
variables, as for "tfmirror build --out s3://..."): the replica is written
into PREFIX/replica/ through the bucket's store, the same objects as the
files in a directory, and a replica that is already up to date makes no
write request.`,
		Example: `  tfmirror replica site
  tfmirror replica s3://my-bucket/mirror/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplica(cmd.Context(), env, opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per message, for CI")
	cmd.Flags().DurationVar(&opts.LockTimeout, "lock-timeout", 5*time.Minute, "how long to wait for a tfmirror build writing the same directory, or a prune of the bucket (0 fails at once)")
	addTrustFlags(cmd, &opts.Trust)
	return cmd
}

func runReplica(ctx context.Context, env Env, opts replicaOptions, site string) (err error) {
	trust, err := opts.Trust.policy()
	if err != nil {
		return err
	}
	line := newPrinter(env.Stdout, opts.JSON).line
	if dest.IsBucket(site) {
		return replicaIntoStore(ctx, env, site, opts.LockTimeout, trust, line)
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
	if err := build.WriteReplica(ctx, tree.Tree, signing.Checker{}, trust, nil, line); err != nil {
		return err
	}
	return build.WriteCatalog(ctx, tree.Tree)
}

// replicaIntoStore writes the replica of a mirror kept in a bucket through
// its store, holding its Publish lock (taken at the first write, so an
// unchanged replica makes no write request).
func replicaIntoStore(ctx context.Context, env Env, ref string, wait time.Duration, trust mirror.TrustPolicy, line func(string)) (err error) {
	d, err := dest.Open(ctx, ref, layout.Network, dest.Config{S3: s3store.Config{Environ: env.Environ}})
	var input *dest.InputError
	if errors.As(err, &input) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	unlock, err := d.Store.Lock(ctx, wait, layout.Publish)
	if err != nil {
		return err
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = uerr
		}
	}()
	if err := build.WriteReplica(ctx, d.Tree, signing.Checker{}, trust, nil, line); err != nil {
		return err
	}
	return build.WriteCatalog(ctx, d.Tree)
}
