package output

import (
	"fmt"

	"github.com/tfmirror/tfmirror/internal/app"
	applock "github.com/tfmirror/tfmirror/internal/app/lock"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/views"
)

// LockFiles says which lock files were written and which were already
// up to date.
func (p *Printer) LockFiles(files []app.LockFile) {
	for _, f := range files {
		if f.Unchanged {
			p.Line("unchanged " + f.Path)
			continue
		}
		p.Line(fmt.Sprintf("wrote     %s (%s)", f.Path, plural.Count(f.Providers, "provider")))
	}
}

// Views says what refreshing a tree's views wrote and how clients use it.
func (p *Printer) Views(r *views.Report) {
	for _, line := range r.Lines() {
		p.Line(line)
	}
}

// lockFinding is the JSON event of one lock-file finding.
type lockFinding struct {
	Path     string `json:"path"`
	Provider string `json:"provider,omitempty"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform,omitempty"`
	Reason   string `json:"reason"`
	Effect   string `json:"effect"`
	Message  string `json:"message"`
}

// LockCheck reports lock --check and --fix: each finding (JSON: a
// "lock_finding" event), then what --fix wrote, then the counts (JSON: the
// summary, with the exit code of err).
func (p *Printer) LockCheck(r *applock.Report, err error) {
	if r == nil && !p.opts.JSON {
		return // the error says it all
	}
	if r == nil {
		r = &applock.Report{} // the summary's fields, on every path
	}
	p.Warnings(r.Warnings)
	var flagged []string
	for _, v := range r.Verdicts {
		if v.Churns() {
			flagged = append(flagged, v.Path)
		}
		if len(v.Findings) == 0 {
			p.Line("ok        " + v.Path)
		}
		for _, f := range v.Findings {
			p.lockFinding(f)
		}
	}
	p.LockFiles(r.Files)
	var fixed []string
	for _, f := range r.Files {
		if !f.Unchanged {
			fixed = append(fixed, f.Path)
		}
	}
	if !p.opts.JSON {
		p.say(fmt.Sprintf("%s checked: %d would not survive init, %d rewritten", plural.Count(len(r.Verdicts), "lock file"), len(flagged), len(fixed)))
		return
	}
	p.Summary(struct {
		Checked int      `json:"lock_files_checked"`
		Flagged []string `json:"lock_files_flagged"`
		Fixed   []string `json:"lock_files_fixed"`
	}{len(r.Verdicts), nonNil(flagged), nonNil(fixed)}, err)
}

// lockFinding prints one finding, its effect first.
func (p *Printer) lockFinding(f lockfile.Finding) {
	if p.opts.JSON {
		ev := lockFinding{Path: f.Path, Version: f.Version, Platform: f.Platform, Reason: string(f.Reason), Effect: string(f.Effect), Message: f.String()}
		if !f.Provider.IsZero() {
			ev.Provider = f.Provider.String()
		}
		p.emit("lock_finding", ev)
		return
	}
	switch f.Effect {
	case lockfile.EffectRewrite:
		p.say("rewrite   " + f.String())
	case lockfile.EffectFail:
		p.say("fails     " + f.String())
	default:
		p.Line("note      " + f.String())
	}
}
