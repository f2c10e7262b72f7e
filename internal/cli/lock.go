package cli

import (
	"github.com/spf13/cobra"

	applock "github.com/tfmirror/tfmirror/internal/app/lock"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newLockCmd(env Env) *cobra.Command {
	opts := applock.Options{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "lock [DIR...]",
		Short: "Write .terraform.lock.hcl files from a built mirror, for every platform",
		Long: `lock writes or updates the .terraform.lock.hcl of each root module
directory (the current one when none is named), using only a mirror: a
local tree or a published https:// URL, an S3 prefix or an OCI registry. The
origin registries are not contacted. A filesystem mirror or a network
mirror another tool made keeps no signature: its releases are locked by
their hashes when the trust policy accepts that (not with
--require-signatures).

For each provider the configuration needs, it records the version "tofu
init" would install from the mirror (the one already locked, else the newest
that satisfies every constraint in the module tree), the constraints in
OpenTofu's normal form, the h1: hash of each requested platform's package and
a zh: hash for every line of the release's signed SHA256SUMS, after
re-verifying that signature. The result is byte for byte what
"tofu providers lock -platform=..." writes (a package whose zip holds
directory entries also gets the zip's own h1:, which OpenTofu records when
it installs from the mirror), and is valid on every platform listed. Providers the configuration no longer needs are removed, as tofu
does.

Each package's h1: comes from its archive, downloaded and hashed, since
the mirror's provenance records are not signed. With --catalog-key, a
catalog.json signed by one of those keys (build --sign-key) vouches for the
h1: and zh: hashes it lists: they are read from it and no archive is
downloaded; a package the signed catalog does not cover is downloaded as
before, saying why. A catalog whose signature fails is refused (exit 3).

Nothing is written unless every directory's lock file can be computed.

With --check, lock writes nothing: for each directory it says whether
"tofu init" or "terraform init" through the mirror, on any of the platforms,
would rewrite the lock file or fail on it, one reason per line naming the
file, provider, version and platform, and exits 1 if any file would not
survive init byte for byte. Notes (constraints or layout that init changes
only along with something else) do not count. With --fix, it then writes
the files that would not survive, as lock does; a locked version that the
constraints exclude or the mirror lacks stays for you to change, and so
does a file a Terraform-only check finds the mirror cannot serve (exit 1).

--client terraform alone reads the configurations as Terraform does, for
writing, --check and --fix alike: a provider source without a host
("hashicorp/aws") is registry.terraform.io's, and .tofu files are not
read. Otherwise they are read as OpenTofu reads them
(registry.opentofu.org), which also takes a registry.terraform.io/hashicorp
lock of a file Terraform wrote as pinning the same version.`,
		Example: `  tfmirror lock --mirror site --platform linux_amd64 --platform darwin_arm64
  tfmirror lock live/app-a live/app-b --mirror https://mirror.example.com/
  tfmirror lock live/app-a --mirror https://mirror.example.com/ --catalog-key mirror-key.pub.asc
  tfmirror lock --check live/* --mirror https://mirror.example.com/ --json`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			given(cmd, &opts.Flags)
			opts.Dirs, opts.Process = dirs, env.process()
			out := env.printer(cmd)
			report, err := env.run.lock(cmd.Context(), opts)
			if opts.Check || opts.Fix {
				out.LockCheck(report, err) // a nil report too: --json's summary has its fields on every path
				return err
			}
			if report != nil {
				out.Warnings(report.Warnings)
				out.LockFiles(report.Files)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Mirror, "mirror", "m", "", "the built mirror: a directory, an http(s) URL, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE (quote it: the template holds ${...}) or oci-layout://DIRECTORY")
	f.StringArrayVar(&opts.Platforms, "platform", nil, "platform to record hashes for, or with --check to check init on, as os_arch (repeatable; default: the manifest's platforms, else every platform the mirror holds)")
	f.BoolVar(&opts.Check, "check", false, "write nothing: say whether init through the mirror would rewrite each lock file or fail on it, and why; exit 1 if any would")
	f.BoolVar(&opts.Fix, "fix", false, "like --check, then write the lock files that would not survive init, as lock does")
	f.StringArrayVar(&opts.Clients, "client", nil, "the client whose init --check and --fix consider: tofu or terraform (repeatable; default: both). terraform alone also reads the configurations as Terraform does (a source without a host is registry.terraform.io's), for writing too")
	f.StringVar(&opts.Via, "via", "", "with --check or --fix, how clients install from the mirror: network_mirror, filesystem_mirror or oci_mirror (default: filesystem_mirror for a filesystem mirror directory, oci_mirror for oci:// and oci-layout://, else network_mirror)")
	addCatalogKey(cmd, &opts.Flags, "read the h1: and zh: hashes from the mirror's catalog.json when one of the ASCII-armored OpenPGP public keys in this `file` signed it, instead of downloading the archives (wins over the manifest's settings catalog_key)")
	addVarFlags(cmd, &opts.Vars, &opts.NoTests)
	addConfigFlags(cmd, &opts.Flags, "whose trust blocks decide which releases are trusted, and whose settings apply (read if present; required if given)")
	addNetworkFlags(cmd, &opts.Flags)
	return cmd
}
