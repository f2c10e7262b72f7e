package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	appbuild "github.com/tfmirror/tfmirror/internal/app/build"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/size"
	"github.com/tfmirror/tfmirror/mirror"
)

// StartProgress keeps a status line of the build's progress at the bottom
// of term, when term is a terminal and the printer writes for people.
func (p *Printer) StartProgress(term io.Writer, packages int, read func() mirror.Progress) {
	if !p.opts.JSON && !p.opts.Quiet && !p.opts.CI && IsTerminal(term) {
		p.progress = startProgress(term, packages, read)
	}
}

// StopProgress removes the status line.
func (p *Printer) StopProgress() {
	p.progress.finish()
	p.progress = nil
}

// DeferResults holds results back until the summary, which prints them
// sorted (a dry run's listing).
func (p *Printer) DeferResults() { p.deferred = true }

// packageEvent is a "package" event: one package's outcome.
type packageEvent struct {
	Status   string `json:"status"`
	Provider string `json:"provider"`
	Version  string `json:"version"`
	Platform string `json:"platform"`
	Bytes    int64  `json:"bytes,omitempty"`
	KeyID    string `json:"key_id,omitempty"`
	// HashesOnly names the upstream whose hashes alone vouched for the
	// package, when no signature did.
	HashesOnly string `json:"hashes_only,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	// Advisories are the package's known vulnerabilities (with --vulndb).
	Advisories []advisoryJSON `json:"advisories,omitempty"`
}

// moduleEvent is a "module" event: one module version's outcome.
type moduleEvent struct {
	Status  string `json:"status"`
	Module  string `json:"module"`
	Version string `json:"version"`
	Bytes   int64  `json:"bytes,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Message string `json:"message,omitempty"`
}

// Event reports a package that started or finished, or a warning.
func (p *Printer) Event(e mirror.Event) {
	switch {
	case e.Started != nil && p.opts.JSON:
		p.emit("started", struct {
			Provider string `json:"provider"`
			Version  string `json:"version"`
			Platform string `json:"platform"`
		}{e.Started.Provider.String(), e.Started.Version.String(), e.Started.Platform.String()})
	case e.Result != nil && !p.deferred:
		p.result(*e.Result)
	case e.Keys != nil:
		p.keys(e.Keys)
	case e.Deprecation != nil:
		p.deprecation(*e.Deprecation)
	case e.Warning != "" && p.opts.JSON:
		p.emit("warning", struct {
			Message string `json:"message"`
		}{WithHints(e.Warning)})
	}
}

func (p *Printer) result(r mirror.Result) {
	if p.opts.JSON {
		ev := packageEvent{
			Status: string(r.Status), Provider: r.Provider.String(), Version: r.Version.String(), Platform: r.Platform.String(),
			Bytes: r.Bytes, KeyID: r.KeyID, HashesOnly: r.HashesOnly, Reason: r.Reason, Advisories: advisoriesJSON(r.Advisories),
		}
		if r.Err != nil && r.Status != mirror.StatusCanceled {
			ev.Message = r.Err.Error()
		}
		p.emit("package", ev)
		return
	}
	line := fmt.Sprintf("%-9s %s", r.Status, r.Package)
	switch r.Status {
	case mirror.StatusCanceled:
		return // one line in the summary says what is left
	case mirror.StatusPlanned:
		line += " (" + size.Format(r.Bytes) + ")"
		if r.Reason != "" {
			line = fmt.Sprintf("%-9s %s (%s)", r.Status, r.Package, r.Reason)
		}
	case mirror.StatusMirrored, mirror.StatusPresent:
		line += " (" + size.Format(r.Bytes) + signedBy(r) + ")"
	case mirror.StatusSkipped, mirror.StatusHeld:
		line += ": " + r.Reason
	case mirror.StatusFailed:
		p.say(strings.Join(append([]string{line + ": " + WithHints(failureDetail(r.Err))}, advisoryLines(r.Advisories)...), "\n"))
		return
	}
	if len(r.Advisories) > 0 {
		p.say(strings.Join(append([]string{line + ", known vulnerabilities:"}, advisoryLines(r.Advisories)...), "\n"))
		return
	}
	p.Line(line)
}

// Module reports one module version.
func (p *Printer) Module(r mirror.ModuleResult) {
	if p.opts.JSON {
		ev := moduleEvent{Status: string(r.Status), Module: r.Module.String(), Version: r.Version.String(), Bytes: r.Bytes, Commit: r.Commit}
		if r.Err != nil && r.Status != mirror.StatusCanceled {
			ev.Message = r.Err.Error()
		}
		p.emit("module", ev)
		return
	}
	line := fmt.Sprintf("%-9s module %s %s", r.Status, r.Module.ForDisplay(), r.Version)
	switch {
	case r.Status == mirror.StatusCanceled:
	case r.Err != nil:
		var merr *mirror.ModuleError
		if errors.As(r.Err, &merr) {
			line += ": " + merr.Err.Error()
		} else {
			line += ": " + r.Err.Error()
		}
		p.say(line)
	case r.Status != mirror.StatusPlanned:
		p.Line(line + " (" + size.Format(r.Bytes) + commitNote(r.Commit) + ")")
	default:
		p.Line(line)
	}
}

