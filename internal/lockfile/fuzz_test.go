package lockfile

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts
// renders to text that parses again to the same locks and renders the same.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		header,
		header + `
provider "registry.opentofu.org/hashicorp/foo" {
  version     = "1.1.0"
  constraints = ">= 1.0.0, != 1.0.5, ~> 1.1"
  hashes = [
    "h1:sD6x+FB1yc56Ck+upU0x1ShaRxQ1swgMnm5lOgctWO4=",
    "zh:8d31157e7e18a7ded9f4995e57197cfc640ddae819349af3500729d9414303a6",
  ]
}
`,
		`provider "bücher.example/ns/foo" { version = "1.0.0-beta+x" }`,
		`provider "example.com:8443/a/b" {
  version = "2.0.0"
  constraints = "~> 1.0-beta, > 0.0.0"
  hashes = ["b:1", "a:${"$"}{x}", "b:1", "c:\u00e9\n"]
}
module "x" {}`,
		`provider "registry.opentofu.org/hashicorp/foo" { version = "1.0" }`,
		`provider "hashicorp/foo" {}`,
		`provider "a/b/c" { version = 1 }`,
		`doodad "x" {}`,
		`provider "a/b/c" { version = "20000000000000000000.0.0" }`,
		`provider "a/b/c" {
  version = "1.0.0"
  constraints = "> 99999999999999999999"
}`,
		`provider "a/b/c" {
  version = "1.0.0"
  hashes = [for h in [] : h]
}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse(src, "fuzz.hcl")
		if err != nil {
			if file != nil {
				t.Fatalf("Parse returned a file with error %v", err)
			}
			if err.Error() == "" {
				t.Fatalf("Parse returned an empty error")
			}
			return
		}
		out := file.Bytes()
		again, err := Parse(out, "fuzz.hcl")
		if err != nil {
			t.Fatalf("Parse(Bytes()) failed: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(unlisted(again), unlisted(file)) {
			t.Fatalf("round trip changed the locks: %#v became %#v", file.Sorted(), again.Sorted())
		}
		if out2 := again.Bytes(); !bytes.Equal(out, out2) {
			t.Fatalf("Bytes not stable:\n%s\nthen\n%s", out, out2)
		}
		if !strings.HasPrefix(string(out), header) {
			t.Fatalf("output lacks the header:\n%s", out)
		}
	})
}
