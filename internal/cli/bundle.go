package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/dest"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/mirror"
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
			return usageError{errors.New("name a subcommand: bundle create or bundle import")}
		},
	}
	cmd.AddCommand(newBundleCreateCmd(env), newBundleImportCmd(env))
	return cmd
}

// bundleCreateOptions are the flags of "tfmirror bundle create".
type bundleCreateOptions struct {
	Out         string
	LockFiles   []string
	SignKey     string
	LockTimeout time.Duration
	JSON        bool
	Trust       trustFlags
}

func newBundleCreateCmd(env Env) *cobra.Command {
	var opts bundleCreateOptions
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
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Out == "" {
				return usageError{errors.New("--out is required: the bundle file to write")}
			}
			return runBundleCreate(cmd.Context(), env, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Out, "out", "o", "", "bundle `file` to write (replaced atomically)")
	f.StringArrayVar(&opts.LockFiles, "lock-files", nil, "a `directory` whose .terraform.lock.hcl to include, under lock-files/ at its path relative to the current directory, or its name if it is elsewhere (repeatable)")
	f.StringVar(&opts.SignKey, "sign-key", "", "sign the manifest with the ASCII-armored OpenPGP private key in this `file` (no passphrase)")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", 5*time.Minute, "how long to wait for a tfmirror build writing the directory SITE (0 fails at once; a bucket is read without a lock)")
	f.BoolVar(&opts.JSON, "json", false, "print the result as one JSON object")
	addTrustFlags(cmd, &opts.Trust)
	return cmd
}

func runBundleCreate(ctx context.Context, env Env, opts bundleCreateOptions, site string) error {
	bucket := dest.IsBucket(site)
	if !bucket {
		if info, err := os.Stat(site); err != nil || !info.IsDir() {
			return usageError{fmt.Errorf("%s is not a mirror directory (nor an s3://BUCKET/PREFIX/)", site)}
		}
	}
	trust, err := opts.Trust.policy()
	if err != nil {
		return err
	}
	lockFiles, err := bundleLockFiles(opts.LockFiles)
	if err != nil {
		return err
	}
	var key *signing.SigningKey
	if opts.SignKey != "" {
		data, err := os.ReadFile(opts.SignKey)
		if err != nil {
			return usageError{fmt.Errorf("--sign-key: %w", err)}
		}
		if key, err = signing.ReadSigningKey(data); err != nil {
			return usageError{fmt.Errorf("--sign-key %s: %w", opts.SignKey, err)}
		}
	}
	create := bundle.CreateOptions{
		Site: site, Out: opts.Out, LockFiles: lockFiles, SignKey: key, LockTimeout: opts.LockTimeout, Trust: trust,
	}
	if bucket {
		// A bucket is only read: no network policy applies to it.
		if create.Mirror, err = openMirror(ctx, env, site, httpx.Policy{}); err != nil {
			return err
		}
	}
	report, err := bundle.Create(ctx, create)
	if errors.Is(err, bundle.ErrEmptyMirror) {
		err = usageError{fmt.Errorf("%s: %w", site, err)}
	}
	if opts.JSON {
		return printBundleJSON(env, createJSON(report), err)
	}
	printProblems(env, err)
	if err != nil {
		return err
	}
	for _, s := range report.Skipped {
		fmt.Fprintf(env.Stdout, "skipped  %s: not part of the mirror (no document refers to it)\n", s)
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(env.Stdout, "warning  %s\n", withHints(w))
	}
	fmt.Fprintf(env.Stdout, "bundled %d providers, %d versions, %d archives (%d files, %s) into %s%s\n",
		report.Providers, report.Versions, report.Archives, report.Files, humanBytes(report.Bytes), report.Out, signedNote(report.KeyID, "signed by"))
	return nil
}

