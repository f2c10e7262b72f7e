package config

import (
	"fmt"
	"strings"
	"unicode/utf8"

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

// marker underlines the range's part of its first line. Columns count
// characters, not bytes, so they are mapped to byte offsets rune by rune.
func marker(line string, r hcl.Range) string {
	start := runeOffset(line, r.Start.Column-1)
	end := len(line)
	if r.End.Line == r.Start.Line {
		end = max(runeOffset(line, r.End.Column-1), start)
	}
	var b strings.Builder
	for _, c := range line[:start] {
		if c == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteRune(' ')
		}
	}
	b.WriteString(strings.Repeat("^", max(utf8.RuneCountInString(line[start:end]), 1)))
	return b.String()
}

// runeOffset returns the byte offset of the n-th rune of line, clamped to
// the line.
func runeOffset(line string, n int) int {
	for i := range line {
		if n <= 0 {
			return i
		}
		n--
	}
	return len(line)
}
