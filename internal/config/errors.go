package config

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// Error is an invalid manifest: every problem with its position.
type Error struct {
	Diags hcl.Diagnostics
	// sources are the files' bytes with credentials masked (maskTokens),
	// for the source lines under each problem.
	sources map[string][]byte
}

func newError(diags hcl.Diagnostics, files map[string]*hcl.File) *Error {
	e := &Error{Diags: diags, sources: map[string][]byte{}}
	for name, f := range files {
		if f != nil {
			e.sources[name] = maskTokens(f.Bytes)
		}
	}
	return e
}

// refused is a manifest that hclsafe turned away before parsing.
func refused(r *hclsafe.Error) *Error {
	pos := hcl.Pos{Line: r.Line, Column: r.Column}
	return newError(hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  r.Summary,
		Detail:   r.Detail,
		Subject:  &hcl.Range{Filename: r.Filename, Start: pos, End: pos},
	}}, nil)
}

// Error renders each problem as "file:line:column: summary: detail",
// followed by the offending source line, with any token masked, and a
// marker under the fault. A problem with the whole file is
// "file: summary: detail".
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
	if r.Start.Line < 1 {
		return fmt.Sprintf("%s: %s", r.Filename, msg)
	}
	out := fmt.Sprintf("%s:%d:%d: %s", r.Filename, r.Start.Line, r.Start.Column, msg)
	if line := e.sourceLine(r); line != "" {
		out += "\n    " + line + "\n    " + marker(line, r)
	}
	return out
}

func (e *Error) sourceLine(r hcl.Range) string {
	src, ok := e.sources[r.Filename]
	if !ok {
		return ""
	}
	lines := strings.Split(string(src), "\n")
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

// maskTokens returns src with every character of the value of each
// argument whose name mentions "token" (credentials blocks' token, however
// it is misplaced) replaced by '*', to the end of the argument, so that a
// source line under a problem keeps its layout but not the credential.
// Tokens are found with HCL's scanner, which reads a broken file as far as
// it goes; an unterminated value is masked to the end of the file.
func maskTokens(src []byte) []byte {
	if !bytes.Contains(bytes.ToLower(src), []byte("token")) {
		return src
	}
	tokens, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	out := make([]byte, 0, len(src))
	last := 0
	for i := 0; i < len(tokens); i++ {
		if tokens[i].Type != hclsyntax.TokenIdent || !strings.Contains(strings.ToLower(string(tokens[i].Bytes)), "token") {
			continue
		}
		end := itemEnd(tokens, i)
		for _, tok := range tokens[i+1 : end+1] {
			if secretText(tok.Type) {
				out = append(out, src[last:tok.Range.Start.Byte]...)
				out = appendMasked(out, tok.Bytes)
				last = tok.Range.End.Byte
			}
		}
		i = end
	}
	return append(out, src[last:]...)
}

// secretText reports whether a token's text may be a credential: names,
// strings, numbers and invalid characters, not punctuation.
func secretText(t hclsyntax.TokenType) bool {
	switch t {
	case hclsyntax.TokenIdent, hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit,
		hclsyntax.TokenNumberLit, hclsyntax.TokenInvalid, hclsyntax.TokenBadUTF8:
		return true
	}
	return false
}

// appendMasked appends one '*' per character of text, keeping line breaks.
func appendMasked(out, text []byte) []byte {
	for _, r := range string(text) {
		if r == '\n' || r == '\r' {
			out = append(out, byte(r))
		} else {
			out = append(out, '*')
		}
	}
	return out
}

// itemEnd returns the index of the newline that ends the item at
// tokens[i], outside any brackets, or of the last token.
func itemEnd(tokens hclsyntax.Tokens, i int) int {
	depth := 0
	for j := i; j < len(tokens); j++ {
		switch tokens[j].Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenTemplateSeqEnd:
			depth--
		case hclsyntax.TokenNewline:
			if depth <= 0 {
				return j
			}
		}
	}
	return len(tokens) - 1
}
