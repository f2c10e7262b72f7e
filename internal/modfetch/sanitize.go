package modfetch

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxErrorText bounds the reason of a Fetch error, escaped.
const maxErrorText = 4 << 10

// escapeControl escapes what a terminal would act on rather than show:
// control characters (ESC, BEL, CR, ...) and Unicode's bidirectional
// controls become \xNN or \uNNNN, invalid UTF-8 bytes \xNN; a backslash
// stays as it is.
func escapeControl(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// tail keeps the last max bytes of s (whole characters), marked with
// "..." when something was cut.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "..." + s[cut:]
}

// clip keeps the first head and the last max-head bytes of s (whole
// characters), with " ... " where it cut.
func clip(s string, max, head int) string {
	if len(s) <= max {
		return s
	}
	h := head
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	return s[:h] + " ... " + tail(s, max-head)[len("..."):]
}

// fetchError is a failed Fetch. Its message names the location and says
// why, as outside text may have it (git's and servers' messages, names
// of archive entries) with control characters escaped and the whole
// bounded (maxErrorText): it can be printed as it is.
type fetchError struct {
	location string
	err      error
}

func (e *fetchError) Error() string {
	return "fetch module " + escapeControl(e.location) + ": " + clip(escapeControl(e.err.Error()), maxErrorText, maxErrorText/4)
}

func (e *fetchError) Unwrap() error { return e.err }
