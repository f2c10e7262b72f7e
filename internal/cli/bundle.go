package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/app"
	appbundle "github.com/tfmirror/tfmirror/internal/app/bundle"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newBundleCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Carry a mirror into an air-gapped network as one verified file",
		Long: `bundle packs a built mirror into one compressed file (create) and, on the
other side of an air gap, checks it and merges it into a mirror directory
or bucket (import). Either end may be a bucket, s3://BUCKET/PREFIX/.

A bundle is a .tar.gz holding manifest.json (every file's path, size and
SHA-256), optionally its OpenPGP signature, the mirror, the lock files given
at creation and CLI configuration snippets for tofu and terraform
(cli-config/, with placeholders to replace).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return app.Usage(errors.New("name a subcommand: bundle create or bundle import"))
		},
	}
	cmd.AddCommand(newBundleCreateCmd(env), newBundleImportCmd(env))
	return cmd
}

func newBundleCreateCmd(env Env) *cobra.Command {
	opts := appbundle.CreateOptions{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "create SITE|s3://BUCKET/PREFIX/ --out FILE",
		Short: "Pack a built mirror (a directory or a bucket) into one file",
		Long: `create checks the mirror in SITE as "tfmirror verify" does, then packs it
into FILE: a gzip-compressed tar holding manifest.json (the path, size and
SHA-256 of every other file), the mirror's files under mirror/ (not its
private .tfmirror/ directory), the lock files of --lock-files directories
under lock-files/, and CLI configuration snippets under cli-config/
(network_mirror and filesystem_mirror, for tofu and terraform, with
placeholders to replace).

With --sign-key, manifest.json is signed with that OpenPGP private key
(ASCII-armored, without a passphrase) into manifest.json.sig; import it
with --trust-key and the matching public key.

A mirror built with --layout packed or unpacked is bundled from the network
tree behind it (SITE/.tfmirror/store). The same mirror always gives the
same bundle, byte for byte (a signature records when it was made). A
mirror that import would refuse (a problem "tfmirror verify" reports, or a
release without its provenance record) is refused here too, with exit
code 3, and nothing is written.

SITE may be a bucket of an S3-compatible store, s3://BUCKET/PREFIX/, read
with the credentials and settings of the AWS_* environment variables, as
for "tfmirror build --out s3://...". It gives the same bundle as a
directory holding the same mirror. Reading a bucket takes no lock and
needs no write permission, and builds may publish into it meanwhile: the
mirror is first copied into a temporary directory next to FILE (which
needs room for it as well as for the bundle), each document before the
files it names, then checked and packed from that copy.`,
		Example: `  tfmirror bundle create site --out mirror-bundle.tar.gz
  tfmirror bundle create s3://my-bucket/mirror/ --out mirror-bundle.tar.gz
  tfmirror bundle create site --out mirror-bundle.tar.gz --lock-files live/app-a --lock-files live/app-b --sign-key bundle-key.asc`,
		Args: oneArgument,
		RunE: func(cmd *cobra.Command, args []string) error {
			given(cmd, &opts.Flags)
			opts.Site, opts.Process = args[0], env.process()
			report, err := env.run.bundleCreate(cmd.Context(), opts)
			env.printer(cmd).BundleCreate(report, err)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Out, "out", "o", "", "bundle `file` to write (replaced atomically)")
	f.StringArrayVar(&opts.LockFiles, "lock-files", nil, "a `directory` whose .terraform.lock.hcl to include, under lock-files/ at its path relative to the current directory, or its name if it is elsewhere (repeatable)")
	addSignKey(cmd, &opts.Flags, "sign the manifest with the ASCII-armored OpenPGP private key in this `file` (no passphrase)")
	addLockTimeout(cmd, &opts.Flags, "how long to wait for a tfmirror build writing the directory SITE (0 fails at once; a bucket is read without a lock)")
	addConfigFlags(cmd, &opts.Flags, "whose trust blocks decide which releases are trusted, and whose settings apply (read if present; required if given)")
	return cmd
}

func newBundleImportCmd(env Env) *cobra.Command {
	opts := appbundle.ImportOptions{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "import FILE --out DIR|s3://BUCKET/PREFIX/",
		Short: "Check a bundle and merge its mirror into a directory or a bucket",
		Long: `import checks the bundle FILE and merges its mirror into DIR, which is
created if missing, or into a bucket of an S3-compatible store,
s3://BUCKET/PREFIX/ (the bucket must exist; credentials and settings come
from the AWS_* environment variables, as for "tfmirror build --out
s3://...").

Before anything becomes visible in DIR, every check must pass: the entries
are plain files and directories with safe names (no absolute paths, "..",
links or devices), each listed exactly once in manifest.json with the size
and SHA-256 found, nothing listed is missing, and the mirror passes what
"tfmirror verify" checks: every archive matches its hashes and its release's
kept SHA256SUMS, which the trust policy (the manifest's trust blocks, as for
a build) must accept. With
--trust-key, manifest.json must also carry a signature by that key.

The bundle is unpacked into DIR/.tfmirror/ first (for a bucket, into a
temporary directory, $TMPDIR), then published in publish order (archives
and kept origin files, <version>.json, index.json, catalog.json), each file
atomically, merging the JSON documents with those already in DIR. A file
that DIR already holds with different bytes (an archive, SHA256SUMS or
signature) is never replaced: the bundle is refused. Importing a bundle
whose mirror DIR already holds changes no file (and, into a bucket, makes
no write request at all). A bucket holds only the network layout: --layout
packed or unpacked needs a directory.

A refused bundle exits with code 3 and leaves DIR as it was.`,
		Example: `  tfmirror bundle import mirror-bundle.tar.gz --out /srv/mirror
  tfmirror bundle import mirror-bundle.tar.gz --out /srv/mirror --trust-key bundle-key.pub.asc --extras ./from-bundle
  tfmirror bundle import mirror-bundle.tar.gz --out s3://my-bucket/mirror/`,
		Args: oneArgument,
		RunE: func(cmd *cobra.Command, args []string) error {
			given(cmd, &opts.Flags)
			opts.Bundle, opts.Process = args[0], env.process()
			opts.Process.Command = commandLine(cmd)
			report, err := env.run.bundleImport(cmd.Context(), opts)
			env.printer(cmd).BundleImport(report, opts.Extras, err)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Out, "out", "o", "", "mirror `directory` to import into (created if missing, merged into if present), or s3://BUCKET/PREFIX/")
	f.StringVar(&opts.Layout, "layout", "network", "what to write: network (a network mirror), or packed or unpacked (a filesystem_mirror directory, with the network tree kept in .tfmirror/store; not into a bucket)")
	f.StringVar(&opts.TrustKey, "trust-key", "", "require a manifest signature by one of the ASCII-armored OpenPGP public keys in this `file`")
	f.StringVar(&opts.Extras, "extras", "", "after a successful import, also write the bundle's lock-files/ and cli-config/ into this `directory`")
	addSignKey(cmd, &opts.Flags, signCatalog)
	addLockTimeout(cmd, &opts.Flags, "how long to wait for another tfmirror process writing DIR, or a prune of the bucket (0 fails at once)")
	addConfigFlags(cmd, &opts.Flags, "whose trust blocks decide which releases are trusted, and whose settings apply (read if present; required if given)")
	return cmd
}
