package excerpt

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{"1.0.0", `"1.0.0"`},
		{"a\x1b]0;title\x07b", `"a\x1b]0;title\ab"`},
		{"left\u202eright", `"left\u202eright"`},
		{"\xff", `"\xff"`},
		{strings.Repeat("x", Max), `"` + strings.Repeat("x", Max) + `"`},
		{strings.Repeat("x", Max+1), `"` + strings.Repeat("x", Max) + `"... (201 bytes)`},
		// A cut never splits a character.
		{strings.Repeat("x", Max-1) + "é", `"` + strings.Repeat("x", Max-1) + `"... (201 bytes)`},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%.40q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := Bytes([]byte(tt.in)); got != tt.want {
			t.Errorf("Bytes(%.40q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// A huge answer is quoted in a few hundred bytes, with no raw control
// byte left.
func TestHugeAndHostile(t *testing.T) {
	huge := strings.Repeat("\x1b[2J\x1b]8;;https://evil.example\x07click\r\n", 1<<20)
	for name, got := range map[string]string{
		"Quote":   Quote(huge),
		"Bytes":   Bytes([]byte(huge)),
		"Text":    Text(huge, 0),
		"Message": Message(huge),
		"Error":   Error(errors.New(huge)).Error(),
	} {
		if len(got) > 4*MaxMessage+50 {
			t.Errorf("%s: %d bytes", name, len(got))
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Errorf("%s: raw control character %U in %q", name, r, got)
				break
			}
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: not valid UTF-8", name)
		}
		if !strings.Contains(got, "bytes)") {
			t.Errorf("%s does not say the text was cut: %.80s", name, got)
		}
	}
}

func TestText(t *testing.T) {
	for _, tt := range []struct {
		in    string
		limit int
		want  string
	}{
		{`Access "Denied"`, 0, `Access "Denied"`},
		{"two\nlines\ttab", 0, `two\nlines\ttab`},
		{"é\x00", 0, `é\x00`},
		{"abcdef", 3, "abc... (6 bytes)"},
	} {
		if got := Text(tt.in, tt.limit); got != tt.want {
			t.Errorf("Text(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	err := Error(&fs.PathError{Op: "open", Path: strings.Repeat("p", 5000), Err: fs.ErrNotExist})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is lost the wrapped error")
	}
	if len(err.Error()) > MaxMessage+30 {
		t.Errorf("message of %d bytes", len(err.Error()))
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer text", 10, "a longe..."},
		{"ééééé", 8, "éé..."}, // never half a character
		{"abc", 2, "..."},     // the marker alone when nothing fits
	} {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