func commitNote(c string) string {
	if c == "" {
		return ""
	}
	return ", commit " + c[:min(len(c), 12)]
}

// failureDetail is a package's error without the package name, which the
// line already shows.
func failureDetail(err error) string {
	var verr *mirror.VerificationError
	var perr *mirror.PackageError
	switch {
	case errors.As(err, &verr):
		return "verification failed: " + strings.TrimPrefix(verr.Error(), "verify "+verr.Package.String()+": ")
	case errors.As(err, &perr):
		return perr.Err.Error()
	}
	return err.Error()
}

func signedBy(r mirror.Result) string {
	switch {
	case r.HashesOnly != "":
		return ", hashes only"
	case r.KeyID == "":
		return ", signature not checked"
	}
	return ", signed by " + r.KeyID
}

// counts are a build's outcomes.
type counts struct {
	Mirrored int `json:"mirrored"`
	Present  int `json:"present"`
	Skipped  int `json:"skipped"`
	Failed   int `json:"failed"`
	Canceled int `json:"canceled,omitempty"`
	// Held: held back by the vulnerabilities policy.
	Held int `json:"held,omitempty"`
}

type jsonPackage struct {
	Provider   string `json:"provider"`
	Version    string `json:"version"`
	Platform   string `json:"platform"`
	Status     string `json:"status"`
	KeyID      string `json:"key_id,omitempty"`
	HashesOnly string `json:"hashes_only,omitempty"`
	// Advisories are the ids of the package's known vulnerabilities.
	Advisories []string `json:"advisories,omitempty"`
}

type jsonModule struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	Status  string `json:"status"`
	Commit  string `json:"commit,omitempty"`
}

// buildSummary is the summary of a build.
type buildSummary struct {
	DryRun          bool          `json:"dry_run,omitempty"`
	Destinations    []string      `json:"destinations"`
	BytesDownloaded int64         `json:"bytes_downloaded"`
	BytesPublished  int64         `json:"bytes_published"`
	Counts          counts        `json:"counts"`
	Packages        []jsonPackage `json:"packages"`
	Modules         []jsonModule  `json:"modules,omitempty"`
	LockFiles       []string      `json:"lock_files,omitempty"`
	// Vulnerabilities counts the known vulnerabilities found, with
	// --vulndb.
	Vulnerabilities *vulnerabilitiesJSON `json:"vulnerabilities,omitempty"`
	Warnings        []string             `json:"warnings"`
	Errors          []string             `json:"errors"`
}

// BuildSummary closes a build (a dry run too): counts, bytes, where the
// mirror went, warnings and, in JSON, every outcome with the exit code.
func (p *Printer) BuildSummary(rep *appbuild.Report, err error) {
	p.StopProgress()
	r := rep.Build
	if p.deferred {
		for _, res := range r.Results {
			p.result(res)
		}
	}
	s := buildSummary{DryRun: rep.DryRun, Destinations: rep.Destinations, BytesDownloaded: rep.Downloaded, Counts: countsOf(r)}
	if rep.VulnDB != "" {
		v := vulnerabilitiesJSON{Database: rep.VulnDB}
		v.Packages, v.Advisories = countAdvisories(r.Results)
		s.Vulnerabilities = &v
	}
	for _, res := range r.Results {
		if res.Status == mirror.StatusMirrored {
			s.BytesPublished += res.Bytes * int64(len(rep.Destinations))
		}
	}
	for _, res := range r.Modules {
		if res.Status == mirror.StatusMirrored {
			s.BytesPublished += res.Bytes * int64(len(rep.Destinations))
		}
	}
	if p.opts.JSON {
		s = withOutcomes(s, rep)
		if err != nil && len(s.Errors) == 0 && !errors.Is(err, context.Canceled) {
			s.Errors = append(s.Errors, err.Error()) // one that came before any package's
		}
		p.Summary(s, err)
		return
	}
	if rep.DryRun {
		p.dryRunText(r)
		return
	}
	p.buildText(rep, s, err)
}

// BuildFailed closes a build that ended before it had any outcome (its
// manifest, a destination or its plan refused): with JSON, the build's
// summary all the same, its lists empty; for people nothing, the command
// line prints the error.
func (p *Printer) BuildFailed(rep *appbuild.Report, err error) {
	if !p.opts.JSON {
		return
	}
	r := appbuild.Report{}
	if rep != nil {
		r = *rep
	}
	r.Build = &mirror.Report{}
	p.BuildSummary(&r, err)
}

func countsOf(r *mirror.Report) counts {
	return counts{
		Mirrored: r.Count(mirror.StatusMirrored), Present: r.Count(mirror.StatusPresent),
		Skipped: r.Count(mirror.StatusSkipped), Failed: r.Count(mirror.StatusFailed) + len(r.Errors) - canceledErrors(r.Errors),
		Canceled: r.Count(mirror.StatusCanceled), Held: r.Count(mirror.StatusHeld),
	}
}

