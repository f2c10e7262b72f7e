package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Error is an invalid manifest: every problem with its position.
type Error struct {
	Diags hcl.Diagnostics
	files map[string]*hcl.File
}

func newError(diags hcl.Diagnostics, files map[string]*hcl.File) *Error {
	return &Error{Diags: diags, files: files}
}

// Error renders each problem as "file:line:column: summary: detail",
// followed by the offending source line and a marker under the fault.
func (e *Error) Error() string {
	var b strings.Builder
	for i, d := range e.Diags {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.format(d))
	}
	return b.String()
}

func (e *Error) format(d *hcl.Diagnostic) string {
	msg := d.Summary
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	if d.Subject == nil {
		return msg
	}
	r := *d.Subject
	out := fmt.Sprintf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, msg)
	if line := e.sourceLine(r); line != "" {
		out += "\n    " + line + "\n    " + marker(line, r)
	}
	return out
}

func (e *Error) sourceLine(r hcl.Range) string {
	f, ok := e.files[r.Filename]
	if !ok || f == nil {
		return ""
	}
	lines := strings.Split(string(f.Bytes), "\n")
	if r.Start.Line < 1 || r.Start.Line > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[r.Start.Line-1], "\r")
}

// marker underlines the range's part of its first line.
func marker(line string, r hcl.Range) string {
	start := min(max(r.Start.Column-1, 0), len(line))
	end := len(line)
	if r.End.Line == r.Start.Line {
		end = min(max(r.End.Column-1, start+1), len(line))
	}
	var b strings.Builder
	for _, c := range line[:start] {
		if c == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteRune(' ')
		}
	}
	b.WriteString(strings.Repeat("^", max(end-start, 1)))
	return b.String()
}
