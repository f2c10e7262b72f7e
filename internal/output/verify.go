package output

import (
	"fmt"

	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/mirror"
)

// Verify reports a verification: each problem and warning with its path
// and the counts, or one JSON object.
func (p *Printer) Verify(r *mirror.VerifyReport, failure error) {
	if r == nil && !p.opts.JSON {
		return // the error says it all
	}
	if r == nil {
		r = &mirror.VerifyReport{} // the summary's fields, on every path
	}
	if p.opts.JSON {
		p.Summary(struct {
			Providers int              `json:"providers"`
			Versions  int              `json:"versions"`
			Archives  int              `json:"archives"`
			Problems  []mirror.Problem `json:"problems"`
			Warnings  []mirror.Problem `json:"warnings"`
		}{r.Providers, r.Versions, r.Archives, nonNil(r.Problems), nonNil(r.Warnings)}, failure)
		return
	}
	for _, pr := range r.Problems {
		p.say(fmt.Sprintf("problem  %s: %s", pr.Path, pr.Message))
	}
	for _, w := range r.Warnings {
		p.say(fmt.Sprintf("warning  %s: %s", w.Path, WithHints(w.Message)))
	}
	modules := ""
	if r.Modules > 0 {
		modules = fmt.Sprintf(", %s (%s)", plural.Count(r.Modules, "module"), plural.Count(r.ModuleVersions, "version"))
	}
	p.say(fmt.Sprintf("%s, %s, %s%s checked: %s, %s",
		plural.Count(r.Providers, "provider"), plural.Count(r.Versions, "version"), plural.Count(r.Archives, "archive"), modules,
		plural.Count(len(r.Problems), "problem"), plural.Count(len(r.Warnings), "warning")))
}

// nonNil is s, or an empty slice for nil, so JSON shows [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
