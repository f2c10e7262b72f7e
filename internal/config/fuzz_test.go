package config_test

import (
	"errors"
	"sort"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		validManifest,
		"",
		"platforms = [\"linux_amd64\"]\nprovider \"hashicorp/aws\" { versions = \">= 1.0\" }\n",
		"provider \"hashicorp/aws\" {\n\tversion = 1\n}\n",
		"platforms = [\n  \"linux_amd64\",\n  \"LINUX\",\n]\n",
		"credentials \"café.fr\" { tokn = \"x\" }\n",
		"provider \"localhost:8443/a/b\" { newest = 0 }\n",
		"host \"x\" { services = { a = 1 } }\n",
		"platforms = [null]\nprovider \"a/b\" { newest = 1e100 }\n",
		"provider \"a/b\" { versions = \"${x}\" }\n",
		"provider \"a/b\" {\r\n  versions = \"v1\"\r\n}\r\n",
		"\xff\xfe{",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := config.Parse(src, "mirror.hcl")
		if err != nil {
			var cerr *config.Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error is %T, want *config.Error", err)
			}
			if len(cerr.Diags) == 0 {
				t.Fatalf("error without diagnostics")
			}
			_ = err.Error() // rendering must not panic either
			return
		}
		if !sort.SliceIsSorted(m.Requirements, func(i, j int) bool {
			return m.Requirements[i].Provider.LessThan(m.Requirements[j].Provider)
		}) {
			t.Fatalf("requirements not sorted")
		}
		for _, r := range m.Requirements {
			if len(r.Platforms) == 0 {
				t.Fatalf("%s has no platforms", r.Provider)
			}
			if r.Newest < 0 {
				t.Fatalf("%s has newest %d", r.Provider, r.Newest)
			}
		}
	})
}
