package cli

import (
	"github.com/spf13/cobra"

	appprune "github.com/tfmirror/tfmirror/internal/app/prune"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newPruneCmd(env Env) *cobra.Command {
	opts := appprune.Options{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "prune [DIR...]",
		Short: "Remove from a mirror the versions the manifest no longer selects",
		Long: `prune removes from a mirror (a directory or s3://BUCKET/PREFIX/) the
versions that the manifest and configurations, read exactly as build reads
them, no longer select. Versions are selected from those the mirror holds,
by the build's rule (a constraint keeps every match, newest = N the newest
N, a configuration what "tofu init" would install): prune contacts no
registry, and a newer release upstream never removes anything.

A version is first unlisted: index.json is rewritten without it (and
catalog.json without a provider left with none). Its files
(<version>.json, provenance, SHA256SUMS, signature, archives) are deleted
by a later prune, once index.json has not changed for --grace, so that
clients and CDNs that cached the older index.json still find them; with
--grace 0 they go in the same run. Writes are made in reverse publish
order, each one atomic, under the mirror's exclusive lock: a prune waits
for builds publishing into the mirror (up to --lock-timeout) and plans
again once they are done. Files that are not a version's are left alone
and reported.

A run that would unlist or delete more than --max-deletions versions is
refused whole, so a wrong or emptied manifest never wipes a mirror; so is
one that would unlist every version of a provider an edit or two away
from one the manifest names and the mirror does not hold (a typo).`,
		Example: `  tfmirror prune --dry-run
  tfmirror prune --config mirror.hcl --out s3://mirror-bucket/site/ --json
  tfmirror prune live/app-a live/app-b --out /srv/mirror --grace 0`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			given(cmd, &opts.Flags)
			opts.Dirs, opts.Process = dirs, env.process()
			opts.Process.Command = commandLine(cmd)
			report, err := env.run.prune(cmd.Context(), opts)
			env.printer(cmd).Prune(opts.Out, opts.DryRun, opts.Grace, report, err)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Flags.Config, "config", "c", opts.Flags.Config, "manifest `file` to read")
	f.StringVarP(&opts.Out, "out", "o", "site", "the mirror to prune: a `directory` or s3://BUCKET/PREFIX/")
	f.StringArrayVar(&opts.Platforms, "platform", nil, "platform for the providers of configurations, as os_arch (repeatable; default: the manifest's platforms), as for build")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print what would be unlisted and deleted, taking no lock and writing nothing")
	f.DurationVar(&opts.Grace, "grace", appprune.DefaultGrace, "how long a version's files stay once index.json no longer lists it, counted from index.json's last change (0: delete them in the run that unlists the version)")
	f.IntVar(&opts.MaxDeletions, "max-deletions", appprune.DefaultMaxDeletions, "refuse the whole run if it would unlist or delete more than this many versions")
	addSignKey(cmd, &opts.Flags, signCatalog)
	addLockTimeout(cmd, &opts.Flags, "how long to wait for the writers a prune excludes: builds publishing into the same mirror (0 fails at once)")
	addVarFlags(cmd, &opts.Vars, &opts.NoTests)
	return cmd
}
