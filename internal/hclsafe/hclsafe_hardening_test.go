package hclsafe

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDepthCountsWhatHCLNests(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{"empty", "", 0},
		{"flat", "a = 1\nb = \"x\"\n", 1},
		{"brackets", "a = [1, [2, (3)]]", 3},
		{"blocks", "a {\n  b {\n    c = 1\n  }\n}\n", 2},
		{"interpolation", `a = "${[b]}"`, 3},
		{"escaped interpolation", `a = "$${[[[[" `, 1},
		{"escaped quote", `a = "\"[[[[" `, 1},
		{"line comments", "# [[[[\n// ((((\na = 1\n", 0},
		{"block comment", "/* [[[[\n */ a = 1", 0},
		{"unterminated block comment is code", "a = 1 /* [[[[", 6},
		{"heredoc text", "a = <<EOT\n[[[[\n  EOT\nb = 1\n", 1},
		{"heredoc interpolation", "a = <<EOT\n${[[1]]}\nEOT\n", 4},
		{"indented heredoc", "a = <<-EOT\n  [[\n  EOT\nb = [[1]]\n", 2},
		{"heredoc marker after invalid bytes", "a = <<EOT\n\xffEOT\nb = [[[1]]]\n", 3},
		{"heredoc marker must be alone", "a = <<EOT\nEOT [\n[[\nEOT\n", 1},
		{"not a heredoc", "a = <<EOT [[\n", 5},
		{"unary operators", "a = !!!!true", 4},
		{"binary operators", "a = 1 + 2 * 3 - 4", 3},
		{"items reset", "a = 1 + 1\nb = 2 - 2\nc = [1 - 1, 2 - 2]\n", 2},
		{"hyphenated names", "a-b-c = d-e-f", 0},
		{"numbers", "a = 1e-5 + 2E+3", 1},
		{"conditionals", "a = b ? c : d ? e : f", 2},
		{"indexes", "a = b[c][d]", 3},
		{"splats", "a = b[*].c", 3},
		{"template directives", `a = "%{if x}%{if y}z%{endif}%{endif}"`, 4},
		{"for expression ignores newlines", "a = {for k, v in m :\n k => v ? 1 :\n v ? 2 : 3 }", 3},
		{"object items reset at newlines", "a = {\n  x = 1 + 1\n  y = 2 + 2\n}", 2},
		{"brace closes brackets inside it", `a = "${ ( }" b = [[1]]`, 3},
		{"nested quotes in interpolation", `a = "${ "${ "x" }" }"`, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := Depth([]byte(tt.src), Native); got != tt.want || !ok {
				t.Errorf("Depth(%q) = %d, want %d", tt.src, got, tt.want)
			}
		})
	}
}

func TestDepthOfJSONAndExpressions(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		syntax Syntax
		want   int
	}{
		{"json structure", `{"a": [1, {"b": 2}]}`, JSON, 4},
		{"json string is a template", `{"a": "${[1]}"}`, JSON, 4},
		{"json escapes are decoded", `{"a": "\u0024{[[1]]}"}`, JSON, 5},
		{"json escaped quote", `{"a": "\"[[[["}`, JSON, 2},
		{"json prepend takes the quote", "[\"\u0600\"[[[\"[[[[", JSON, 5},
		{"expression", "!!!!a", Expression, 4},
		{"expression newlines are spaces", "a ?\nb ?\nc : d : e", Expression, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := Depth([]byte(tt.src), tt.syntax); got != tt.want || !ok {
				t.Errorf("Depth(%q) = %d, want %d", tt.src, got, tt.want)
			}
		})
	}
}

// Each of these crashed the process with "fatal error: stack overflow"
// when parsed or evaluated by HCL at a few megabytes.
func TestCheckDepthRefusesDeepNesting(t *testing.T) {
	const n = 100_000
	tests := []struct {
		name   string
		src    string
		syntax Syntax
	}{
		{"brackets", "a = " + strings.Repeat("[", n), Native},
		{"blocks", strings.Repeat("a {\n", n), Native},
		{"parentheses", "a = " + strings.Repeat("(", n), Native},
		{"negations", "a = " + strings.Repeat("!", n) + "true", Native},
		{"minus", "a = " + strings.Repeat("-", n) + "1", Native},
		{"sums", "a = 1" + strings.Repeat("+1", n), Native},
		{"conditionals", "a = " + strings.Repeat("b?c:", n) + "d", Native},
		{"indexes", "a = b" + strings.Repeat("[c]", n), Native},
		{"splats", "a = b" + strings.Repeat("[*]", n), Native},
		{"calls", "a = " + strings.Repeat("f(", n), Native},
		{"if directives", `a = "` + strings.Repeat("%{if b}", n) + `"`, Native},
		{"interpolations", `a = "` + strings.Repeat(`${"`, n), Native},
		{"json", strings.Repeat("[", n), JSON},
		{"json templates", `{"a": "` + strings.Repeat("${[", n) + `"}`, JSON},
		{"expression", strings.Repeat("!", n) + "a", Expression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckDepth([]byte(tt.src), "main.tf", tt.syntax)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not refused: %v", err)
			}
			if e.Filename != "main.tf" || e.Line < 1 || e.Column < 1 || !strings.Contains(e.Error(), "Nesting too deep") {
				t.Errorf("refusal does not name the file and position: %v", e)
			}
		})
	}
}

func TestCheckDepthPosition(t *testing.T) {
	src := "a = 1\nb = " + strings.Repeat("[", MaxDepth+10)
	err := CheckDepth([]byte(src), "x.hcl", Native)
	if err == nil || !strings.HasPrefix(err.Error(), "x.hcl:2:261: Nesting too deep") {
		t.Errorf("got %v, want the position of bracket %d on line 2", err, MaxDepth+1)
	}
	ok := "a = " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if err := CheckDepth([]byte(ok), "x.hcl", Native); err != nil {
		t.Errorf("nesting of exactly MaxDepth refused: %v", err)
	}
}

func TestCheckDepthIsLinear(t *testing.T) {
	// Unterminated comments and heredoc-like lines must not make the scan
	// quadratic.
	src := strings.Repeat("/*", 4<<20)
	start := time.Now()
	_ = CheckDepth([]byte(src), "x.tf", Native)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("scanning %d bytes took %v", len(src), d)
	}
}

func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{
		"a = [1, {b = \"${c[0]}\"}]\n",
		"a = <<-EOT\n  %{ if x }${y}%{ endif }\n  EOT\n",
		"/* c */ a = !b ? -c : d[*].e # x\n",
		`{"a": ["\u0024{b}", {"c": "d"}]}`,
		"x = \"\\\"$${%%{\"\n",
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, src []byte, syntax uint8) {
		sy := Syntax(syntax % 3)
		d, ok := Depth(src, sy)
		err := CheckDepth(src, "f", sy)
		if d < 0 || ok && (err != nil) != (d > MaxDepth) || !ok && err == nil {
			t.Fatalf("Depth %d %v, CheckDepth %v", d, ok, err)
		}
	})
}
