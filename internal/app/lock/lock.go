// Package lock is the lock command: it writes the .terraform.lock.hcl of
// root modules from a built mirror, for every platform, without
// contacting the origin registries; with Check it says instead whether
// init through that mirror would rewrite each file or fail on it, and
// with Fix it writes the files that would not survive.
package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Options say which lock files to write from which mirror.
type Options struct {
	// Mirror is the built mirror to read.
	Mirror string
	// Dirs are the root modules; none means the current directory.
	Dirs []string
	// Platforms to record hashes for; none means the manifest's, and
	// without those every platform the mirror holds of each release.
	Platforms []string
	// Vars are the --var and --var-file flags, in their order: values of
	// the configurations' variables.
	Vars    []tfconfig.VarArg
	NoTests bool // leave out what only test files need
	// Check writes nothing: it reports what init would change in each
	// lock file (Report.Verdicts), with a *app.LockChurnError when any
	// file would not survive init.
	Check bool
	// Fix is Check, then writes the files that would not survive init
	// and that lock can write.
	Fix bool
	// Clients are the clients whose init Check considers, "tofu" or
	// "terraform"; none means both.
	Clients []string
	// Via is how the clients install from the mirror: network_mirror,
	// filesystem_mirror or oci_mirror; "" means what the mirror is.
	Via     string
	Flags   settings.Flags
	Process settings.Process
}

// Report says what was written.
type Report struct {
	// Warnings are what reading the configurations warned about.
	Warnings []string
	Files    []app.LockFile
	// Verdicts are what Check and Fix found, one per configuration.
	Verdicts []lockfile.Verdict
}

// Run writes the lock files: none unless every one can be computed.
// With Check or Fix it checks them first.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Mirror == "" {
		return nil, inputerr.Wrap(errors.New("--mirror is required: a mirror directory or https:// URL"))
	}
	if opts.Check && opts.Fix {
		return nil, inputerr.Wrap(errors.New("--check writes nothing and --fix writes what would not survive init: give one of them"))
	}
	if opts.Via != "" && !opts.Check && !opts.Fix {
		return nil, inputerr.Wrap(errors.New("--via says how the clients --check and --fix consider install: give one of them"))
	}
	terraform, err := terraformOnly(opts.Clients)
	if err != nil {
		return nil, err
	}
	platforms, err := app.ParsePlatforms(opts.Platforms)
	if err != nil {
		return nil, err
	}
	ref, m, s, err := app.Locate(opts.Mirror, opts.Flags, opts.Process)
	if err != nil {
		return nil, err
	}
	if len(platforms) == 0 {
		platforms = m.Platforms
	}
	dirs := opts.Dirs
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	cfgs, err := tfconfig.LoadConfigurations(dirs, tfconfig.Options{Args: opts.Vars, Environ: opts.Process.Environ, NoTests: opts.NoTests, Terraform: terraform})
	if err != nil {
		return nil, err
	}
	packages, hashed, err := endpoint.OpenUpstream(ctx, upstreamName(ref, opts.Mirror), ref, s)
	if err != nil {
		return nil, err
	}
	report := &Report{Warnings: tfconfig.Warnings(cfgs)}
	locker := &mirror.Locker{Mirror: packages, Checker: signing.Checker{}, Trust: s.Trust, Hashed: hashed, Limits: s.ZipLimits}
	if s.CatalogKeys != nil {
		if err := trustCatalog(ctx, locker, s.CatalogKeys, report); err != nil {
			return nil, err
		}
	}
	if opts.Check || opts.Fix {
		in, err := install(opts, ref)
		if err != nil {
			return nil, err
		}
		return report, check(ctx, report, locker, cfgs, platforms, in, opts.Fix)
	}
	report.Files, err = app.WriteLockFiles(ctx, locker, cfgs, platforms)
	return report, err
}

// terraformOnly checks the clients named and says whether Terraform alone
// is: the configurations are then read as Terraform reads them (a
// provider without a host is registry.terraform.io's, .tofu files are
// not read), and the lock files written are Terraform's.
func terraformOnly(clients []string) (bool, error) {
	for _, c := range clients {
		if c != "tofu" && c != "terraform" {
			return false, inputerr.Wrap(fmt.Errorf("--client %q: want tofu or terraform", c))
		}
	}
	return len(clients) > 0 && !slices.Contains(clients, "tofu"), nil
}

