package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"

	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// The scanner's HCL-free tests live in internal/hclsafe; these hold it
// against HCL itself, which only the HCL adapters may import.

// FuzzDepthAgreesWithHCL checks hclsafe's scanner against HCL's:
//   - it never sees less nesting than HCL's own tokens open, whatever the
//     input (a bracket HCL reads as code must never be taken for text);
//   - what HCL accepts at a small depth is not refused, and its count
//     stays within a small factor of the depth of HCL's syntax tree.
func FuzzDepthAgreesWithHCL(f *testing.F) {
	for _, s := range depthSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		native, ok := hclsafe.Depth(src, hclsafe.Native)
		if !ok {
			return // refused whatever the depth, without reading on
		}
		if tok := tokenDepth(src); tok > native {
			t.Fatalf("HCL's tokens nest %d deep, the scanner saw %d", tok, native)
		}
		if file, diags := hclsyntax.ParseConfig(src, "f.tf", hcl.InitialPos); !diags.HasErrors() {
			checkAccepted(t, src, native, syntaxDepth(file.Body.(*hclsyntax.Body)))
		}
		if _, diags := hcljson.Parse(src, "f.tf.json"); !diags.HasErrors() {
			if d, ok := jsonDepth(src); ok {
				if got, _ := hclsafe.Depth(src, hclsafe.JSON); d > got {
					t.Fatalf("JSON nests %d deep, the scanner saw %d", d, got)
				}
			}
		}
	})
}

func checkAccepted(t *testing.T, src []byte, depth, tree int) {
	t.Helper()
	if tree <= 64 {
		if err := hclsafe.CheckDepth(src, "f.tf", hclsafe.Native); err != nil {
			t.Fatalf("HCL accepts this at depth %d, the scanner refuses it: %v", tree, err)
		}
	}
	if depth > 2*tree+2 {
		t.Fatalf("the scanner counts %d levels in a syntax tree %d deep", depth, tree)
	}
}

func depthSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{
		[]byte("a = [1, {b = \"${c[0]}\"}]\n"),
		[]byte("a = <<-EOT\n  %{ if x }${y}%{ endif }\n  EOT\nb = [[1]]\n"),
		[]byte("/* c */ a = !b ? -c : d[*].e # x\n"),
		[]byte("a = {for k, v in m : k => v if v != null}\n"),
		[]byte("a = \"\\\"$${%%{\"\nb = 1 /* [\n"),
		[]byte("a = <<EOT\n\xffEOT\nb = [[1]]\n"),
		[]byte(`{"a": ["\u0024{b}", {"c": "d"}]}`),
		// Found by this fuzzer: HCL's identifier tables take any bytes after
		// a non-ASCII lead byte, so invalid UTF-8 can swallow "#" or "\"".
		[]byte("\xe6#0\""),
		[]byte(strings.Repeat("(", 257) + "\xcb0\""),
	}
	for _, glob := range []string{"../../testdata/manifests/*.hcl", "testdata/*.hcl", "../../testdata/monorepo/*/*.tf*"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			src, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, src)
		}
	}
	return seeds
}

// tokenDepth is how deeply HCL's own tokens nest, closing them as HCL's
// parser does when it recovers from an error.
func tokenDepth(src []byte) int {
	tokens, _ := hclsyntax.LexConfig(src, "f.tf", hcl.InitialPos)
	var open []hclsyntax.TokenType
	deepest := 0
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			open = append(open, tok.Type)
			deepest = max(deepest, len(open))
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			open = closeTo(open, opener(tok.Type))
		}
	}
	return deepest
}

func closeTo(open []hclsyntax.TokenType, want ...hclsyntax.TokenType) []hclsyntax.TokenType {
	for i := len(open) - 1; i >= 0; i-- {
		for _, w := range want {
			if open[i] == w {
				return open[:i]
			}
		}
	}
	return open[:0]
}

func opener(closer hclsyntax.TokenType) hclsyntax.TokenType {
	switch closer {
	case hclsyntax.TokenCBrace:
		return hclsyntax.TokenOBrace
	case hclsyntax.TokenCBrack:
		return hclsyntax.TokenOBrack
	case hclsyntax.TokenCParen:
		return hclsyntax.TokenOParen
	case hclsyntax.TokenCQuote:
		return hclsyntax.TokenOQuote
	case hclsyntax.TokenCHeredoc:
		return hclsyntax.TokenOHeredoc
	}
	return hclsyntax.TokenTemplateInterp
}

// syntaxDepth is the depth of expressions and blocks in a syntax tree:
// bodies, blocks and attributes are not counted, as they come in fixed
// numbers per brace.
func syntaxDepth(body *hclsyntax.Body) int {
	w := &depthWalker{}
	_ = hclsyntax.Walk(body, w)
	return w.deepest
}

type depthWalker struct{ depth, deepest int }

func (w *depthWalker) Enter(n hclsyntax.Node) hcl.Diagnostics {
	if counted(n) {
		w.depth++
		w.deepest = max(w.deepest, w.depth)
	}
	return nil
}

func (w *depthWalker) Exit(n hclsyntax.Node) hcl.Diagnostics {
	if counted(n) {
		w.depth--
	}
	return nil
}

func counted(n hclsyntax.Node) bool {
	switch n.(type) {
	case *hclsyntax.Body, *hclsyntax.Attributes, *hclsyntax.Attribute, *hclsyntax.Blocks:
		return false
	}
	return true
}

// jsonDepth is how deeply JSON arrays and objects nest, by encoding/json.
func jsonDepth(src []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(src))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return deepest, true
		}
		if err != nil {
			return 0, false
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}
