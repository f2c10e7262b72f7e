package output

import (
	"fmt"
	"io"
	"time"

	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/prune"
)

// Prune reports a prune, for people or as one JSON object. ref names the
// mirror when the prune did not get as far as a report.
func (p *Printer) Prune(ref string, dryRun bool, grace time.Duration, r *prune.Report, failure error) {
	if p.opts.JSON {
		p.Summary(pruneSummary(ref, dryRun, r, failure), failure)
		return
	}
	printPrune(p.w, grace, r, failure)
}

// printPrune prints a prune's report for people.
func printPrune(w io.Writer, grace time.Duration, r *prune.Report, err error) {
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
		fmt.Fprintf(w, "%-12s %s: not listed; its files are deleted by a prune from %s (--grace %s)\n", "waiting", v.Version, v.Until.UTC().Format(time.RFC3339), grace)
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
	waiting := plural.Count(len(r.Waiting), "version") + " waiting for the grace period"
	switch {
	case r.DryRun:
		fmt.Fprintf(w, "\ndry run of %s: would unlist %s and delete %d (%s), %s; nothing was written\n",
			r.Location, plural.Count(len(r.Unlisted), "version"), len(r.Deleted), plural.Count(len(r.Files), "file"), waiting)
	case err == nil && len(r.Unlisted)+len(r.Deleted)+len(r.Files) == 0:
		fmt.Fprintf(w, "\nnothing to prune in %s now, %s\n", r.Location, waiting)
	case err == nil || len(r.Files)+len(r.Unlisted) > 0:
		fmt.Fprintf(w, "\npruned %s: %s unlisted, %d deleted (%s), %s\n",
			r.Location, plural.Count(len(r.Unlisted), "version"), len(r.Deleted), plural.Count(len(r.Files), "file"), waiting)
	}
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
}

func pruneSummary(ref string, dryRun bool, r *prune.Report, failure error) pruneJSON {
	out := pruneJSON{
		Destination: ref, DryRun: dryRun,
		Unlisted: []pruneVersionJSON{}, Deleted: []pruneVersionJSON{}, Waiting: []pruneVersionJSON{}, Kept: []pruneVersionJSON{},
		FilesDeleted: []string{}, LeftAlone: []pruneLeftAloneJSON{}, Warnings: []string{}, Errors: []string{},
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
	return out
}
