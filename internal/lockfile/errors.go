package lockfile

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Error is a lock file that OpenTofu would refuse, with every problem found.
type Error struct {
	Diags hcl.Diagnostics
}

// Error renders one problem per line as "file:line:column: summary: detail".
func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Diags))
	for _, d := range e.Diags {
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		lines = append(lines, msg)
	}
	return strings.Join(lines, "\n")
}

// problem is one error diagnostic at rng.
func problem(rng hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}