// install is how the check's clients install from the mirror: those
// given (both by default), through the method given, else the one the
// mirror is made for.
func install(opts Options, ref endpoint.Ref) (lockfile.Install, error) {
	in := lockfile.Install{OpenTofu: len(opts.Clients) == 0, Terraform: len(opts.Clients) == 0}
	for _, c := range opts.Clients {
		switch c {
		case "tofu":
			in.OpenTofu = true
		case "terraform":
			in.Terraform, in.TerraformHosts = true, true
		}
	}
	via := opts.Via
	if via == "" {
		switch {
		case ref.Kind == endpoint.OCI || ref.Kind == endpoint.OCILayout:
			via = "oci_mirror"
		case ref.Kind == endpoint.Dir && layout.ExistingKind(ref.Path) == layout.Filesystem:
			via = "filesystem_mirror"
		default:
			via = "network_mirror"
		}
	}
	switch via {
	case "oci_mirror":
		if in.TerraformHosts {
			what := "--via oci_mirror"
			if opts.Via == "" {
				what = "--mirror " + ref.String() + " is an OCI registry"
			}
			return in, inputerr.Wrap(fmt.Errorf("%s: Terraform has no oci_mirror installation method (OpenTofu >= 1.10 has); check for --client tofu alone", what))
		}
		in.MirrorHashes = true
	case "network_mirror":
		in.MirrorHashes = true
	case "filesystem_mirror":
	default:
		return in, inputerr.Wrap(fmt.Errorf("--via %q: want network_mirror, filesystem_mirror or oci_mirror", opts.Via))
	}
	return in, nil
}

// upstreamName names the mirror as the installation method that would
// read it: what a release only its hashes vouch for is refused or
// warned about as coming from.
func upstreamName(ref endpoint.Ref, mirror string) string {
	if ref.Kind == endpoint.OCI || ref.Kind == endpoint.OCILayout {
		return "oci_mirror " + mirror
	}
	return "network_mirror " + mirror
}

// check fills the report's verdicts and, with fix, writes the flagged
// files lock can write, through app.WriteLockFiles as lock does. Its
// error counts the files that still would not survive init.
func check(ctx context.Context, report *Report, l *mirror.Locker, cfgs []tfconfig.Configuration, platforms []addrs.Platform, in lockfile.Install, fix bool) error {
	var fixable []tfconfig.Configuration
	var pinned int
	var errs []error
	for _, c := range cfgs {
		v, err := lockfile.Check(ctx, l, c.Dir, c.Needs, c.Lock, platforms, in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		report.Verdicts = append(report.Verdicts, v)
		switch {
		case v.Pinned():
			pinned++
		case v.Churns():
			fixable = append(fixable, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("no lock file was checked:\n%w", err)
	}
	left := len(fixable)
	if fix {
		files, err := app.WriteLockFiles(ctx, l, fixable, platforms)
		report.Files = files
		if err != nil {
			return err
		}
		left = 0
	}
	if left+pinned > 0 {
		return &app.LockChurnError{Files: left + pinned, Pinned: pinned, Fixing: fix}
	}
	return nil
}

// trustCatalog makes the locker read the hashes a catalog signed by one of
// keys lists, and report in Warnings, once per provider and version, why
// it downloads a package all the same.
func trustCatalog(ctx context.Context, l *mirror.Locker, keys *signing.TrustedKeys, report *Report) error {
	c, _, err := app.ReadSignedCatalog(ctx, l.Mirror, keys)
	if err != nil {
		return err
	}
	l.Catalog = c.Archives
	var mu sync.Mutex
	said := map[string]bool{}
	l.Fallback = func(pkg mirror.Package, why string) {
		mu.Lock()
		defer mu.Unlock()
		key := pkg.Provider.String() + " " + pkg.Version.String()
		if said[key] {
			return
		}
		said[key] = true
		report.Warnings = append(report.Warnings, fmt.Sprintf("%s %s: downloading the archives to hash them: %s (%s)", pkg.Provider, pkg.Version, why, platformOf(pkg)))
	}
	return nil
}

// platformOf names a package's platform, or says it is every platform.
func platformOf(pkg mirror.Package) string {
	if pkg.Platform == (addrs.Platform{}) {
		return "every platform"
	}
	return pkg.Platform.String()
}