// bundleLockFiles names each directory's lock file in the bundle by the
// directory's path relative to the current directory, or its base name
// when it is elsewhere.
func bundleLockFiles(dirs []string) ([]bundle.LockFile, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	var out []bundle.LockFile
	seen := map[string]string{}
	for _, dir := range dirs {
		file := filepath.Join(dir, bundle.LockFileName)
		if info, err := os.Stat(file); err != nil || !info.Mode().IsRegular() {
			return nil, usageError{fmt.Errorf("--lock-files %s: no %s there", dir, bundle.LockFileName)}
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, usageError{fmt.Errorf("--lock-files %s: %w", dir, err)}
		}
		name, err := filepath.Rel(cwd, abs)
		if err != nil || !filepath.IsLocal(name) {
			name = filepath.Base(abs)
		}
		name = filepath.ToSlash(name)
		if name == "." {
			name = ""
		}
		if other, ok := seen[name]; ok {
			return nil, usageError{fmt.Errorf("--lock-files %s and %s would both be bundled as lock-files/%s", other, dir, strings.TrimPrefix(name+"/"+bundle.LockFileName, "/"))}
		}
		seen[name] = dir
		out = append(out, bundle.LockFile{Name: name, Path: file})
	}
	return out, nil
}

// bundleImportOptions are the flags of "tfmirror bundle import".
type bundleImportOptions struct {
	Out         string
	Layout      string
	TrustKey    string
	Extras      string
	LockTimeout time.Duration
	JSON        bool
	Trust       trustFlags
}

func newBundleImportCmd(env Env) *cobra.Command {
	var opts bundleImportOptions
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
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Out == "" {
				return usageError{errors.New("--out is required: the mirror directory (or s3://BUCKET/PREFIX/) to import into")}
			}
			if !slices.Contains(bundle.Layouts, bundle.Layout(opts.Layout)) {
				return usageError{fmt.Errorf("--layout %s: use network, packed or unpacked", opts.Layout)}
			}
			return runBundleImport(cmd.Context(), env, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Out, "out", "o", "", "mirror `directory` to import into (created if missing, merged into if present), or s3://BUCKET/PREFIX/")
	f.StringVar(&opts.Layout, "layout", string(bundle.LayoutNetwork), "what to write: network (a network mirror), or packed or unpacked (a filesystem_mirror directory, with the network tree kept in .tfmirror/store; not into a bucket)")
	f.StringVar(&opts.TrustKey, "trust-key", "", "require a manifest signature by one of the ASCII-armored OpenPGP public keys in this `file`")
	f.StringVar(&opts.Extras, "extras", "", "after a successful import, also write the bundle's lock-files/ and cli-config/ into this `directory`")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", 5*time.Minute, "how long to wait for another tfmirror process writing DIR, or a prune of the bucket (0 fails at once)")
	f.BoolVar(&opts.JSON, "json", false, "print the result as one JSON object")
	addTrustFlags(cmd, &opts.Trust)
	return cmd
}

func runBundleImport(ctx context.Context, env Env, opts bundleImportOptions, file string) error {
	if info, err := os.Stat(file); err != nil || !info.Mode().IsRegular() {
		return usageError{fmt.Errorf("%s is not a bundle file", file)}
	}
	trust, err := opts.Trust.policy()
	if err != nil {
		return err
	}
	var trusted *signing.TrustedKeys
	if opts.TrustKey != "" {
		data, err := os.ReadFile(opts.TrustKey)
		if err != nil {
			return usageError{fmt.Errorf("--trust-key: %w", err)}
		}
		if trusted, err = signing.ReadTrustedKeys(data); err != nil {
			return usageError{fmt.Errorf("--trust-key %s: %w", opts.TrustKey, err)}
		}
	}
	report, err := bundle.Import(ctx, bundle.ImportOptions{
		Bundle: file, Out: opts.Out, Layout: bundle.Layout(opts.Layout), TrustKeys: trusted,
		Extras: opts.Extras, LockTimeout: opts.LockTimeout, Trust: trust,
		Destinations: dest.Config{S3: s3store.Config{Environ: env.Environ}},
	})
	var input *dest.InputError
	if errors.Is(err, bundle.ErrLayoutMismatch) || errors.As(err, &input) {
		err = usageError{err}
	}
	if opts.JSON {
		return printBundleJSON(env, importJSON(report), err)
	}
	printProblems(env, err)
	if err != nil {
		return err
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(env.Stdout, "warning  %s\n", withHints(w))
	}
	if report.Extras > 0 {
		fmt.Fprintf(env.Stdout, "wrote %d lock files and CLI configuration snippets into %s\n", report.Extras, opts.Extras)
	}
	fmt.Fprintf(env.Stdout, "imported %d providers, %d versions, %d archives%s into %s: %d files written, %d unchanged%s\n",
		report.Providers, report.Versions, report.Archives, moduleNote(report.Modules, report.ModuleVersions), report.Out, report.Written, report.Unchanged, signedNote(report.KeyID, "manifest signed by"))
	return nil
}

