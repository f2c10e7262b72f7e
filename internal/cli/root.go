package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/size"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/output"
	"github.com/tfmirror/tfmirror/internal/settings"
)

// Env is everything the CLI takes from the process.
type Env struct {
	Args    []string
	Stdout  io.Writer
	Stderr  io.Writer
	Environ []string
	Version string
	Commit  string

	// now is the clock of the cool-down; nil means time.Now (tests set it).
	now func() time.Time
	// run are the commands; nil means the real ones (tests replace them
	// to check how flags become options, without running anything).
	run *commands
	// redactor knows every credential the process holds; Main makes it
	// and puts Stdout and Stderr behind it (output.Safe).
	redactor *settings.Redactor
	// session is what one run of Main shares between its commands and
	// itself: the output flags and the printer.
	session *session
}

// session is one run of the command line.
type session struct {
	json, quiet, verbose bool
	printer              *output.Printer
}

// printer returns the run's printer, made for cmd on first use, with the
// start event written.
func (env Env) printer(cmd *cobra.Command) *output.Printer {
	s := env.session
	if s.printer == nil {
		v, _ := versionInfo(env)
		s.printer = output.NewWith(env.Stdout, output.Options{JSON: s.json, Quiet: s.quiet, Verbose: s.verbose, CI: settings.InCI(env.Environ), Command: cmd.CommandPath(), Version: v, Now: env.now})
		s.printer.Start()
	}
	return s.printer
}

// waits shows the retries and waits of a command (notify) through the
// run's printer, made on first use.
type waits struct {
	env Env
	cmd *cobra.Command
}

func (w waits) Retry(url string, attempt int, delay time.Duration, err error) {
	w.env.printer(w.cmd).Retry(url, attempt, delay, err)
}

func (w waits) Wait(what, holder string, upTo time.Duration) {
	w.env.printer(w.cmd).Wait(what, holder, upTo)
}

