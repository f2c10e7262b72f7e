package tfconfig

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Error is returned by Load when the configuration cannot be read. It lists
// every problem found, not only the first.
type Error struct {
	Problems []Problem
}

// Problem is one error in a configuration.
type Problem struct {
	// File is the file's path relative to the parent of the root module
	// directory, with forward slashes. Line and Column are 1-based and zero
	// when the problem has no position inside the file.
	File    string
	Line    int
	Column  int
	Summary string
	Detail  string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Summary)
	if p.Detail != "" {
		b.WriteString(": ")
		b.WriteString(p.Detail)
	}
	return b.String()
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// diagString formats an HCL diagnostic as "file:line:column: summary: detail".
func diagString(d *hcl.Diagnostic) string {
	return diagProblem(d).String()
}

func diagProblem(d *hcl.Diagnostic) Problem {
	p := Problem{Summary: d.Summary, Detail: d.Detail}
	if d.Subject != nil {
		p.File = d.Subject.Filename
		p.Line = d.Subject.Start.Line
		p.Column = d.Subject.Start.Column
	}
	return p
}
