package output

import (
	"errors"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/size"
	"github.com/tfmirror/tfmirror/layout"

	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/mirror"
)

// BundleCreate reports a bundle's creation, for people or as one JSON
// object.
func (p *Printer) BundleCreate(report *bundle.CreateReport, err error) {
	if p.opts.JSON {
		p.bundleJSON(createJSON(report), err)
		return
	}
	p.problems(err)
	if err != nil {
		return
	}
	for _, s := range report.Skipped {
		if s == layout.VulnerabilitiesPath {
			// Findings belong to the database they were matched against.
			fmt.Fprintf(p.w, "skipped  %s: bundles carry no findings; run tfmirror audit --vulndb DB on the imported mirror, with the database at hand there\n", s)
			continue
		}
		fmt.Fprintf(p.w, "skipped  %s: not part of the mirror (no document refers to it)\n", s)
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(p.w, "warning  %s\n", WithHints(w))
	}
	fmt.Fprintf(p.w, "bundled %s, %s, %s%s (%s, %s) into %s%s\n",
		plural.Count(report.Providers, "provider"), plural.Count(report.Versions, "version"), plural.Count(report.Archives, "archive"), moduleNote(report.Modules, report.ModuleVersions), plural.Count(report.Files, "file"), size.Format(report.Bytes), report.Out, signedNote(report.KeyID, "signed by"))
}

// BundleImport reports a bundle's import, for people or as one JSON
// object.
func (p *Printer) BundleImport(report *bundle.ImportReport, extras string, err error) {
	if p.opts.JSON {
		p.bundleJSON(importJSON(report), err)
		return
	}
	p.problems(err)
	if err != nil {
		return
	}
	for _, w := range report.Warnings {
		fmt.Fprintf(p.w, "warning  %s\n", WithHints(w))
	}
	if report.Extras > 0 {
		fmt.Fprintf(p.w, "wrote %s and %s into %s\n", plural.Count(report.ExtraLockFiles, "lock file"),
			plural.Count(report.Extras-report.ExtraLockFiles, "CLI configuration snippet"), extras)
	}
	fmt.Fprintf(p.w, "imported %s, %s, %s%s into %s: %s of the bundle written, %d unchanged%s\n",
		plural.Count(report.Providers, "provider"), plural.Count(report.Versions, "version"), plural.Count(report.Archives, "archive"), moduleNote(report.Modules, report.ModuleVersions), report.Out, plural.Count(report.Written, "file"), report.Unchanged, signedNote(report.KeyID, "manifest signed by"))
}

func moduleNote(modules, versions int) string {
	if modules == 0 {
		return ""
	}
	return fmt.Sprintf(", %s (%s)", plural.Count(modules, "module"), plural.Count(versions, "version"))
}

func signedNote(keyID, what string) string {
	if keyID == "" {
		return ""
	}
	return "; " + what + " " + keyID
}

// printProblems prints each problem of a refused bundle or mirror.
func (p *Printer) problems(err error) {
	var refused *bundle.RefusedError
	if errors.As(err, &refused) {
		for _, pr := range refused.Problems {
			fmt.Fprintf(p.w, "problem  %s: %s\n", pr.Path, pr.Message)
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
}

func createJSON(r *bundle.CreateReport) bundleResult {
	if r == nil {
		return bundleResult{}
	}
	return bundleResult{
		Bundle: r.Out, Providers: r.Providers, Versions: r.Versions, Archives: r.Archives,
		Modules: r.Modules, ModuleVersions: r.ModuleVersions,
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

func (p *Printer) bundleJSON(out bundleResult, err error) {
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
	p.Summary(out, err)
}