func moduleNote(modules, versions int) string {
	if modules == 0 {
		return ""
	}
	return fmt.Sprintf(", %d modules (%d versions)", modules, versions)
}

func signedNote(keyID, what string) string {
	if keyID == "" {
		return ""
	}
	return "; " + what + " " + keyID
}

// printProblems prints each problem of a refused bundle or mirror.
func printProblems(env Env, err error) {
	var refused *bundle.RefusedError
	if errors.As(err, &refused) {
		for _, p := range refused.Problems {
			fmt.Fprintf(env.Stdout, "problem  %s: %s\n", p.Path, p.Message)
		}
	}
}

// bundleResult is the --json output of both subcommands; fields that do
// not apply are left out.
type bundleResult struct {
	Bundle         string           `json:"bundle,omitempty"`
	Out            string           `json:"out,omitempty"`
	Providers      int              `json:"providers"`
	Versions       int              `json:"versions"`
	Archives       int              `json:"archives"`
	Modules        int              `json:"modules"`
	ModuleVersions int              `json:"module_versions"`
	Files          *int             `json:"files,omitempty"`
	Bytes          *int64           `json:"bytes,omitempty"`
	LockFiles      *int             `json:"lock_files,omitempty"`
	Written        *int             `json:"written,omitempty"`
	Unchanged      *int             `json:"unchanged,omitempty"`
	Extras         *int             `json:"extras,omitempty"`
	KeyID          string           `json:"key_id,omitempty"`
	Skipped        []string         `json:"skipped,omitempty"`
	Warnings       []string         `json:"warnings"`
	Problems       []mirror.Problem `json:"problems"`
	Error          string           `json:"error,omitempty"`
	ExitCode       int              `json:"exit_code"`
}

func createJSON(r *bundle.CreateReport) bundleResult {
	if r == nil {
		return bundleResult{}
	}
	return bundleResult{
		Bundle: r.Out, Providers: r.Providers, Versions: r.Versions, Archives: r.Archives,
		Files: &r.Files, Bytes: &r.Bytes, LockFiles: &r.LockFiles, KeyID: r.KeyID, Skipped: r.Skipped, Warnings: r.Warnings,
	}
}

func importJSON(r *bundle.ImportReport) bundleResult {
	if r == nil {
		return bundleResult{}
	}
	return bundleResult{
		Out: r.Out, Providers: r.Providers, Versions: r.Versions, Archives: r.Archives,
		Modules: r.Modules, ModuleVersions: r.ModuleVersions,
		Written: &r.Written, Unchanged: &r.Unchanged, Extras: &r.Extras, KeyID: r.KeyID, Warnings: r.Warnings,
	}
}

func printBundleJSON(env Env, out bundleResult, err error) error {
	var refused *bundle.RefusedError
	if errors.As(err, &refused) {
		out.Problems = refused.Problems
	}
	if out.Problems == nil {
		out.Problems = []mirror.Problem{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if err != nil {
		out.Error = err.Error()
	}
	out.ExitCode = ExitCode(err)
	data, jerr := json.Marshal(out)
	if jerr != nil {
		return jerr
	}
	fmt.Fprintf(env.Stdout, "%s\n", data)
	return err
}
