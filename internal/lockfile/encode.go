package lockfile

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfmirror/tfmirror/hashing"
)

// headerLines open every lock file OpenTofu writes.
var headerLines = []string{
	"# This file is maintained automatically by \"tofu init\".\n",
	"# Manual edits may be lost in future updates.\n",
}

// Bytes renders f exactly as OpenTofu 1.12 writes a lock file: the header,
// then for each provider in Sorted order a blank line and a provider block
// with version, constraints (only when non-empty) and hashes (only when
// there are any, sorted and de-duplicated, one per line). hclwrite lays it
// out, so "=" signs of adjacent one-line attributes are aligned as OpenTofu
// aligns them. An empty file is the two header lines only.
//
// Bytes writes Constraints as given; Write refuses a result OpenTofu could
// not read back. Every lock must have a non-zero Provider.
func (f *File) Bytes() []byte {
	out := hclwrite.NewEmptyFile()
	body := out.Body()
	for _, line := range headerLines {
		body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(line)}})
	}
	for _, l := range f.Sorted() {
		body.AppendNewline()
		b := body.AppendNewBlock("provider", []string{l.Provider.String()}).Body()
		b.SetAttributeValue("version", cty.StringVal(l.Version.String()))
		if l.Constraints != "" {
			b.SetAttributeValue("constraints", cty.StringVal(l.Constraints))
		}
		if hs := normalizeHashes(l.Hashes); len(hs) > 0 {
			b.SetAttributeRaw("hashes", hashListTokens(hs))
		}
	}
	return out.Bytes()
}

// hashListTokens lays a hash list out one element per line, each followed
// by a comma, whatever hclwrite would choose for a list value.
func hashListTokens(hs []hashing.Hash) hclwrite.Tokens {
	toks := hclwrite.Tokens{
		{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")},
		{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")},
	}
	for _, h := range hs {
		toks = append(toks, hclwrite.TokensForValue(cty.StringVal(string(h)))...)
		toks = append(toks,
			&hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")},
			&hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")},
		)
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
}
