package output

import (
	"fmt"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/mirror"
)

// Verify reports a verification: each problem and warning with its path
// and the counts, or one JSON object.
func (p *Printer) Verify(r *mirror.VerifyReport, failure error) {
	if p.json {
		out := struct {
			Providers int              `json:"providers"`
			Versions  int              `json:"versions"`
			Archives  int              `json:"archives"`
			Problems  []mirror.Problem `json:"problems"`
			Warnings  []mirror.Problem `json:"warnings"`
			ExitCode  int              `json:"exit_code"`
		}{r.Providers, r.Versions, r.Archives, nonNil(r.Problems), nonNil(r.Warnings), app.ExitCode(failure)}
		p.Emit(out)
		return
	}
	for _, pr := range r.Problems {
		fmt.Fprintf(p.w, "problem  %s: %s\n", pr.Path, pr.Message)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(p.w, "warning  %s: %s\n", w.Path, WithHints(w.Message))
	}
	fmt.Fprintf(p.w, "%d providers, %d versions, %d archives checked: %d problems, %d warnings\n",
		r.Providers, r.Versions, r.Archives, len(r.Problems), len(r.Warnings))
}

// nonNil is s, or an empty slice for nil, so JSON shows [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
