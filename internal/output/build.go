package output

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tfmirror/tfmirror/internal/size"

	"github.com/tfmirror/tfmirror/mirror"
)

// Printer renders a command's events and reports for people (one line per
// package, a summary) or for CI (one JSON object per line).
type Printer struct {
	w        io.Writer
	json     bool
	progress *progressLine // nil unless a terminal shows a status line
}

// New returns a printer writing to w, JSON lines when asJSON.
func New(w io.Writer, asJSON bool) *Printer { return &Printer{w: w, json: asJSON} }

// JSON reports whether the printer writes JSON lines.
func (p *Printer) JSON() bool { return p.json }

// StartProgress keeps a status line of the build's progress at the bottom
// of term, when term is a terminal and the printer writes for people.
func (p *Printer) StartProgress(term io.Writer, packages int, read func() mirror.Progress) {
	if !p.json && IsTerminal(term) {
		p.progress = startProgress(term, packages, read)
	}
}

// StopProgress removes the status line.
func (p *Printer) StopProgress() {
	p.progress.finish()
	p.progress = nil
}

// JSONEvent is the shape of every --json line of a build.
type JSONEvent struct {
	Event    string `json:"event"`
	Status   string `json:"status,omitempty"`
	Provider string `json:"provider,omitempty"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform,omitempty"`
	Bytes    int64  `json:"bytes,omitempty"`
	KeyID    string `json:"key_id,omitempty"`
	// HashesOnly names the upstream whose hashes alone vouched for the
	// package, when no signature did.
	HashesOnly string  `json:"hashes_only,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Message    string  `json:"message,omitempty"`
	Counts     *counts `json:"counts,omitempty"`
	// Packages, in the summary, is every package's outcome and the key
	// that verified it.
	Packages []jsonPackage `json:"packages,omitempty"`
	// Modules, in the summary, is every module version's outcome.
	Modules  []jsonModule `json:"modules,omitempty"`
	Module   string       `json:"module,omitempty"`
	Commit   string       `json:"commit,omitempty"`
	Warnings []string     `json:"warnings,omitempty"`
	Errors   []string     `json:"errors,omitempty"`
	ExitCode *int         `json:"exit_code,omitempty"`
}

type jsonPackage struct {
	Provider   string `json:"provider"`
	Version    string `json:"version"`
	Platform   string `json:"platform"`
	Status     string `json:"status"`
	KeyID      string `json:"key_id,omitempty"`
	HashesOnly string `json:"hashes_only,omitempty"`
}

type jsonModule struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	Status  string `json:"status"`
	Commit  string `json:"commit,omitempty"`
}

type counts struct {
	Mirrored int `json:"mirrored"`
	Present  int `json:"present"`
	Skipped  int `json:"skipped"`
	Failed   int `json:"failed"`
}

// Event reports a package that finished, or a warning.
func (p *Printer) Event(e mirror.Event) {
	switch {
	case e.Started != nil && p.json:
		p.Emit(JSONEvent{Event: "started", Provider: e.Started.Provider.String(), Version: e.Started.Version.String(), Platform: e.Started.Platform.String()})
	case e.Result != nil:
		p.progress.hold(func() { p.result(*e.Result) })
	case e.Warning != "" && p.json:
		p.Emit(JSONEvent{Event: "warning", Message: WithHints(e.Warning)})
	}
}

// Line prints a message for people; in --json mode, a "message" event.
func (p *Printer) Line(msg string) {
	if p.json {
		p.Emit(JSONEvent{Event: "message", Message: msg})
		return
	}
	fmt.Fprintln(p.w, msg)
}

func (p *Printer) result(r mirror.Result) {
	if p.json {
		ev := JSONEvent{
			Event: "package", Status: string(r.Status), Provider: r.Provider.String(),
			Version: r.Version.String(), Platform: r.Platform.String(), Bytes: r.Bytes,
			KeyID: r.KeyID, HashesOnly: r.HashesOnly, Reason: r.Reason,
		}
		if r.Err != nil {
			ev.Message = r.Err.Error()
		}
		p.Emit(ev)
		return
	}
	line := fmt.Sprintf("%-9s %s", r.Status, r.Package)
	switch r.Status {
	case mirror.StatusPlanned:
		line += " (" + size.Format(r.Bytes) + ")"
		if r.Reason != "" {
			line = fmt.Sprintf("%-9s %s (%s)", r.Status, r.Package, r.Reason)
		}
	case mirror.StatusMirrored, mirror.StatusPresent:
		line += " (" + size.Format(r.Bytes) + signedBy(r) + ")"
	case mirror.StatusSkipped:
		line += ": " + r.Reason
	case mirror.StatusFailed:
		line += ": " + failureDetail(r.Err)
	}
	fmt.Fprintln(p.w, line)
}

// Module reports one module version.
func (p *Printer) Module(r mirror.ModuleResult) {
	p.progress.hold(func() {
		if p.json {
			ev := JSONEvent{Event: "module", Status: string(r.Status), Module: r.Module.String(), Version: r.Version.String(), Bytes: r.Bytes, Commit: r.Commit}
			if r.Err != nil {
				ev.Message = r.Err.Error()
			}
			p.Emit(ev)
			return
		}
		line := fmt.Sprintf("%-9s module %s %s", r.Status, r.Module.ForDisplay(), r.Version)
		switch {
		case r.Err != nil:
			var merr *mirror.ModuleError
			if errors.As(r.Err, &merr) {
				line += ": " + merr.Err.Error()
			} else {
				line += ": " + r.Err.Error()
			}
		case r.Status != mirror.StatusPlanned:
			line += " (" + size.Format(r.Bytes) + commitNote(r.Commit) + ")"
		}
		fmt.Fprintln(p.w, line)
	})
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

// Summary closes a build: counts, warnings and, in JSON, every outcome
// with the exit code.
func (p *Printer) Summary(r *mirror.Report, code int) {
	c := counts{
		Mirrored: r.Count(mirror.StatusMirrored), Present: r.Count(mirror.StatusPresent),
		Skipped: r.Count(mirror.StatusSkipped), Failed: r.Count(mirror.StatusFailed) + len(r.Errors),
	}
	if p.json {
		ev := JSONEvent{Event: "summary", Counts: &c, Warnings: hinted(r.Warnings), ExitCode: &code}
		for _, res := range r.Results {
			ev.Packages = append(ev.Packages, jsonPackage{
				Provider: res.Provider.String(), Version: res.Version.String(), Platform: res.Platform.String(),
				Status: string(res.Status), KeyID: res.KeyID, HashesOnly: res.HashesOnly,
			})
		}
		for _, res := range r.Modules {
			ev.Modules = append(ev.Modules, jsonModule{Module: res.Module.String(), Version: res.Version.String(), Status: string(res.Status), Commit: res.Commit})
			if res.Err != nil {
				ev.Errors = append(ev.Errors, res.Err.Error())
			}
		}
		for _, err := range r.Errors {
			ev.Errors = append(ev.Errors, err.Error())
		}
		for _, res := range r.Results {
			if res.Err != nil {
				ev.Errors = append(ev.Errors, res.Err.Error())
			}
		}
		p.Emit(ev)
		return
	}
	if len(r.Results) > 0 || len(r.Modules) == 0 {
		fmt.Fprintf(p.w, "\n%d mirrored, %d already present, %d skipped, %d failed\n", c.Mirrored, c.Present, c.Skipped, c.Failed)
	} else {
		fmt.Fprintln(p.w)
	}
	if len(r.Modules) > 0 {
		fmt.Fprintf(p.w, "modules: %d mirrored, %d already present, %d failed\n",
			r.CountModules(mirror.StatusMirrored), r.CountModules(mirror.StatusPresent), r.CountModules(mirror.StatusFailed))
	}
	for _, err := range r.Errors {
		var merr *mirror.ModuleError
		if errors.As(err, &merr) {
			fmt.Fprintf(p.w, "failed    %s\n", err)
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(p.w, "warnings:\n  - %s\n", WithHints(strings.Join(r.Warnings, "\n  - ")))
	}
}

// Emit writes one JSON line.
func (p *Printer) Emit(ev any) {
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	fmt.Fprintf(p.w, "%s\n", data)
}

// DryRunSummary closes a dry run: what would be downloaded, kept, skipped.
func (p *Printer) DryRunSummary(r *mirror.Report) {
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
	if p.json {
		p.Emit(JSONEvent{Event: "plan", Message: fmt.Sprintf("download %d (%d bytes), keep %d (%d bytes), skip %d, fail %d", n, down, kept, keep, skipped, failed),
			Counts: &counts{Present: kept, Skipped: skipped, Failed: failed, Mirrored: n}})
		return
	}
	fmt.Fprintf(p.w, "\ndry run: would download %d packages (%s), keep %d (%s), skip %d; %d failed; nothing was written\n",
		n, size.Format(down), kept, size.Format(keep), skipped, failed)
	if len(r.Warnings) > 0 {
		fmt.Fprintf(p.w, "warnings:\n  - %s\n", WithHints(strings.Join(r.Warnings, "\n  - ")))
	}
	if len(r.Modules) > 0 {
		fmt.Fprintf(p.w, "dry run: would fetch %d module versions, keep %d; %d failed\n",
			r.CountModules(mirror.StatusPlanned), r.CountModules(mirror.StatusPresent), r.CountModules(mirror.StatusFailed)+len(r.Errors))
	}
}