// Main runs tfmirror and returns its exit code. Everything it prints,
// the final error line included, goes through output.Safe: credentials
// the process holds (the environment's, then the settings' as commands
// build them) are redacted and control characters escaped.
//
// With --json, stdout carries only JSON lines, and they always end with a
// summary carrying the exit code, on every path: a flag that does not
// parse, a manifest that cannot be read, a build that failed or was
// interrupted.
func Main(ctx context.Context, env Env) int {
	env.redactor = settings.NewRedactor(env.Environ)
	env.Stdout = output.Safe(env.Stdout, env.redactor)
	env.Stderr = output.Safe(env.Stderr, env.redactor)
	env.session = &session{json: slices.Contains(env.Args, "--json")}
	started := false
	root := newRootCmd(env)
	if env.session.json {
		// Help, --version and completion scripts are text: with --json,
		// stdout carries JSON lines only, so cobra's text goes to stderr.
		root.SetOut(env.Stderr)
	}
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		started = true
		env.session.json, _ = cmd.Flags().GetBool("json")
		env.session.quiet, _ = cmd.Flags().GetBool("quiet")
		env.session.verbose, _ = cmd.Flags().GetBool("verbose")
		cmd.SetContext(notify.With(cmd.Context(), waits{env, cmd}))
		env.printer(cmd) // the start event first, and the clock of elapsed_seconds
	}
	root.SetArgs(env.Args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !started {
		err = app.Usage(err)
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	if env.session.json {
		env.printer(cmd).Finish(err)
	}
	switch {
	case err == nil:
		return ExitOK
	case env.session.json:
		// One line, the summary's "error"; the "error" event has it all.
		fmt.Fprintln(env.Stderr, "tfmirror: "+output.Headline(err))
	case errors.Is(err, context.Canceled):
		// The summary said what was published and what is left.
		fmt.Fprintln(env.Stderr, "tfmirror: interrupted")
	default:
		fmt.Fprintf(env.Stderr, "tfmirror: %v\n", err)
	}
	return ExitCode(err)
}

// Exit codes (app's), for the entry point and the tests.
const (
	ExitOK           = app.ExitOK
	ExitFailure      = app.ExitFailure
	ExitUsage        = app.ExitUsage
	ExitVerification = app.ExitVerification
	ExitInterrupted  = app.ExitInterrupted
)

// ExitCode maps an error to its exit code (app.ExitCode).
func ExitCode(err error) int { return app.ExitCode(err) }

func newRootCmd(env Env) *cobra.Command {
	if env.run == nil {
		real := realCommands()
		env.run = &real
	}
	root := &cobra.Command{
		Use:   "tfmirror",
		Short: "Build static provider mirrors for OpenTofu and Terraform",
		Long: `tfmirror reads the providers you need from an HCL manifest, downloads them
from their origin registries, verifies their signed checksums, and writes a
static tree that any web server can serve as a network mirror.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	v, c := versionInfo(env)
	root.Version = fmt.Sprintf("%s (commit %s)", v, c)
	root.SetVersionTemplate("tfmirror {{.Version}}\n")
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return app.Usage(err) })
	pf := root.PersistentFlags()
	pf.Bool("json", false, "print one JSON object per line (docs/json.md): a start event, the command's events, and always a summary with the exit code last")
	pf.BoolP("quiet", "q", false, "print only problems and the summary")
	pf.BoolP("verbose", "v", false, "also print what is routine: retried requests, waits for another writer's lock")
	root.AddCommand(newBuildCmd(env), newLockCmd(env), newVerifyCmd(env), newAuditCmd(env), newBundleCmd(env), newServeCmd(env), newReplicaCmd(env), newPruneCmd(env), newCheckCmd(env), newVersionCmd(env))
	return root
}

func newVersionCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tfmirror's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, c := versionInfo(env)
			env.printer(cmd).Line(fmt.Sprintf("tfmirror %s (commit %s)", v, c))
			return nil
		},
	}
}

// versionInfo returns the release version and commit, falling back to what
// the Go toolchain recorded for builds that were not made by the release.
func versionInfo(env Env) (string, string) {
	v, c := env.Version, env.Commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

// process is what a command takes from the process.
func (env Env) process() settings.Process {
	v, _ := versionInfo(env)
	return settings.Process{Environ: env.Environ, UserAgent: "tfmirror/" + v, Now: env.now, Redactor: env.redactor}
}

// commandLine is the command cmd runs, for a mirror's change records:
// its name and the flags given, by name only, so that no value (a path,
// a location with credentials) is recorded.
func commandLine(cmd *cobra.Command) string {
	line := cmd.CommandPath()
	cmd.Flags().Visit(func(f *pflag.Flag) { line += " --" + f.Name })
	return line
}

// addConfigFlags adds --config and --require-signatures: the manifest
// whose trust blocks and settings apply, and the override that refuses
// unsigned releases. Every command that reads a manifest has them.
func addConfigFlags(cmd *cobra.Command, f *settings.Flags, what string) {
	cmd.Flags().StringVarP(&f.Config, "config", "c", f.Config, "manifest `file` "+what)
	cmd.Flags().BoolVar(&f.RequireSignatures, "require-signatures", false, "refuse releases without a valid OpenPGP signature, even from registry.opentofu.org where OpenTofu allows them")
}

// addVulnDBFlag adds --vulndb: the Go vulnerability database.
func addVulnDBFlag(cmd *cobra.Command, f *settings.Flags, what string) {
	cmd.Flags().StringVar(&f.VulnDB, "vulndb", "", what+": a `DIR` of OSV records (golang.org/x/vulndb's data/osv, or the layout vuln.go.dev serves), an OSV zip, or an https:// URL serving vuln.go.dev's layout (default: the manifest's vulndb)")
}

// addNetworkFlags adds the flags that fill f.Net, with its values as
// defaults: retries, timeouts, and the transfer limits.
func addNetworkFlags(cmd *cobra.Command, f *settings.Flags) {
	fs, p := cmd.Flags(), &f.Net
	fs.IntVar(&p.Retries, settings.FlagRetries, p.Retries, "how many times to retry a request that failed in a way that may go away (connection error, timeout, stalled or short download, 429 or 5xx), with exponential backoff")
	fs.DurationVar(&p.ConnectTimeout, settings.FlagConnectTimeout, p.ConnectTimeout, "time allowed to connect, and to complete the TLS handshake (0: no limit)")
	fs.DurationVar(&p.HeaderTimeout, settings.FlagHeaderTimeout, p.HeaderTimeout, "time allowed for a response's headers to arrive after the request is sent (0: no limit)")
	fs.DurationVar(&p.StallTimeout, settings.FlagStallTimeout, p.StallTimeout, "a download that receives no data for this long is abandoned and retried (0: no limit)")
	fs.Var(size.Value{P: &p.SpeedLimit}, settings.FlagSpeedLimit, "a download that brings fewer than this many bytes a second (a size: 1024, 1kB, 1KiB), on average over --speed-time, is abandoned and retried (0: no limit)")
	fs.DurationVar(&p.SpeedTime, settings.FlagSpeedTime, p.SpeedTime, "the window over which --speed-limit is measured (0: no limit)")
	fs.Var(size.Value{P: &p.MaxBodyBytes}, settings.FlagMaxArchiveBytes, "refuse a download longer than this (a size: 500MB, 1GiB, or bytes), and stop reading it there (0: no limit)")
}

// addSignKey adds --sign-key: the private key file that signs
// (settings.Settings.SignKey).
func addSignKey(cmd *cobra.Command, f *settings.Flags, what string) {
	cmd.Flags().StringVar(&f.SignKey, "sign-key", "", what)
}

// signCatalog is what --sign-key does on a command that rewrites a
// tree's views.
const signCatalog = "sign catalog.json (catalog.json.asc) with the ASCII-armored OpenPGP private key in this `file` (no passphrase)"

// addCatalogKey adds --catalog-key: the public keys a signed catalog is
// checked with (settings.Settings.CatalogKeys).
func addCatalogKey(cmd *cobra.Command, f *settings.Flags, what string) {
	cmd.Flags().StringVar(&f.CatalogKey, "catalog-key", "", what)
}

// addLockTimeout adds --lock-timeout.
func addLockTimeout(cmd *cobra.Command, f *settings.Flags, what string) {
	cmd.Flags().DurationVar(&f.LockTimeout, "lock-timeout", f.LockTimeout, what)
}

// given records which of the settings' flags were given on the command
// line: only those override the manifest.
func given(cmd *cobra.Command, f *settings.Flags) {
	f.ConfigSet = cmd.Flags().Changed("config")
	f.NetSet = make(map[string]bool, len(settings.NetworkFlags))
	for _, n := range settings.NetworkFlags {
		f.NetSet[n] = cmd.Flags().Changed(n)
	}
}

// addVarFlags adds how configurations are read: --var and --var-file,
// which append to one list so that their order on the command line is
// kept (a later value wins, as with tofu's -var and -var-file), and
// --no-tests.
func addVarFlags(cmd *cobra.Command, vars *[]app.VarArg, noTests *bool) {
	cmd.Flags().BoolVar(noTests, "no-tests", false, "leave out the providers and modules that only the configurations' test files (*.tftest.hcl, *.tofutest.hcl, in the root and tests/) need")
	cmd.Flags().Var(varFlag{list: vars}, "var", "set a root module variable used in module sources and versions, as `NAME=VALUE` (repeatable; as tofu init -var)")
	cmd.Flags().Var(varFlag{list: vars, file: true}, "var-file", "read root module variables from a .tfvars or .tfvars.json `file` (repeatable; as tofu init -var-file)")
}

// varFlag is one of the --var and --var-file flags.
type varFlag struct {
	list *[]app.VarArg
	file bool
}

func (v varFlag) String() string { return "" }

func (v varFlag) Set(s string) error {
	*v.list = append(*v.list, app.VarArg{File: v.file, Value: s})
	return nil
}

func (v varFlag) Type() string {
	if v.file {
		return "file"
	}
	return "NAME=VALUE"
}

// oneArgument is cobra.ExactArgs(1) with a message that shows what the
// argument is (the usage line), not only how many were given.
func oneArgument(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		return nil
	}
	what := "none"
	if len(args) > 1 {
		what = fmt.Sprintf("%d", len(args))
	}
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	return fmt.Errorf("%s takes one argument, got %s: %s", name, what, strings.TrimSuffix(cmd.UseLine(), " [flags]"))
}
