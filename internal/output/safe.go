package output

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tfmirror/tfmirror/internal/settings"
)

// SafeWriter is what every line tfmirror prints goes through, text and
// JSON, stdout and stderr: what it prints quotes the outside (an error a
// registry, a bucket or a git server answered, a name from a document), and
// the outside may hold a credential the process sent it or a terminal
// control sequence.
//
//   - Every credential the process holds is replaced (settings.Redactor),
//     also in the form a JSON string holds it.
//   - Control characters are escaped (Escape): C0 controls but newline and
//     tab, DEL, C1 controls, the Unicode bidirectional overrides and
//     invalid UTF-8, so that no server can move the cursor, retitle the
//     terminal, plant a hyperlink or reorder what is shown. JSON lines
//     already hold none of them raw, but the newline that ends them.
//
// Each Write is redacted and escaped as a whole, so a caller writes whole
// lines (fmt.Fprintf of a message), never a secret in pieces. The status
// line of a terminal (StartProgress) is the one writer that bypasses it:
// it prints only numbers, with the control sequences that redraw it.
type SafeWriter struct {
	w io.Writer
	r *settings.Redactor
}

// Safe returns w behind a SafeWriter that redacts with r (nil: query
// parameters only).
func Safe(w io.Writer, r *settings.Redactor) *SafeWriter {
	if s, ok := w.(*SafeWriter); ok {
		w = s.w
	}
	return &SafeWriter{w: w, r: r}
}

// Write writes p redacted and escaped; it reports all of p written when
// what it became was.
func (s *SafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, Escape(s.r.Redact(string(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the writer behind, for the terminal's status line.
func (s *SafeWriter) Unwrap() io.Writer { return s.w }

// Escape returns text with every character that could control a terminal
// escaped, as \xNN (a byte below 0x80 or invalid UTF-8) or \uNNNN (a C1
// control or a bidirectional override); newlines and tabs are kept.
func Escape(text string) string {
	if !needsEscape(text) {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, text[i])
		case unsafeRune(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(text string) bool {
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports whether r may control a terminal or reorder text.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n', r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
