package cli

import (
	"github.com/spf13/cobra"

	appreplica "github.com/tfmirror/tfmirror/internal/app/replica"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newReplicaCmd(env Env) *cobra.Command {
	opts := appreplica.Options{Flags: settings.DefaultFlags()}
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
		Args: oneArgument,
		RunE: func(cmd *cobra.Command, args []string) error {
			given(cmd, &opts.Flags)
			opts.Site, opts.Process = args[0], env.process()
			report, err := env.run.replica(cmd.Context(), opts)
			env.printer(cmd).Views(report)
			return err
		},
	}
	addSignKey(cmd, &opts.Flags, signCatalog)
	addLockTimeout(cmd, &opts.Flags, "how long to wait for a tfmirror build writing the same directory, or a prune of the bucket (0 fails at once)")
	addConfigFlags(cmd, &opts.Flags, "whose trust blocks decide which releases are trusted, and whose settings apply (read if present; required if given)")
	return cmd
}
