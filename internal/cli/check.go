package cli

import (
	"github.com/spf13/cobra"

	appcheck "github.com/tfmirror/tfmirror/internal/app/check"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newCheckCmd(env Env) *cobra.Command {
	opts := appcheck.Options{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "check [DIR...]",
		Short: "Check a manifest without any network request",
		Long: `check reads the manifest and what it names on this machine, as build
would, without contacting any registry, bucket or mirror: the manifest's
syntax, version constraints, platforms (a typo such as linux_amd46 is
refused with the platform meant), destinations and upstream locations
(near misses such as s3:/bucket refused), the configurations it names (and
DIR arguments), their lock files, the client certificates' files, and the
CA file of SSL_CERT_FILE. Problems are printed with their file:line:col and
the exit code is 2; a manifest that passes prints what it asks for.`,
		Example: `  tfmirror check
  tfmirror check --config mirror.hcl live/app-a`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			given(cmd, &opts.Flags)
			opts.Dirs, opts.Process = dirs, env.process()
			report, err := env.run.check(cmd.Context(), opts)
			if err != nil {
				return err
			}
			env.printer(cmd).Check(report)
			return nil
		},
	}
	cmd.Flags().StringVarP(&opts.Flags.Config, "config", "c", opts.Flags.Config, "manifest `file` to check")
	addVarFlags(cmd, &opts.Vars, &opts.NoTests)
	return cmd
}
