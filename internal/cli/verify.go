package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/httpx"
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
		Use:   "verify PATH_OR_URL",
		Short: "Check a built or published mirror the way clients see it",
		Long: `verify checks a mirror directory or a published https:// mirror as
OpenTofu would use it: every index.json and <version>.json parses with the
right shape (and, over HTTP, is served as application/json); every version
listed has its <version>.json; every listed archive exists, and each h1: and
zh: listed for it matches its bytes; the kept SHA256SUMS, signature and keys are
trusted under the trust policy (the manifest's trust blocks, as for a
build), and every archive is the one that signed file lists.

Each problem is printed with its path. The exit code is 3 if there is any.`,
		Example: `  tfmirror verify site
  tfmirror verify https://mirror.example.com/ --json`,
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
	tree, err := openMirror(ctx, env, ref, net)
	if err != nil {
		return err
	}
	v := &mirror.Verifier{Mirror: tree, Checker: signing.Checker{}, Trust: trust}
	report, err := v.Verify(ctx)
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
