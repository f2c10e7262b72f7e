package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/build"
	"github.com/tfmirror/tfmirror/internal/dest"
	"github.com/tfmirror/tfmirror/internal/prune"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/layout"
)

// pruneOptions are the flags of "tfmirror prune".
type pruneOptions struct {
	Config       string
	configSet    bool
	Dirs         []string
	Platforms    []string
	Out          string
	DryRun       bool
	Grace        time.Duration
	MaxDeletions int
	LockTimeout  time.Duration
	JSON         bool
}

func newPruneCmd(env Env) *cobra.Command {
	var opts pruneOptions
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
refused whole, so a wrong or emptied manifest never wipes a mirror.`,
		Example: `  tfmirror prune --dry-run
  tfmirror prune --config mirror.hcl --out s3://mirror-bucket/site/ --json
  tfmirror prune live/app-a live/app-b --out /srv/mirror --grace 0`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			switch {
			case opts.Grace < 0:
				return usageError{fmt.Errorf("--grace must not be negative")}
			case opts.MaxDeletions < 0:
				return usageError{fmt.Errorf("--max-deletions must not be negative")}
			}
			opts.configSet = cmd.Flags().Changed("config")
			opts.Dirs = dirs
			report, err := runPrune(cmd.Context(), env, opts)
			if opts.JSON {
				return printPruneJSON(env.Stdout, opts.Out, opts.DryRun, report, err)
			}
			printPrune(env.Stdout, opts, report, err)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Config, "config", "c", "mirror.hcl", "manifest `file` to read")
	f.StringVarP(&opts.Out, "out", "o", "site", "the mirror to prune: a `directory` or s3://BUCKET/PREFIX/")
	f.StringArrayVar(&opts.Platforms, "platform", nil, "platform for the providers of configurations, as os_arch (repeatable; default: the manifest's platforms), as for build")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print what would be unlisted and deleted, taking no lock and writing nothing")
	f.DurationVar(&opts.Grace, "grace", prune.DefaultGrace, "how long a version's files stay once index.json no longer lists it, counted from index.json's last change (0: delete them in the run that unlists the version)")
	f.IntVar(&opts.MaxDeletions, "max-deletions", prune.DefaultMaxDeletions, "refuse the whole run if it would unlist or delete more than this many versions")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", 5*time.Minute, "how long to wait for the writers a prune excludes: builds publishing into the same mirror (0 fails at once)")
	f.BoolVar(&opts.JSON, "json", false, "print the result as one JSON object, for CI")
	return cmd
}

// runPrune reads what the manifest selects and prunes the rest.
func runPrune(ctx context.Context, env Env, opts pruneOptions) (*prune.Report, error) {
	manifest, err := loadManifest(buildOptions{Config: opts.Config, configSet: opts.configSet, Dirs: opts.Dirs})
	if err != nil {
		return nil, err
	}
	platforms, err := parsePlatforms(opts.Platforms)
	if err != nil {
		return nil, err
	}
	reqs, warnings, err := build.Requirements(build.Options{Manifest: manifest, Dirs: opts.Dirs, Platforms: platforms})
	if err != nil {
		return nil, err
	}
	store, err := prune.Open(ctx, opts.Out, dest.Config{S3: s3store.Config{Environ: env.Environ}})
	var input *dest.InputError
	if errors.As(err, &input) {
		return nil, usageError{fmt.Errorf("--out %w", err)}
	}
	if err != nil {
		return nil, err
	}
	report, err := prune.Run(ctx, store, prune.Options{
		Requirements: reqs, Grace: opts.Grace, MaxDeletions: opts.MaxDeletions,
		LockTimeout: opts.LockTimeout, DryRun: opts.DryRun,
	})
	if err == nil && !opts.DryRun {
		err = writeCatalogLocked(ctx, store, opts.LockTimeout)
	}
	if report != nil {
		for i, w := range warnings {
			warnings[i] = strings.TrimPrefix(w, "warning: ")
		}
		report.Warnings = append(warnings, report.Warnings...)
	}
	return report, err
}

// printPrune prints a prune's report for people.
func printPrune(w io.Writer, opts pruneOptions, r *prune.Report, err error) {
	if r == nil {
		return
	}
	unlisted, deleted := "unlisted", "deleted"
	if r.DryRun {
		unlisted, deleted = "would unlist", "would delete"
	}
	for _, v := range r.Unlisted {
		fmt.Fprintf(w, "%-12s %s\n", unlisted, v)
	}
	for _, v := range r.Deleted {
		fmt.Fprintf(w, "%-12s %s\n", deleted, v)
	}
	for _, v := range r.Waiting {
		if v.Until.IsZero() {
			fmt.Fprintf(w, "%-12s %s: not listed; the store does not say when index.json last changed, so only a prune with --grace 0 deletes its files\n", "waiting", v.Version)
			continue
		}
		fmt.Fprintf(w, "%-12s %s: not listed; its files are deleted by a prune from %s (--grace %s)\n", "waiting", v.Version, v.Until.UTC().Format(time.RFC3339), opts.Grace)
	}
	for _, v := range r.Kept {
		fmt.Fprintf(w, "%-12s %s: not listed, but the manifest selects it; a build lists it again\n", "kept", v)
	}
	for _, l := range r.LeftAlone {
		fmt.Fprintf(w, "%-12s %s: %s\n", "left alone", l.Path, l.Reason)
	}
	for _, msg := range r.Warnings {
		fmt.Fprintf(w, "%-12s %s\n", "warning", msg)
	}
	waiting := prunePlural(len(r.Waiting), "version") + " waiting for the grace period"
	switch {
	case r.DryRun:
		fmt.Fprintf(w, "\ndry run of %s: would unlist %s and delete %d (%s), %s; nothing was written\n",
			r.Location, prunePlural(len(r.Unlisted), "version"), len(r.Deleted), prunePlural(len(r.Files), "file"), waiting)
	case err == nil && len(r.Unlisted)+len(r.Deleted)+len(r.Files) == 0:
		fmt.Fprintf(w, "\nnothing to prune in %s now, %s\n", r.Location, waiting)
	case err == nil || len(r.Files)+len(r.Unlisted) > 0:
		fmt.Fprintf(w, "\npruned %s: %s unlisted, %d deleted (%s), %s\n",
			r.Location, prunePlural(len(r.Unlisted), "version"), len(r.Deleted), prunePlural(len(r.Files), "file"), waiting)
	}
}

// prunePlural is "1 version", "2 versions".
func prunePlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

type pruneVersionJSON struct {
	Provider string `json:"provider"`
	Version  string `json:"version"`
	// Until, for a waiting version, is when its files may go (RFC 3339);
	// empty when the store does not say.
	Until string `json:"until,omitempty"`
}

type pruneLeftAloneJSON struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// pruneJSON is the one object "prune --json" prints.
type pruneJSON struct {
	Destination  string               `json:"destination"`
	DryRun       bool                 `json:"dry_run"`
	Unlisted     []pruneVersionJSON   `json:"unlisted"`
	Deleted      []pruneVersionJSON   `json:"deleted"`
	Waiting      []pruneVersionJSON   `json:"waiting"`
	Kept         []pruneVersionJSON   `json:"kept"`
	FilesDeleted []string             `json:"files_deleted"`
	LeftAlone    []pruneLeftAloneJSON `json:"left_alone"`
	Warnings     []string             `json:"warnings"`
	Errors       []string             `json:"errors"`
	ExitCode     int                  `json:"exit_code"`
}

func printPruneJSON(w io.Writer, ref string, dryRun bool, r *prune.Report, failure error) error {
	out := pruneJSON{
		Destination: ref, DryRun: dryRun,
		Unlisted: []pruneVersionJSON{}, Deleted: []pruneVersionJSON{}, Waiting: []pruneVersionJSON{}, Kept: []pruneVersionJSON{},
		FilesDeleted: []string{}, LeftAlone: []pruneLeftAloneJSON{}, Warnings: []string{}, Errors: []string{},
		ExitCode: ExitCode(failure),
	}
	version := func(v prune.Version) pruneVersionJSON {
		return pruneVersionJSON{Provider: v.Provider.String(), Version: v.Version.String()}
	}
	if r != nil {
		out.Destination = r.Location
		for _, v := range r.Unlisted {
			out.Unlisted = append(out.Unlisted, version(v))
		}
		for _, v := range r.Deleted {
			out.Deleted = append(out.Deleted, version(v))
		}
		for _, v := range r.Waiting {
			j := version(v.Version)
			if !v.Until.IsZero() {
				j.Until = v.Until.UTC().Format(time.RFC3339)
			}
			out.Waiting = append(out.Waiting, j)
		}
		for _, v := range r.Kept {
			out.Kept = append(out.Kept, version(v))
		}
		out.FilesDeleted = append(out.FilesDeleted, r.Files...)
		for _, l := range r.LeftAlone {
			out.LeftAlone = append(out.LeftAlone, pruneLeftAloneJSON(l))
		}
		out.Warnings = append(out.Warnings, r.Warnings...)
	}
	if failure != nil {
		out.Errors = append(out.Errors, failure.Error())
	}
	data, err := json.Marshal(out)
	if err != nil {
		return errors.Join(failure, err)
	}
	fmt.Fprintf(w, "%s\n", data)
	return failure
}

// writeCatalogLocked rewrites the catalog page after a prune, under the
// store's publish lock, so pruned versions leave it too.
func writeCatalogLocked(ctx context.Context, store layout.Store, wait time.Duration) error {
	unlock, err := store.Lock(ctx, wait, layout.Publish)
	if err != nil {
		return fmt.Errorf("the versions were pruned, but the catalog page was not rewritten: %w", err)
	}
	return errors.Join(build.WriteCatalog(ctx, layout.NewTree(store)), unlock())
}
