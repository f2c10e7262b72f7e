package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/mirror"
)

// verifyOptions are the flags of "tfmirror verify".
type verifyOptions struct {
	JSON  bool
	Trust trustFlags
	Net   httpx.Policy // for a mirror URL
}

func newVerifyCmd(env Env) *cobra.Command {
	opts := verifyOptions{Net: httpx.DefaultPolicy()}
	cmd := &cobra.Command{
		Use:   "verify PATH_OR_URL|s3://BUCKET/PREFIX/|oci://TEMPLATE",
		Short: "Check a built or published mirror the way clients see it",
		Long: `verify checks a mirror directory or a published https:// mirror as
OpenTofu would use it: every index.json and <version>.json parses with the
right shape (and, over HTTP, is served as application/json); every version
listed has its <version>.json; every listed archive exists, and each h1: and
zh: listed for it matches its bytes; the kept SHA256SUMS, signature and keys are
trusted under the trust policy (the manifest's trust blocks, as for a
build), and every archive is the one that signed file lists.

An OCI registry or layout (oci://REPOSITORY_TEMPLATE, oci-layout://DIR) is
checked for the providers the manifest's provider blocks name (a registry
need not list its repositories): every version tag's index and manifests as
OpenTofu reads them, every archive against its digest, and the provenance
kept next to each index (SHA256SUMS, signature, keys) under the trust
policy, which must list each archive: a tag re-pointed at another package
is found.

Each problem is printed with its path. The exit code is 3 if there is any.`,
		Example: `  tfmirror verify site
  tfmirror verify https://mirror.example.com/ --json
  tfmirror verify --config mirror.hcl 'oci://registry.example.com/tf/${namespace}/${type}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Net.Validate(); err != nil {
				return usageError{err}
			}
			return runVerify(cmd.Context(), env, opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as one JSON object")
	addTrustFlags(cmd, &opts.Trust)
	addNetworkFlags(cmd, &opts.Net)
	return cmd
}

// VerifyFailedError means verify found problems.
type VerifyFailedError struct{ Problems int }

func (e *VerifyFailedError) Error() string {
	return fmt.Sprintf("the mirror has %d problems", e.Problems)
}

func runVerify(ctx context.Context, env Env, opts verifyOptions, ref string) error {
	trust, err := opts.Trust.policy()
	if err != nil {
		return err
	}
	net, err := opts.Trust.network(opts.Net)
	if err != nil {
		return err
	}
	report, err := verifyMirror(ctx, env, opts, ref, trust, net)
	if err != nil {
		return err
	}
	report.Warnings = append(report.Warnings, report.Accepted...)
	var failure error
	if len(report.Problems) > 0 {
		failure = &VerifyFailedError{Problems: len(report.Problems)}
	}
	if opts.JSON {
		return printVerifyJSON(env, report, failure)
	}
	for _, p := range report.Problems {
		fmt.Fprintf(env.Stdout, "problem  %s: %s\n", p.Path, p.Message)
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(env.Stdout, "warning  %s: %s\n", w.Path, withHints(w.Message))
	}
	fmt.Fprintf(env.Stdout, "%d providers, %d versions, %d archives checked: %d problems, %d warnings\n",
		report.Providers, report.Versions, report.Archives, len(report.Problems), len(report.Warnings))
	return failure
}

// verifyMirror checks a tree, or an OCI registry or layout for the
// providers the manifest names (a registry need not list its
// repositories).
func verifyMirror(ctx context.Context, env Env, opts verifyOptions, ref string, trust mirror.TrustPolicy, net httpx.Policy) (*mirror.VerifyReport, error) {
	if !ocistore.IsURI(ref) {
		tree, err := openMirror(ctx, env, ref, net)
		if err != nil {
			return nil, err
		}
		v := &mirror.Verifier{Mirror: tree, Checker: signing.Checker{}, Trust: trust}
		return v.Verify(ctx)
	}
	m, err := opts.Trust.manifest()
	if err != nil {
		return nil, err
	}
	var providers []addrs.Provider
	for _, req := range m.Requirements {
		if !slices.ContainsFunc(providers, req.Provider.Equals) {
			providers = append(providers, req.Provider)
		}
	}
	if len(providers) == 0 {
		return nil, usageError{fmt.Errorf("%s: a registry cannot be asked which repositories it holds; name the providers to check with the provider blocks of a manifest (--config)", ref)}
	}
	store, err := ocistore.New(ctx, ref, ociConfig(env, net, 0))
	if err != nil {
		return nil, usageError{err}
	}
	v := &mirror.Verifier{Mirror: store, Providers: providers, Checker: signing.Checker{}, Trust: trust}
	return v.Verify(ctx)
}

func printVerifyJSON(env Env, r *mirror.VerifyReport, failure error) error {
	out := struct {
		Providers int              `json:"providers"`
		Versions  int              `json:"versions"`
		Archives  int              `json:"archives"`
		Problems  []mirror.Problem `json:"problems"`
		Warnings  []mirror.Problem `json:"warnings"`
		ExitCode  int              `json:"exit_code"`
	}{r.Providers, r.Versions, r.Archives, r.Problems, r.Warnings, ExitCode(failure)}
	if out.Problems == nil {
		out.Problems = []mirror.Problem{}
	}
	if out.Warnings == nil {
		out.Warnings = []mirror.Problem{}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s\n", data)
	return failure
}