func canceledErrors(errs []error) int {
	n := 0
	for _, e := range errs {
		if errors.Is(e, context.Canceled) {
			n++
		}
	}
	return n
}

// withOutcomes adds to a JSON summary every package's and module's
// outcome, the errors, warnings and lock files; only JSON needs them, and
// for a mirror of 150,000 packages they are tens of megabytes.
func withOutcomes(s buildSummary, rep *appbuild.Report) buildSummary {
	r := rep.Build
	s.Packages, s.Warnings, s.Errors = make([]jsonPackage, 0, len(r.Results)), hinted(r.Warnings), []string{}
	if s.Destinations == nil {
		s.Destinations = []string{}
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	for _, res := range r.Results {
		s.Packages = append(s.Packages, jsonPackage{
			Provider: res.Provider.String(), Version: res.Version.String(), Platform: res.Platform.String(),
			Status: string(res.Status), KeyID: res.KeyID, HashesOnly: res.HashesOnly, Advisories: mirror.AdvisoryIDs(res.Advisories),
		})
		if res.Err != nil && res.Status == mirror.StatusFailed {
			s.Errors = append(s.Errors, res.Err.Error())
		}
	}
	for _, res := range r.Modules {
		s.Modules = append(s.Modules, jsonModule{Module: res.Module.String(), Version: res.Version.String(), Status: string(res.Status), Commit: res.Commit})
		if res.Err != nil && res.Status == mirror.StatusFailed {
			s.Errors = append(s.Errors, res.Err.Error())
		}
	}
	for _, e := range r.Errors {
		if !errors.Is(e, context.Canceled) {
			s.Errors = append(s.Errors, e.Error())
		}
	}
	for _, f := range rep.LockFiles {
		s.LockFiles = append(s.LockFiles, f.Path)
	}
	return s
}

// buildText is the summary for people.
func (p *Printer) buildText(rep *appbuild.Report, s buildSummary, err error) {
	r, c := rep.Build, s.Counts
	if errors.Is(err, context.Canceled) {
		left := c.Canceled + r.CountModules(mirror.StatusCanceled)
		p.say(fmt.Sprintf("\ninterrupted after %s: %s published, %d left; run the same command again to resume (partial downloads are kept)",
			p.Elapsed().Round(100*1e6), plural.Count(c.Mirrored, "package"), left))
		return
	}
	if len(r.Results) > 0 || len(r.Modules) == 0 {
		held := ""
		if c.Held > 0 {
			held = fmt.Sprintf(", %d held back", c.Held)
		}
		p.say(fmt.Sprintf("\n%d mirrored, %d already present, %d skipped%s, %d failed", c.Mirrored, c.Present, c.Skipped, held, c.Failed))
	} else {
		p.say("")
	}
	if len(r.Modules) > 0 {
		p.say(fmt.Sprintf("modules: %d mirrored, %d already present, %d failed",
			r.CountModules(mirror.StatusMirrored), r.CountModules(mirror.StatusPresent), r.CountModules(mirror.StatusFailed)))
	}
	for _, e := range r.Errors {
		var merr *mirror.ModuleError
		if errors.As(e, &merr) {
			p.say("failed    " + e.Error())
		}
	}
	if v := s.Vulnerabilities; v != nil {
		p.say(fmt.Sprintf("known vulnerabilities (%s): %s in %s", v.Database, plural.Count(v.Advisories, "advisory"), plural.Count(v.Packages, "package")))
	}
	if len(r.Warnings) > 0 {
		p.say("warnings:\n  - " + WithHints(strings.Join(r.Warnings, "\n  - ")))
	}
	p.say(fmt.Sprintf("%s downloaded, %s published into %s in %s", size.Format(s.BytesDownloaded), size.Format(s.BytesPublished),
		strings.Join(rep.Destinations, ", "), p.Elapsed().Round(100*1e6)))
}

// dryRunText closes a dry run for people: what would be downloaded, kept,
// skipped.
func (p *Printer) dryRunText(r *mirror.Report) {
	var down, keep int64
	for _, res := range r.Results {
		switch res.Status {
		case mirror.StatusPlanned:
			down += res.Bytes
		case mirror.StatusPresent:
			keep += res.Bytes
		}
	}
	n := r.Count(mirror.StatusPlanned)
	kept, skipped, failed := r.Count(mirror.StatusPresent), r.Count(mirror.StatusSkipped), r.Count(mirror.StatusFailed)
	p.say(fmt.Sprintf("\ndry run: would download %s (%s), keep %d (%s), skip %d; %d failed; nothing was written",
		plural.Count(n, "package"), size.Format(down), kept, size.Format(keep), skipped, failed))
	if len(r.Warnings) > 0 {
		p.say("warnings:\n  - " + WithHints(strings.Join(r.Warnings, "\n  - ")))
	}
	if len(r.Modules) > 0 {
		p.say(fmt.Sprintf("dry run: would fetch %s, keep %d; %d failed",
			plural.Count(r.CountModules(mirror.StatusPlanned), "module version"), r.CountModules(mirror.StatusPresent), r.CountModules(mirror.StatusFailed)+len(r.Errors)))
	}
}
