// Package excerpt is how an error quotes what came from outside: a
// server's answer, a document's value, a header. It owns one rule: a
// message quotes at most Max bytes of outside text, with every control
// character, invalid byte and invisible formatting character (bidi
// overrides, say) escaped, and says how long the whole was when it cut
// it. So no answer, however large, makes an error large, and none can
// move the cursor, retitle a terminal or hide text in a log.
//
// It does not redact credentials (httpx.Redact does that for URLs) and
// does not decide what is outside input: every package that reads from
// outside quotes through it.
package excerpt

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is the most bytes of outside text a message quotes: enough to
// recognise a value or the start of an error page, never a whole
// document.
const Max = 200

// MaxMessage is the most bytes of an outside error message (a server's
// own words, a library's error that quotes a body) Message keeps.
const MaxMessage = 1000

// Quote is s quoted as Go quotes a string (strconv.Quote: control
// characters, invalid UTF-8 and non-printing characters escaped), after
// cutting it to its first Max bytes; a cut quote is followed by
// "... (N bytes)", N the length of the whole.
func Quote(s string) string { return quote(s, len(s)) }

// Bytes is Quote of b, without copying more of b than it quotes.
func Bytes(b []byte) string {
	if len(b) > Max+utf8.UTFMax {
		return quote(string(b[:Max+utf8.UTFMax]), len(b))
	}
	return quote(string(b), len(b))
}

// quote is Quote of s, the start of a whole of total bytes.
func quote(s string, total int) string {
	cut, _ := head(s, Max)
	q := strconv.Quote(cut)
	if len(cut) == total {
		return q
	}
	return fmt.Sprintf("%s... (%d bytes)", q, total)
}

// Text is s as free text in a message (not quoted): at most limit bytes
// of it, with control characters, invalid UTF-8 and non-printing
// characters escaped as Quote escapes them, and "... (N bytes)" when it
// was cut. A limit of 0 or less means Max.
func Text(s string, limit int) string {
	if limit <= 0 {
		limit = Max
	}
	cut, whole := head(s, limit)
	out := escape(cut)
	if whole {
		return out
	}
	return fmt.Sprintf("%s... (%d bytes)", out, len(s))
}

// Message is Text(s, MaxMessage): for the message of an error that may
// quote outside text.
func Message(s string) string { return Text(s, MaxMessage) }

// Error wraps err, keeping it for errors.Is and errors.As, with its
// message as Message shows it: for an error of a library that quotes
// what it parsed (a JSON or XML decoder, a registry's error answer).
// A nil err is nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &bounded{err: err}
}

type bounded struct{ err error }

func (e *bounded) Error() string { return Message(e.err.Error()) }
func (e *bounded) Unwrap() error { return e.err }

// Clip is s cut to at most n bytes (n of 3 or more) at a character
// boundary, "..." (within the n) marking the cut; s itself when it fits. It keeps outside text
// short where it is kept or shown as it is (a registry's warning, a
// reason in a record); it escapes nothing: whoever prints it to a
// terminal quotes it.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len("..."), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// head is the first bytes of s, at most limit, cut at a rune boundary;
// whole reports that nothing was cut.
func head(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, true
	}
	i := limit
	for i > 0 && i > limit-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		i = limit // not UTF-8 there: cut at the byte, escaped anyway
	}
	return s[:i], false
}

// escape writes s with what Quote escapes escaped, and nothing else: no
// surrounding quotes, quotes and backslashes as they are.
func escape(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !printable(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // 'x' with r escaped
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// printable reports whether r may appear in a message as it is: a
// printing character or a space, as strconv.IsPrint says (which leaves
// out control and formatting characters such as bidi overrides).
func printable(r rune) bool { return r == ' ' || strconv.IsPrint(r) }

// userinfo finds what could be the userinfo of a URL in text ("user@",
// "user:password@"), whether or not a "scheme://" comes before it.
var userinfo = regexp.MustCompile(`[^\s/@:'"]+(:[^\s/@'"]*)?@`)

// WithoutUserinfo is text with the user name and password of every URL in
// it replaced by "xxxxx": for locations that did not parse and for other
// programs' messages, where a secret a user wrote into a URL must not be
// printed.
func WithoutUserinfo(text string) string {
	return userinfo.ReplaceAllString(text, "xxxxx@")
}
