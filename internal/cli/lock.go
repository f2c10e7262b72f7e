package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/locks"
	"github.com/tfmirror/tfmirror/internal/netmirror"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// lockOptions are the flags of "tfmirror lock".
type lockOptions struct {
	Mirror    string
	Platforms []string
	Trust     trustFlags
	Net       httpx.Policy // --retries and the timeouts, for a mirror URL
}

func newLockCmd(env Env) *cobra.Command {
	opts := lockOptions{Net: httpx.DefaultPolicy()}
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
"tofu providers lock -platform=..." writes, and is valid on every platform
listed. Providers the configuration no longer needs are removed, as tofu
does.

Nothing is written unless every directory's lock file can be computed.`,
		Example: `  tfmirror lock --mirror site --platform linux_amd64 --platform darwin_arm64
  tfmirror lock live/app-a live/app-b --mirror https://mirror.example.com/`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if opts.Mirror == "" {
				return usageError{fmt.Errorf("--mirror is required: a mirror directory or https:// URL")}
			}
			if err := opts.Net.Validate(); err != nil {
				return usageError{fmt.Errorf("network flags: %w", err)}
			}
			platforms, err := parsePlatforms(opts.Platforms)
			if err != nil {
				return err
			}
			if len(dirs) == 0 {
				dirs = []string{"."}
			}
			return runLock(cmd.Context(), env, opts, dirs, platforms)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Mirror, "mirror", "m", "", "the built mirror: a directory, an http(s) URL, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE (quote it: the template holds ${...}) or oci-layout://DIRECTORY")
	f.StringArrayVar(&opts.Platforms, "platform", nil, "platform to record hashes for, as os_arch (repeatable; default: every platform the mirror holds)")
	addTrustFlags(cmd, &opts.Trust)
	addNetworkFlags(cmd, &opts.Net)
	return cmd
}

func runLock(ctx context.Context, env Env, opts lockOptions, dirs []string, platforms []addrs.Platform) error {
	trust, err := opts.Trust.policy()
	if err != nil {
		return err
	}
	roots, err := locks.LoadRoots(dirs)
	if err != nil {
		return err
	}
	net, err := opts.Trust.network(opts.Net)
	if err != nil {
		return err
	}
	packages, hashed, err := openUpstream(ctx, env, config.Upstream{Kind: "network_mirror", Location: opts.Mirror}, hashing.ZipLimits{}, net)
	if err != nil {
		return err
	}
	report := func(s string) { fmt.Fprintln(env.Stdout, s) }
	locks.Warn(roots, report)
	locker := &mirror.Locker{Mirror: packages, Checker: signing.Checker{}, Trust: trust, Hashed: hashed}
	updates, err := locks.Compute(ctx, locker, roots, platforms)
	if err != nil {
		return fmt.Errorf("no lock file was written:\n%w", err)
	}
	return locks.Write(updates, report)
}

// openPackages opens a built mirror to compute lock files from: an OCI
// registry or layout, or any mirror openMirror opens.
func openPackages(ctx context.Context, env Env, ref string, policy httpx.Policy) (mirror.Packages, error) {
	if !ocistore.IsURI(ref) {
		return openMirror(ctx, env, ref, policy)
	}
	store, err := ocistore.New(ctx, ref, ociConfig(env, policy, 0))
	if err != nil {
		return nil, usageError{err}
	}
	return store, nil
}

// ociConfig configures OCI registries from the environment and the
// network flags.
func ociConfig(env Env, policy httpx.Policy, parallel int) ocistore.Config {
	return ocistore.Config{
		Environ: env.Environ, UserAgent: userAgent(env), Parallel: parallel, ClientCertificates: env.clientCerts,
		Retries: policy.Retries, ConnectTimeout: policy.ConnectTimeout, HeaderTimeout: policy.HeaderTimeout,
	}
}

// openMirror opens a built mirror for reading: a URL or a local directory.
func openMirror(ctx context.Context, env Env, ref string, policy httpx.Policy) (*layout.Tree, error) {
	if strings.HasPrefix(ref, "s3://") {
		store, err := s3store.New(ctx, ref, s3store.Config{Environ: env.Environ})
		if err != nil {
			return nil, err
		}
		return layout.NewTree(store), nil
	}
	if isURL(ref) {
		client, err := newMirrorClient(env, ref, policy)
		if err != nil {
			return nil, err
		}
		return layout.NewTree(client), nil
	}
	if strings.Contains(ref, "://") {
		return nil, usageError{fmt.Errorf("%q: only directories, http(s) URLs and s3://BUCKET/PREFIX/ are supported here (lock also reads oci://REPOSITORY_TEMPLATE and oci-layout://DIRECTORY)", ref)}
	}
	tree, err := layout.OpenExisting(ref)
	if err != nil {
		return nil, usageError{err}
	}
	return tree, nil
}

func isURL(ref string) bool {
	u, err := url.Parse(ref)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http")
}

// newMirrorClient reads a published mirror. Requests have no overall time
// limit (archives can be large); the policy's timeouts catch stalls.
func newMirrorClient(env Env, base string, policy httpx.Policy) (*netmirror.Client, error) {
	transport, err := httpx.NewRoundTripper(httpEnvironment(env), policy)
	if err != nil {
		return nil, err
	}
	v, _ := versionInfo(env)
	return netmirror.New(base, httpx.NewFetcher(httpx.NewClient(transport, "tfmirror/"+v, httpx.MaxRedirects, 0), policy))
}

// parsePlatforms parses --platform values, dropping duplicates.
func parsePlatforms(raw []string) ([]addrs.Platform, error) {
	var out []addrs.Platform
	seen := map[addrs.Platform]bool{}
	for _, s := range raw {
		p, err := addrs.ParsePlatform(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--platform: %w", err)}
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
