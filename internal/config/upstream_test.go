package config_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
)

// The block is read as OpenTofu's CLI configuration writes it, so it can
// be copied from there: ${hostname} in an OCI template included.
func TestProviderInstallation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mirror.hcl")
	writeFile(t, path, `
provider_installation {
  oci_mirror {
    repository_template = "registry.example.com/tf/${hostname}/${namespace}/${type}"
    include             = ["example.com/*/*"]
  }
  filesystem_mirror {
    path    = "vendor/providers"
    include = ["registry.opentofu.org/acme/*"]
  }
  network_mirror {
    url     = "https://mirror.example.com/providers/"
    exclude = ["registry.opentofu.org/hashicorp/aws"]
  }
  direct {}
}
`)
	m, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range m.Upstreams {
		got = append(got, u.Kind+" "+u.Location+" "+strings.Join(u.Include, ",")+" "+strings.Join(u.Exclude, ","))
	}
	want := []string{
		"oci_mirror oci://registry.example.com/tf/${hostname}/${namespace}/${type} example.com/*/* ",
		"filesystem_mirror " + filepath.Join(dir, "vendor/providers") + " registry.opentofu.org/acme/* ",
		"network_mirror https://mirror.example.com/providers/  registry.opentofu.org/hashicorp/aws",
		"direct   ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("upstreams\n%q\nwant\n%q", got, want)
	}
}

func TestProviderInstallationErrors(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"oci with a scheme":    {`oci_mirror { repository_template = "oci://r.example.com/${namespace}/${type}" }`, "without a scheme"},
		"filesystem as a URL":  {`filesystem_mirror { path = "https://example.com/" }`, "a filesystem_mirror's path takes a directory"},
		"two direct blocks":    {"direct {}\ndirect {}", "Duplicate direct block"},
		"bad pattern":          {`direct { include = ["hashicorp/aws"] }`, "want HOST/NAMESPACE/TYPE"},
		"wildcard then a name": {`direct { exclude = ["*/hashicorp/*"] }`, "may only be followed by more *"},
		"other variable":       {`oci_mirror { repository_template = "r.example.com/${version}" }`, "version"},
		"no location":          {`network_mirror {}`, "url"},
		"empty block":          {``, "No installation methods"},
		"unknown method":       {`dev_overrides {}`, "dev_overrides"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mirror.hcl")
			writeFile(t, path, "provider_installation {\n"+tc.text+"\n}\n")
			_, err := config.Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
