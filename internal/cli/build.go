package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// buildOptions are the flags of "tfmirror build".
type buildOptions struct {
	Config            string
	Out               string
	Strict            bool
	RequireSignatures bool
	Parallel          int
	JSON              bool
}

func newBuildCmd(env Env) *cobra.Command {
	opts := buildOptions{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Download, verify and publish providers into a static network mirror",
		Long: `build reads the manifest, lists each provider's versions at its origin
registry, selects those matching the manifest, and for every platform
downloads the package, checks it against the release's signed SHA256SUMS and
publishes it into the output directory as a provider network mirror.

Building into an existing mirror merges: versions and platforms already there
stay listed and nothing is deleted. Files appear atomically and in publish
order (archives, then <version>.json, then index.json), so the directory can
be served while it is being built.`,
		Example: `  tfmirror build
  tfmirror build --config mirror.hcl --out /srv/mirror --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Parallel < 1 {
				return usageError{fmt.Errorf("--parallel must be at least 1")}
			}
			return runBuild(cmd.Context(), env, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Config, "config", "c", "mirror.hcl", "manifest `file` to read")
	f.StringVarP(&opts.Out, "out", "o", "site", "output `directory` of the mirror (created if missing)")
	f.BoolVar(&opts.Strict, "strict", false, "fail when a selected release lacks a requested platform, instead of skipping it with a warning")
	f.BoolVar(&opts.RequireSignatures, "require-signatures", false, "refuse packages without a valid OpenPGP signature, even from registry.opentofu.org where OpenTofu allows them")
	f.IntVarP(&opts.Parallel, "parallel", "p", mirror.DefaultParallel, "maximum number of concurrent downloads")
	f.BoolVar(&opts.JSON, "json", false, "print one JSON object per event and a JSON summary, for CI")
	return cmd
}

func runBuild(ctx context.Context, env Env, opts buildOptions) (err error) {
	manifest, err := config.Load(opts.Config)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return usageError{fmt.Errorf("%w (write a manifest or pass --config)", err)}
		}
		return err
	}
	source, err := newRegistryClient(env, manifest)
	if err != nil {
		return err
	}
	out := newPrinter(env.Stdout, opts.JSON)
	b := &mirror.Builder{
		Source:  source,
		Checker: signing.Checker{},
		Options: mirror.Options{
			Strict:            opts.Strict,
			RequireSignatures: opts.RequireSignatures,
			Parallel:          opts.Parallel,
			OnEvent:           out.event,
		},
	}
	plan, err := b.Plan(ctx, manifest.Requirements)
	if err != nil {
		return fmt.Errorf("nothing was written, because the build cannot be planned:\n%w", err)
	}
	tree, err := layout.Open(opts.Out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := tree.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	b.Tree = tree
	report := b.Execute(ctx, plan)
	err = report.Err()
	if ctx.Err() != nil {
		err = errors.Join(ctx.Err(), err)
	}
	out.summary(report, ExitCode(err))
	if err != nil {
		return fmt.Errorf("build failed:\n%w", err)
	}
	return nil
}

// newRegistryClient wires the registry client with the manifest's host
// blocks and credentials; TF_TOKEN_* variables win, as in OpenTofu.
// SSL_CERT_FILE is read from env, so the CLI behaves the same in-process.
func newRegistryClient(env Env, m *config.Manifest) (*registry.Client, error) {
	transport, err := httpx.NewTransport(httpEnvironment(env.Environ))
	if err != nil {
		return nil, err
	}
	ua := "tfmirror/" + func() string { v, _ := versionInfo(env); return v }()
	tokens := maps.Clone(m.Tokens)
	maps.Copy(tokens, config.TokensFromEnv(env.Environ))
	return registry.New(registry.Config{
		HTTP:      httpx.NewClient(transport, ua, httpx.MaxRedirects, 0),
		Discovery: httpx.NewClient(transport, ua, 3, 11*time.Second),
		Services:  m.Services,
		Tokens:    tokens,
	}), nil
}

// httpEnvironment reads the variables Go programs use for TLS and proxies;
// like Go, the upper-case name wins over the lower-case one.
func httpEnvironment(environ []string) httpx.Environment {
	return httpx.Environment{
		CAFile:     lookupEnv(environ, "SSL_CERT_FILE"),
		HTTPProxy:  lookupEnv(environ, "HTTP_PROXY", "http_proxy"),
		HTTPSProxy: lookupEnv(environ, "HTTPS_PROXY", "https_proxy"),
		NoProxy:    lookupEnv(environ, "NO_PROXY", "no_proxy"),
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
