package cli

import (
	"github.com/spf13/cobra"

	appverify "github.com/tfmirror/tfmirror/internal/app/verify"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newVerifyCmd(env Env) *cobra.Command {
	opts := appverify.Options{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "verify PATH_OR_URL|s3://BUCKET/PREFIX/|oci://TEMPLATE",
		Short: "Check a built or published mirror the way clients see it",
		Long: `verify checks a mirror directory or a published https:// mirror as
OpenTofu would use it: every index.json and <version>.json parses with the
right shape (and, over HTTP, is served as application/json); every version
listed has its <version>.json; every listed archive exists, and each h1: and
zh: listed for it matches its bytes; the kept SHA256SUMS, signature and keys are
trusted under the trust policy (the manifest's trust blocks, as for a
build), and every archive is the one that signed file lists. The providers
checked are those the tree holds; over HTTP, which has no directory
listing, those catalog.json lists, or without one (another tool's mirror)
those the manifest's provider blocks name. A location that holds no
mirror at all is an error (exit 2), not a clean check of nothing.

A filesystem mirror directory (--layout packed or unpacked) is checked as
its clients read it too: every package its store lists must be there, as
the archive with the store's bytes or as the unpacked directory with the
h1: hash the store records.

An OCI registry or layout (oci://REPOSITORY_TEMPLATE, oci-layout://DIR) is
checked for the providers the manifest's provider blocks name (a registry
need not list its repositories): every version tag's index and manifests as
OpenTofu reads them, every archive against its digest, and the provenance
kept next to each index (SHA256SUMS, signature, keys) under the trust
policy, which must list each archive: a tag re-pointed at another package
is found.

With --catalog-key, catalog.json must carry a signature (catalog.json.asc,
written by build --sign-key) by one of those OpenPGP public keys, and list
exactly the tree's archives: every listed archive present with the listed
digest (its bytes are read again) and SBOM, nothing unlisted; what it says
of each provider's deprecations and signers must be what the tree says
(its warnings.json, its releases' provenance); and every change
record the index lists must match it, each signed one signed by one of
those keys.

Each package's SBOM must describe it: the Go version and modules of the
executable in its archive. A registry replica's download documents must
send clients to the mirror's own files.

Each problem is printed with its path. The exit code is 3 if there is any.`,
		Example: `  tfmirror verify site
  tfmirror verify https://mirror.example.com/ --json
  tfmirror verify https://mirror.example.com/ --catalog-key mirror-key.pub.asc
  tfmirror verify --config mirror.hcl 'oci://registry.example.com/tf/${namespace}/${type}'`,
		Args: oneArgument,
		RunE: func(cmd *cobra.Command, args []string) error {
			given(cmd, &opts.Flags)
			opts.Mirror, opts.Process = args[0], env.process()
			report, err := env.run.verify(cmd.Context(), opts)
			env.printer(cmd).Verify(report, err) // a nil report too: --json's summary has its fields on every path
			return err
		},
	}
	addConfigFlags(cmd, &opts.Flags, "whose trust blocks decide which releases are trusted, and whose settings apply (read if present; required if given)")
	addCatalogKey(cmd, &opts.Flags, "require catalog.json to be signed by one of the ASCII-armored OpenPGP public keys in this `file`, and to list exactly the mirror's archives (wins over the manifest's settings catalog_key)")
	addNetworkFlags(cmd, &opts.Flags)
	return cmd
}
