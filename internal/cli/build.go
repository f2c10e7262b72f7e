package cli

import (
	"github.com/spf13/cobra"

	appbuild "github.com/tfmirror/tfmirror/internal/app/build"
	"github.com/tfmirror/tfmirror/internal/output"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newBuildCmd(env Env) *cobra.Command {
	opts := appbuild.Options{Flags: settings.DefaultFlags()}
	var recheckModules bool
	opts.Flags.Parallel = appbuild.DefaultParallel
	cmd := &cobra.Command{
		Use:   "build [DIR...]",
		Short: "Download, verify and publish providers into a static network mirror",
		Long: `build reads the manifest, lists each provider's versions at its origin
registry, selects those matching the manifest, and for every platform
downloads the package, checks it against the release's signed SHA256SUMS and
publishes it into every --out destination: a directory or a bucket as a
provider network mirror, an OCI registry or image layout as OpenTofu's
oci_mirror reads it. With --from, the packages come from a mirror already
built instead of the origin.

Providers come from the manifest's provider blocks and from OpenTofu or
Terraform configurations: root module directories named as arguments or by
the manifest's configuration blocks. For a configuration, tfmirror reads
every .tf, .tf.json, .tofu and .tofu.json file, follows local module calls
and modules installed under .terraform/modules, and selects what "tofu init"
would: the version pinned in .terraform.lock.hcl, else the newest release
that satisfies every constraint in the module tree.

Building into an existing mirror merges: versions and platforms already there
stay listed and nothing is deleted (tfmirror prune removes what the manifest
no longer selects). A version new to the mirror is published with every
platform asked for or not at all: when one fails, the others are held back
(status held) until a build brings them all. Files appear atomically and in publish order (archives,
then <version>.json, then index.json; blobs, then manifests, then the tag in
a registry), so a destination can be served while it is being built, and
several builds (or --shard workers) may publish into one bucket at once.

Modules come from the manifest's module blocks and from the registry module
calls of configurations, and then from the calls of every module mirrored,
so the whole module tree installs. Each version's location (an https archive
or git::https at a tag or commit) is fetched once, packed into a zip whose
bytes depend only on its content, and published as a static module registry
under <out>/replica/<host>/v1/modules/, which OpenTofu and Terraform install
from with a host block. A version already mirrored is not fetched again; with
--recheck it is, and an upstream that now gives other content is reported
(exit 3) with the published package left as it was. --recheck also asks the
origin for the SHA256SUMS and signature of every provider release already
mirrored (no archive) and reports a release re-published with other bytes,
other files or another signer the same way.`,
		Example: `  tfmirror build
  tfmirror build --config mirror.hcl --out /srv/mirror --json
  tfmirror build live/app-a live/app-b --platform linux_amd64 --platform darwin_arm64 --write-lock-files`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			given(cmd, &opts.Flags)
			if recheckModules && opts.Recheck == "" {
				opts.Recheck = "100%"
			}
			opts.Dirs = dirs
			if !cmd.Flags().Changed("out") {
				opts.Out = nil // the manifest's out list, else ./site
			}
			opts.Process = env.process()
			opts.Process.Command = commandLine(cmd)
			return runBuild(cmd, env, opts, env.printer(cmd))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Flags.Config, "config", "c", opts.Flags.Config, "manifest `file` to read")
	f.StringArrayVarP(&opts.Out, "out", "o", []string{"site"}, "where to publish the mirror (default: the manifest's out list, else site): a `directory` (created if missing), s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE (an OCI registry, the template exactly as in OpenTofu's oci_mirror block, e.g. 'oci://registry.example.com/tf/${namespace}/${type}') or oci-layout://DIRECTORY (OCI image layouts); repeatable: one download publishes into every one")
	f.BoolVar(&opts.Strict, "strict", false, "fail when a selected release lacks a requested platform, instead of skipping it with a warning")
	f.BoolVar(&opts.Flags.RequireSignatures, "require-signatures", false, "refuse packages without a valid OpenPGP signature, even from registry.opentofu.org where OpenTofu allows them")
	f.IntVarP(&opts.Flags.Parallel, "parallel", "p", opts.Flags.Parallel, "maximum number of concurrent downloads")
	f.StringArrayVar(&opts.Platforms, "platform", nil, "platform to mirror, as os_arch (repeatable): replaces the manifest's platforms for every provider the build mirrors, its provider blocks' and the configurations' alike, as tofu providers mirror -platform does (default: the manifest's platforms)")
	f.BoolVar(&opts.WriteLockFiles, "write-lock-files", false, "after the build, write each configuration's .terraform.lock.hcl from the mirror, as \"tfmirror lock\" does")
	f.StringVar(&opts.Layout, "layout", "network", "what to write: network (a network mirror), packed or unpacked (a filesystem_mirror directory; the network tree behind it is kept in .tfmirror/store)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print what would be downloaded, kept and skipped, with sizes, making only metadata requests and writing nothing")
	f.BoolVar(&opts.VerifyExisting, "verify-existing", false, "re-hash every archive already in the mirror instead of trusting its recorded size, and replace any that does not match")
	f.BoolVar(&opts.RegistryReplica, "registry-replica", false, "after the build, also write a static copy of the provider registry protocol under <out>/replica/, so clients with a host block install with full signature verification")
	addSignKey(cmd, &opts.Flags, signCatalog)
	addCatalogKey(cmd, &opts.Flags, "take packages from upstream mirrors (--from, provider_installation) only when one of the ASCII-armored OpenPGP public keys in this `file` signed their catalog.json and it lists them with the same digest; records the signer in provenance (wins over the manifest's settings catalog_key)")
	addLockTimeout(cmd, &opts.Flags, "how long to wait for a writer this build may not write with: another build into the same directory, a prune of the same bucket (0 fails at once)")
	f.StringVar(&opts.From, "from", "", "take the packages from a `mirror` already built (a directory, an http(s) URL, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE or oci-layout://DIRECTORY) instead of the origin registries, with the SHA256SUMS, signature and keys it kept of each release checked as from the origin: copy a mirror into another kind of destination without contacting the origin")
	f.BoolVar(&opts.OverwriteOCITags, "overwrite-oci-tags", false, "re-point an OCI version tag that holds other packages than the release brings (by default the build refuses, naming both digests: clients may have locked the old ones)")
	f.StringVar(&opts.Recheck, "recheck", "", "for releases and module versions already mirrored, fetch the origin's SHA256SUMS and signature (a module: its package) again and compare them with what the mirror kept: a release re-published with other bytes, files or signer is reported (exit 3), and the published packages are left as they were; --recheck=`N%` checks a share of them each day (UTC), each one once in any 100/N days in a row (rounded up)")
	f.Lookup("recheck").NoOptDefVal = "100%"
	f.BoolVar(&recheckModules, "recheck-modules", false, "the same as --recheck (kept for the scripts that use it)")
	f.BoolVar(&opts.NoModules, "no-modules", false, "mirror providers only: leave out the manifest's module blocks and the registry modules configurations call")
	f.BoolVar(&opts.NoSBOM, "no-sbom", false, "publish no SBOM beside the packages this build verifies (one file or object fewer per package; audit then reports them without SBOM)")
	f.BoolVar(&opts.OCIModuleLocations, "oci-module-locations", false, "make the module registry's download documents point at the module packages in the build's oci:// destination (oci://REPOSITORY?digest=..., OpenTofu >= 1.10) instead of the zips in the tree")
	f.StringVar(&opts.Shard, "shard", "", "build only part `K/N` of the plan (K from 1 to N), so that N workers (a CI matrix, a Kubernetes Indexed Job with --shard $((JOB_COMPLETION_INDEX+1))/N) publishing into one destination together build the whole mirror")
	addVulnDBFlag(cmd, &opts.Flags, "report each package's known vulnerabilities from this Go vulnerability database, and apply the manifest's vulnerabilities policy")
	addVarFlags(cmd, &opts.Vars, &opts.NoTests)
	addNetworkFlags(cmd, &opts.Flags)
	return cmd
}

// runBuild runs the build, reporting its events as they come and its
// summary at the end.
func runBuild(cmd *cobra.Command, env Env, opts appbuild.Options, out *output.Printer) error {
	opts.Events = appbuild.Events{
		Line: out.Line, Package: out.Event, Module: out.Module,
		Warning: func(w string) { out.Warnings([]string{w}) },
		Started: func(packages int, progress func() appbuild.Progress) {
			out.StartProgress(env.Stderr, packages, progress)
		},
	}
	if opts.DryRun {
		out.DeferResults() // listed sorted with the summary
	}
	report, err := env.run.build(cmd.Context(), opts)
	out.StopProgress()
	if report == nil || report.Build == nil {
		out.BuildFailed(report, err)
		return err
	}
	out.LockFiles(report.LockFiles)
	out.BuildSummary(report, err)
	return err
}
