package output

import (
	"bytes"
	"testing"

	"github.com/tfmirror/tfmirror/internal/settings"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain line\n\tindented\n":    "plain line\n\tindented\n",
		"title \x1b]0;owned\x07 done": `title \x1b]0;owned\x07 done`,
		"cr\roverwrite":               `cr\x0doverwrite`,
		"bidi \u202eexe.pdf":          `bidi \u202eexe.pdf`,
		"c1 \u009b31m":                `c1 \u009b31m`,
		"bad \xff utf8, ok é":         `bad \xff utf8, ok é`,
		"del \x7f":                    `del \x7f`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSafeWriter(t *testing.T) {
	var b bytes.Buffer
	w := Safe(&b, settings.NewRedactor([]string{"AWS_SESSION_TOKEN=session-secret"}))
	msg := "failed: session-secret \x1b[31mred\n"
	n, err := w.Write([]byte(msg))
	if err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got, want := b.String(), "failed: xxxxx \\x1b[31mred\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	if Safe(w, nil).Unwrap() != &b {
		t.Error("Safe of a SafeWriter wraps it twice")
	}
}
