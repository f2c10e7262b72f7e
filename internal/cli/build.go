package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/opentofu/svchost"
	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/build"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/fsmirror"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/modfetch"
	"github.com/tfmirror/tfmirror/internal/netmirror"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// buildOptions are the flags of "tfmirror build".
type buildOptions struct {
	Config             string
	configSet          bool // --config was given explicitly
	outSet             bool // --out was given: the manifest's out blocks do not count
	Dirs               []string
	Platforms          []string
	WriteLockFiles     bool
	Out                []string
	Strict             bool
	RequireSignatures  bool
	Parallel           int
	JSON               bool
	LockTimeout        time.Duration
	VerifyExisting     bool
	DryRun             bool
	Layout             string
	RegistryReplica    bool
	Shard              string
	From               string
	OverwriteOCITags   bool
	RecheckModules     bool
	OCIModuleLocations bool
	NoModules          bool
	Net                httpx.Policy // --retries and the timeouts
	netFlagsSet        map[string]bool
}

func newBuildCmd(env Env) *cobra.Command {
	opts := buildOptions{Net: httpx.DefaultPolicy()}
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
no longer selects). Files appear atomically and in publish order (archives,
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
--recheck-modules it is, and an upstream that now gives other content is
reported (exit 3) with the published package left as it was.`,
		Example: `  tfmirror build
  tfmirror build --config mirror.hcl --out /srv/mirror --json
  tfmirror build live/app-a live/app-b --platform linux_amd64 --platform darwin_arm64 --write-lock-files`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if opts.Parallel < 1 {
				return usageError{fmt.Errorf("--parallel must be at least 1")}
			}
			if err := opts.Net.Validate(); err != nil {
				return usageError{fmt.Errorf("network flags: %w", err)}
			}
			if err := opts.checkShard(); err != nil {
				return usageError{err}
			}
			opts.configSet = cmd.Flags().Changed("config")
			opts.outSet = cmd.Flags().Changed("out")
			opts.netFlagsSet = changedFlags(cmd, settings.NetworkFlags...)
			opts.Dirs = dirs
			return runBuild(cmd.Context(), env, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Config, "config", "c", "mirror.hcl", "manifest `file` to read")
	f.StringArrayVarP(&opts.Out, "out", "o", []string{"site"}, "where to publish the mirror (default: the manifest's out list, else site): a `directory` (created if missing), s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE (an OCI registry, the template exactly as in OpenTofu's oci_mirror block, e.g. 'oci://registry.example.com/tf/${namespace}/${type}') or oci-layout://DIRECTORY (OCI image layouts); repeatable: one download publishes into every one")
	f.BoolVar(&opts.Strict, "strict", false, "fail when a selected release lacks a requested platform, instead of skipping it with a warning")
	f.BoolVar(&opts.RequireSignatures, "require-signatures", false, "refuse packages without a valid OpenPGP signature, even from registry.opentofu.org where OpenTofu allows them")
	f.IntVarP(&opts.Parallel, "parallel", "p", mirror.DefaultParallel, "maximum number of concurrent downloads")
	f.StringArrayVar(&opts.Platforms, "platform", nil, "platform for the providers of configurations, as os_arch (repeatable; default: the manifest's platforms)")
	f.BoolVar(&opts.WriteLockFiles, "write-lock-files", false, "after the build, write each configuration's .terraform.lock.hcl from the mirror, as \"tfmirror lock\" does")
	f.BoolVar(&opts.JSON, "json", false, "print one JSON object per event and a JSON summary, for CI")
	f.StringVar(&opts.Layout, "layout", "network", "what to write: network (a network mirror), packed or unpacked (a filesystem_mirror directory; the network tree behind it is kept in .tfmirror/store)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print what would be downloaded, kept and skipped, with sizes, making only metadata requests and writing nothing")
	f.BoolVar(&opts.VerifyExisting, "verify-existing", false, "re-hash every archive already in the mirror instead of trusting its recorded size, and replace any that does not match")
	f.BoolVar(&opts.RegistryReplica, "registry-replica", false, "after the build, also write a static copy of the provider registry protocol under <out>/replica/, so clients with a host block install with full signature verification")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", 5*time.Minute, "how long to wait for a writer this build may not write with: another build into the same directory, a prune of the same bucket (0 fails at once)")
	f.StringVar(&opts.From, "from", "", "take the packages from a `mirror` already built (a directory, an http(s) URL, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE or oci-layout://DIRECTORY) instead of the origin registries, with the SHA256SUMS, signature and keys it kept of each release checked as from the origin: copy a mirror into another kind of destination without contacting the origin")
	f.BoolVar(&opts.OverwriteOCITags, "overwrite-oci-tags", false, "re-point an OCI version tag that holds other packages than the release brings (by default the build refuses, naming both digests: clients may have locked the old ones)")
	f.BoolVar(&opts.RecheckModules, "recheck-modules", false, "fetch module versions already mirrored again and compare them: a tag moved upstream to other content is reported (exit 3), and the published package is left as it was")
	f.BoolVar(&opts.NoModules, "no-modules", false, "mirror providers only: leave out the manifest's module blocks and the registry modules configurations call")
	f.BoolVar(&opts.OCIModuleLocations, "oci-module-locations", false, "make the module registry's download documents point at the module packages in the build's oci:// destination (oci://REPOSITORY?digest=..., OpenTofu >= 1.10) instead of the zips in the tree")
	f.StringVar(&opts.Shard, "shard", "", "build only part `K/N` of the plan (K from 1 to N), so that N workers (a CI matrix, a Kubernetes Indexed Job with --shard $((JOB_COMPLETION_INDEX+1))/N) publishing into one destination together build the whole mirror")
	addNetworkFlags(cmd, &opts.Net)
	return cmd
}

// buildSource is where a build gets its packages: the origin registries,
// or with --from a mirror already built.
func buildSource(ctx context.Context, env Env, from string, m *config.Manifest, net httpx.Policy) (mirror.Source, error) {
	if from == "" && len(m.Upstreams) > 0 {
		return upstreamSource(ctx, env, m, net)
	}
	if from == "" {
		return newRegistryClient(env, m, net)
	}
	packages, err := openPackages(ctx, env, from, net)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	return &mirror.MirrorSource{Mirror: packages}, nil
}

// upstreamSource routes each provider to the first method of the
// manifest's provider_installation block that takes it: the origin
// registries (direct), or a mirror already built (a network mirror, a
// directory, an OCI registry) whose kept SHA256SUMS, signature and keys
// are checked as the origin's.
func upstreamSource(ctx context.Context, env Env, m *config.Manifest, net httpx.Policy) (mirror.Source, error) {
	routed := &mirror.RoutedSource{}
	for _, u := range m.Upstreams {
		route := mirror.Route{Name: u.Name(), Include: u.Include, Exclude: u.Exclude}
		switch u.Kind {
		case "direct":
			client, err := newRegistryClient(env, m, net)
			if err != nil {
				return nil, err
			}
			route.Source = client
		default:
			packages, hashed, err := openUpstream(ctx, env, u, m.Settings.ZipLimits(), net)
			if err != nil {
				return nil, fmt.Errorf("provider_installation: %s: %w", u.Name(), err)
			}
			route.Source = &mirror.MirrorSource{Mirror: packages, Hashed: hashed}
		}
		routed.Routes = append(routed.Routes, route)
	}
	return routed, nil
}

// openUpstream opens a mirror as an upstream: what it kept of each
// release's origin (a mirror tfmirror built), checked as the origin's, and
// where it may hold releases it keeps nothing of, their hashes alone: those
// a network mirror lists, or those of what a filesystem mirror holds (a
// network mirror's directory is a packed filesystem mirror too). Build and
// lock read upstreams through it.
func openUpstream(ctx context.Context, env Env, u config.Upstream, limits hashing.ZipLimits, net httpx.Policy) (mirror.Packages, *mirror.HashedSource, error) {
	hashed := &mirror.HashedSource{Name: u.Name()}
	switch {
	case u.Kind == "filesystem_mirror" || u.Kind == "network_mirror" && !strings.Contains(u.Location, "://"):
		r, err := fsmirror.Open(u.Location, limits)
		if err != nil {
			return nil, nil, usageError{err}
		}
		hashed.Upstream = r
		kind := layout.ExistingKind(u.Location)
		if kind == "" {
			return hashed.Packages(), hashed, nil
		}
		tree, err := layout.OpenExisting(layout.NetworkRoot(u.Location, kind))
		if err != nil {
			return nil, nil, usageError{err}
		}
		return tree, hashed, nil
	case u.Kind == "network_mirror" && isURL(u.Location):
		client, err := newMirrorClient(env, u.Location, net)
		if err != nil {
			return nil, nil, err
		}
		hashed.Upstream = netmirror.NewHashed(client)
		return layout.NewTree(client), hashed, nil
	}
	packages, err := openPackages(ctx, env, u.Location, net)
	return packages, nil, err
}

// checkShard validates --shard and the flags it cannot go with.
func (o buildOptions) checkShard() error {
	if o.Shard == "" {
		return nil
	}
	if _, err := mirror.ParseShard(o.Shard); err != nil {
		return fmt.Errorf("--shard: %w", err)
	}
	switch {
	case o.WriteLockFiles:
		return errors.New("--write-lock-files needs the whole mirror, which one shard does not build: run \"tfmirror lock\" once every shard has finished")
	case o.RegistryReplica:
		return errors.New("--registry-replica needs the whole mirror, which one shard does not build: run \"tfmirror replica\" once every shard has finished")
	}
	return nil
}

// addNetworkFlags adds the flags that fill p, with p's values as defaults:
// retries, timeouts, and the transfer limits (--speed-limit, --speed-time,
// --max-archive-bytes). cmd.Flags().Changed tells which were given, for
// settings that the manifest may also make (settings.NetworkFlags).
func addNetworkFlags(cmd *cobra.Command, p *httpx.Policy) {
	f := cmd.Flags()
	f.IntVar(&p.Retries, settings.FlagRetries, p.Retries, "how many times to retry a request that failed in a way that may go away (connection error, timeout, stalled or short download, 429 or 5xx), with exponential backoff")
	f.DurationVar(&p.ConnectTimeout, settings.FlagConnectTimeout, p.ConnectTimeout, "time allowed to connect, and to complete the TLS handshake (0: no limit)")
	f.DurationVar(&p.HeaderTimeout, settings.FlagHeaderTimeout, p.HeaderTimeout, "time allowed for a response's headers to arrive after the request is sent (0: no limit)")
	f.DurationVar(&p.StallTimeout, settings.FlagStallTimeout, p.StallTimeout, "a download that receives no data for this long is abandoned and retried (0: no limit)")
	f.Int64Var(&p.SpeedLimit, settings.FlagSpeedLimit, p.SpeedLimit, "a download that brings fewer than this many `bytes` a second, on average over --speed-time, is abandoned and retried (0: no limit)")
	f.DurationVar(&p.SpeedTime, settings.FlagSpeedTime, p.SpeedTime, "the window over which --speed-limit is measured (0: no limit)")
	f.Int64Var(&p.MaxBodyBytes, settings.FlagMaxArchiveBytes, p.MaxBodyBytes, "refuse a download longer than this many `bytes`, and stop reading it there (0: no limit)")
}

// changedFlags reports which of the named flags were given.
func changedFlags(cmd *cobra.Command, names ...string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = cmd.Flags().Changed(n)
	}
	return out
}

func runBuild(ctx context.Context, env Env, opts buildOptions) error {
	manifest, err := loadManifest(opts)
	if err != nil {
		return err
	}
	if env.clientCerts, err = loadClientCertificates(manifest); err != nil {
		return err
	}
	platforms, err := parsePlatforms(opts.Platforms)
	if err != nil {
		return err
	}
	kind, err := layout.ParseKind(opts.Layout)
	if err != nil {
		return usageError{err}
	}
	net := manifest.Settings.NetworkPolicy(opts.Net, opts.netFlagsSet)
	if err := net.Validate(); err != nil {
		return usageError{err}
	}
	source, err := buildSource(ctx, env, opts.From, manifest, net)
	if err != nil {
		return err
	}
	modules, err := buildModules(env, manifest, net, opts)
	if err != nil {
		return err
	}
	if !opts.outSet && len(manifest.Outs) > 0 {
		opts.Out = manifest.Outs
	}
	var shard mirror.Shard
	if opts.Shard != "" {
		shard, _ = mirror.ParseShard(opts.Shard) // checked by checkShard
	}
	out := newPrinter(env.Stdout, opts.JSON)
	modules.OnResult = out.moduleResult
	return build.Run(ctx, build.Options{
		Manifest: manifest, Dirs: opts.Dirs, Platforms: platforms, Out: opts.Out, Layout: kind,
		Destinations: build.Destinations{
			S3:               s3store.Config{Environ: env.Environ},
			OCI:              ociConfig(env, net, opts.Parallel),
			OverwriteOCITags: opts.OverwriteOCITags,
			WorkDir:          cacheDir(env),
		},
		Source: source, Checker: signing.Checker{}, LockTimeout: opts.LockTimeout, Modules: modules,
		DryRun: opts.DryRun, RegistryReplica: opts.RegistryReplica, WriteLockFiles: opts.WriteLockFiles,
		OCIModuleLocations: opts.OCIModuleLocations, NoModules: opts.NoModules, Now: env.now,
		Builder: mirror.Options{
			Strict:         opts.Strict,
			Trust:          manifest.TrustPolicy(opts.RequireSignatures),
			Parallel:       opts.Parallel,
			OnEvent:        out.event,
			ZipLimits:      manifest.Settings.ZipLimits(),
			VerifyExisting: opts.VerifyExisting,
			Shard:          shard,
		},
	}, build.Hooks{
		Line:   out.line,
		DryRun: out.dryRunSummary,
		Started: func(packages int, progress func() mirror.Progress) {
			if !opts.JSON && isTerminal(env.Stderr) {
				out.progress = startProgress(env.Stderr, packages, progress)
			}
		},
		Done: func(r *mirror.Report, err error) {
			out.progress.finish()
			out.summary(r, ExitCode(err))
		},
	})
}

// buildModules wires what a build with modules needs: the origin
// registries (even with --from: modules come from their registries), the
// fetcher of their locations and the reader of their calls.
func buildModules(env Env, m *config.Manifest, net httpx.Policy, opts buildOptions) (build.Modules, error) {
	source, err := newRegistryClient(env, m, net)
	if err != nil {
		return build.Modules{}, err
	}
	httpEnv := httpEnvironment(env)
	transport, err := httpx.NewRoundTripper(httpEnv, net)
	if err != nil {
		return build.Modules{}, err
	}
	tokens := maps.Clone(m.Tokens)
	maps.Copy(tokens, config.TokensFromEnv(env.Environ))
	fetcher := modfetch.New(modfetch.Config{
		HTTP: httpx.NewClient(transport, userAgent(env), httpx.MaxRedirects, 0),
		// git presents what the archives' transport presents
		ClientCertificates: httpEnv.ClientCertificates,
		Environ:            env.Environ,
		Credentials: func(host string) (string, bool) {
			h, err := svchost.ForComparison(host)
			if token, ok := tokens[h]; err == nil && ok {
				return "Bearer " + token, true
			}
			return "", false
		},
		MaxDownloadBytes: net.MaxBodyBytes,
	})
	return build.Modules{
		Source: source, Fetcher: build.ModuleFetcher{Fetcher: fetcher}, Calls: build.ModuleCalls{},
		Recheck: opts.RecheckModules,
	}, nil
}

// loadManifest reads the manifest. Without --config, a missing mirror.hcl
// is fine when configurations are named on the command line.
func loadManifest(opts buildOptions) (*config.Manifest, error) {
	m, err := config.Load(opts.Config)
	if errors.Is(err, fs.ErrNotExist) {
		if !opts.configSet && len(opts.Dirs) > 0 {
			return &config.Manifest{}, nil
		}
		return nil, usageError{fmt.Errorf("%w (write a manifest, pass --config, or name configuration directories)", err)}
	}
	return m, err
}

// userAgent is what tfmirror calls itself in requests.
func userAgent(env Env) string {
	v, _ := versionInfo(env)
	return "tfmirror/" + v
}

// newRegistryClient wires the registry client with the manifest's host
// blocks and credentials; TF_TOKEN_* variables win, as in OpenTofu.
// SSL_CERT_FILE is read from env, so the CLI behaves the same in-process.
func newRegistryClient(env Env, m *config.Manifest, policy httpx.Policy) (*registry.Client, error) {
	transport, err := httpx.NewRoundTripper(httpEnvironment(env), policy)
	if err != nil {
		return nil, err
	}
	ua := userAgent(env)
	tokens := maps.Clone(m.Tokens)
	maps.Copy(tokens, config.TokensFromEnv(env.Environ))
	return registry.New(registry.Config{
		Fetcher:   httpx.NewFetcher(httpx.NewClient(transport, ua, httpx.MaxRedirects, 0), policy),
		Discovery: httpx.NewClient(transport, ua, 3, 11*time.Second),
		Services:  m.Services,
		Tokens:    tokens,
	}), nil
}

// cacheDir is where a build with no local destination keeps its
// workspace: $XDG_CACHE_HOME/tfmirror, else ~/.cache/tfmirror.
func cacheDir(env Env) string {
	if dir := lookupEnv(env.Environ, "XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, "tfmirror")
	}
	if home := lookupEnv(env.Environ, "HOME"); home != "" {
		return filepath.Join(home, ".cache", "tfmirror")
	}
	return ""
}

// httpEnvironment reads the variables Go programs use for TLS and proxies;
// like Go, the upper-case name wins over the lower-case one.
func httpEnvironment(env Env) httpx.Environment {
	environ := env.Environ
	return httpx.Environment{
		ClientCertificates: env.clientCerts,
		CAFile:             lookupEnv(environ, "SSL_CERT_FILE"),
		HTTPProxy:          lookupEnv(environ, "HTTP_PROXY", "http_proxy"),
		HTTPSProxy:         lookupEnv(environ, "HTTPS_PROXY", "https_proxy"),
		NoProxy:            lookupEnv(environ, "NO_PROXY", "no_proxy"),
	}
}

// lookupEnv returns the value of the first of names that is set.
func lookupEnv(environ []string, names ...string) string {
	for _, name := range names {
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v
			}
		}
	}
	return ""
}

// loadClientCertificates reads the manifest's client_certificate blocks.
// A file that cannot be read or a key that does not match is bad input
// naming the host and the files.
func loadClientCertificates(m *config.Manifest) (map[string]tls.Certificate, error) {
	out := make(map[string]tls.Certificate, len(m.ClientCertificates))
	for host, c := range m.ClientCertificates {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("client_certificate %q: cert_file %s, key_file %s: %w", host.ForDisplay(), c.CertFile, c.KeyFile, err)}
		}
		out[strings.ToLower(string(host))] = cert
	}
	return out, nil
}
