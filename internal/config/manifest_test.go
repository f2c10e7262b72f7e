package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
)

const validManifest = `# Mirror for the platform team.
platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/aws" {
  versions = ">= 5.0.0, < 6.0.0"
  newest   = 2
}

provider "registry.opentofu.org/Integrations/GitHub" {
  versions  = "~> 6.0"
  platforms = ["windows_amd64"]
}

provider "example.com/acme/thing" {
  newest = 1
}

host "Example.COM" {
  services = {
    "providers.v1" = "https://registry.example.com/v1/providers/"
    "modules.v1"   = "/modules/"
  }
}

credentials "example.com" {
  token = "s3cret"
}

credentials "café.fr" { token = "t2" }
`

func mustParse(t *testing.T, src string) *config.Manifest {
	t.Helper()
	m, err := config.Parse([]byte(src), "mirror.hcl")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func platforms(ps ...string) []addrs.Platform {
	var out []addrs.Platform
	for _, s := range ps {
		p, err := addrs.ParsePlatform(s)
		if err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

func TestParseValidManifest(t *testing.T) {
	m := mustParse(t, validManifest)

	// Requirements come sorted by provider address (hostname, namespace, type).
	type req struct {
		Provider    string
		Constraints string
		Newest      int
		Platforms   []addrs.Platform
	}
	var got []req
	for _, r := range m.Requirements {
		got = append(got, req{r.Provider.String(), r.Constraints, r.Newest, r.Platforms})
	}
	want := []req{
		{"example.com/acme/thing", "", 1, platforms("linux_amd64", "darwin_arm64")},
		{"registry.opentofu.org/hashicorp/aws", ">= 5.0.0, < 6.0.0", 2, platforms("linux_amd64", "darwin_arm64")},
		{"registry.opentofu.org/integrations/github", "~> 6.0", 0, platforms("windows_amd64")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Requirements (-want +got):\n%s", diff)
	}

	// The version sets select what the constraints say.
	allowed := []struct {
		req     int
		version string
		want    bool
	}{
		{0, "0.0.1", true}, // no versions: every release
		{0, "9.9.9", true},
		{0, "1.0.0-beta1", false}, // but no prereleases
		{1, "5.0.0", true},
		{1, "5.99.1", true},
		{1, "4.67.0", false},
		{1, "6.0.0", false},
		{2, "6.0.0", true},
		{2, "6.5.1", true},
		{2, "7.0.0", false},
		{2, "5.9.0", false},
	}
	for _, a := range allowed {
		r := m.Requirements[a.req]
		if got := r.Allowed.Has(addrs.MustParseVersion(a.version)); got != a.want {
			t.Errorf("%s allows %s = %v, want %v", r.Provider, a.version, got, a.want)
		}
	}

	wantServices := map[addrs.Hostname]map[string]string{
		"example.com": {
			"providers.v1": "https://registry.example.com/v1/providers/",
			"modules.v1":   "/modules/",
		},
	}
	if diff := cmp.Diff(wantServices, m.Services); diff != "" {
		t.Errorf("Services (-want +got):\n%s", diff)
	}
	wantTokens := map[addrs.Hostname]string{
		"example.com":    "s3cret",
		"xn--caf-dma.fr": "t2",
	}
	if diff := cmp.Diff(wantTokens, m.Tokens); diff != "" {
		t.Errorf("Tokens (-want +got):\n%s", diff)
	}
}

func TestParseMinimalManifest(t *testing.T) {
	m := mustParse(t, `provider "HashiCorp/AWS" {
  platforms = ["linux_arm64"]
  versions  = "1.2.3"
}
`)
	if len(m.Requirements) != 1 {
		t.Fatalf("got %d requirements, want 1", len(m.Requirements))
	}
	r := m.Requirements[0]
	if got, want := r.Provider.String(), "registry.opentofu.org/hashicorp/aws"; got != want {
		t.Errorf("provider = %s, want %s", got, want)
	}
	if !r.Allowed.Has(addrs.MustParseVersion("1.2.3")) || r.Allowed.Has(addrs.MustParseVersion("1.2.4")) {
		t.Errorf("versions = \"1.2.3\" should allow exactly 1.2.3")
	}
	if r.Newest != 0 {
		t.Errorf("Newest = %d, want 0", r.Newest)
	}
	if len(m.Services) != 0 || len(m.Tokens) != 0 {
		t.Errorf("Services = %v, Tokens = %v, want both empty", m.Services, m.Tokens)
	}
	if m.Services == nil || m.Tokens == nil {
		t.Errorf("Services and Tokens should be empty maps, not nil")
	}
}

func TestParseAcceptsWhatOpenTofuAccepts(t *testing.T) {
	// The namespace may look like a repository name; only the type may not
	// carry the terraform-provider- prefix.
	m := mustParse(t, `platforms = ["linux_amd64"]
provider "terraform-provider-aws/x" { versions = ">= 1.0" }
provider "Example.COM/Acme/Thing" { newest = 3 }
provider "café.fr/acme/thing" { newest = 3 }
`)
	var got []string
	for _, r := range m.Requirements {
		p := r.Provider
		got = append(got, string(p.Hostname)+"/"+p.Namespace+"/"+p.Type)
	}
	// Sorted by the comparison (punycode) form of the hostname.
	want := []string{
		"example.com/acme/thing",
		"registry.opentofu.org/terraform-provider-aws/x",
		"xn--caf-dma.fr/acme/thing",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
}

func TestParsePlatformOverrideDoesNotLeak(t *testing.T) {
	// A provider's own platforms replace the defaults for it only.
	m := mustParse(t, `platforms = ["linux_amd64"]
provider "a/one" {
  versions  = ">= 1"
  platforms = ["darwin_arm64", "windows_amd64"]
}
provider "a/two" { versions = ">= 1" }
`)
	if diff := cmp.Diff(platforms("darwin_arm64", "windows_amd64"), m.Requirements[0].Platforms); diff != "" {
		t.Errorf("a/one platforms (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(platforms("linux_amd64"), m.Requirements[1].Platforms); diff != "" {
		t.Errorf("a/two platforms (-want +got):\n%s", diff)
	}
}

// at returns what Error renders for a problem at line:col of mirror.hcl:
// the position prefix, and the source line with width carets under it.
func at(line, col int) string {
	return fmt.Sprintf("mirror.hcl:%d:%d: ", line, col)
}

func marker(src string, col, width int) string {
	return "\n    " + src + "\n    " + strings.Repeat(" ", col-1) + strings.Repeat("^", width)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // substrings of the rendered error, in order
	}{
		{
			name: "HCL syntax error",
			src:  "platforms = [\"linux_amd64\",, \"darwin_arm64\"]\n",
			want: []string{
				at(1, 28) + "Invalid expression",
				marker(`platforms = ["linux_amd64",, "darwin_arm64"]`, 28, 1),
			},
		},
		{
			name: "empty versions",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = ""
}
`,
			want: []string{"mirror.hcl:3:14: Empty versions", `versions = ">= 0.0.0"`},
		},
		{
			name: "unclosed block",
			src:  "provider \"hashicorp/aws\" {\n  versions = \"1.0.0\"\n",
			want: []string{"mirror.hcl:1:26: Unclosed configuration block"},
		},
		{
			name: "unknown attribute in provider block",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  version = ">= 1.0"
}
`,
			want: []string{
				at(3, 3) + `Unsupported argument: An argument named "version" is not expected here.`,
				marker(`  version = ">= 1.0"`, 3, 7),
			},
		},
		{
			name: "unknown top-level attribute",
			src: `platforms = ["linux_amd64"]
newest = 1
provider "hashicorp/aws" { versions = ">= 1.0" }
`,
			want: []string{at(2, 1) + "Unsupported argument", marker(`newest = 1`, 1, 6)},
		},
		{
			name: "unknown top-level block",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
mirror "site" {
}
`,
			want: []string{
				at(3, 1) + `Unsupported block type: Blocks of type "mirror" are not expected here.`,
				marker(`mirror "site" {`, 1, 6),
			},
		},
		{
			name: "provider block without label",
			src: `platforms = ["linux_amd64"]
provider {
  versions = ">= 1.0"
}
`,
			want: []string{at(2, 10) + "Missing source for provider"},
		},
		{
			// OpenTofu rejects the "terraform-provider-" prefix on the type
			// (not the namespace: "terraform-provider-aws/x" is a valid
			// address with namespace terraform-provider-aws).
			name: "invalid provider address",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/terraform-provider-aws" { versions = ">= 1.0" }
`,
			want: []string{
				at(2, 10) + `Invalid provider: invalid provider address "hashicorp/terraform-provider-aws"`,
				`Did you mean "hashicorp/aws"?`,
				marker(`provider "hashicorp/terraform-provider-aws" { versions = ">= 1.0" }`, 10, 34),
			},
		},
		{
			name: "invalid characters in provider address",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws_v2" { versions = ">= 1.0" }
`,
			want: []string{
				at(2, 10) + `Invalid provider: invalid provider address "hashicorp/aws_v2"`,
				marker(`provider "hashicorp/aws_v2" { versions = ">= 1.0" }`, 10, 18),
			},
		},
		{
			name: "provider address with too many parts",
			src: `platforms = ["linux_amd64"]
provider "a/b/c/d" { versions = ">= 1.0" }
`,
			want: []string{at(2, 10) + `Invalid provider: invalid provider address "a/b/c/d"`},
		},
		{
			name: "builtin provider",
			src: `platforms = ["linux_amd64"]
provider "terraform.io/builtin/terraform" { versions = ">= 1.0" }
`,
			want: []string{at(2, 10) + "Invalid provider", "built-in providers"},
		},
		{
			name: "provider with a port",
			src: `platforms = ["linux_amd64"]

provider "localhost:8443/a/b" {
  versions = ">= 1.0"
}
`,
			want: []string{
				at(3, 10) + "Invalid provider: provider localhost:8443/a/b has a port in its hostname",
				"cannot install such providers through a network mirror",
				marker(`provider "localhost:8443/a/b" {`, 10, 20),
			},
		},
		{
			name: "duplicate provider",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
provider "hashicorp/aws" { versions = ">= 2.0" }
`,
			want: []string{
				at(3, 1) + "Duplicate provider block: Provider registry.opentofu.org/hashicorp/aws is already configured at mirror.hcl:2:1.",
				marker(`provider "hashicorp/aws" { versions = ">= 2.0" }`, 1, 24),
			},
		},
		{
			name: "duplicate provider after normalization",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
provider "registry.opentofu.org/HashiCorp/aws" {
  versions = ">= 2.0"
}
`,
			want: []string{
				at(3, 1) + "Duplicate provider block: Provider registry.opentofu.org/hashicorp/aws is already configured at mirror.hcl:2:1.",
				marker(`provider "registry.opentofu.org/HashiCorp/aws" {`, 1, 46),
			},
		},
		{
			name: "invalid version constraint with v prefix",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = "v1.0.0"
}
`,
			want: []string{
				at(3, 14) + `Invalid version constraint: invalid version constraint "v1.0.0"`,
				marker(`  versions = "v1.0.0"`, 14, 8),
			},
		},
		{
			name: "invalid version constraint syntax",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = ">= 1.0 <"
}
`,
			want: []string{at(3, 14) + "Invalid version constraint"},
		},
		{
			name: "version constraint that allows no version",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = ">= 3.0, < 2.0"
}
`,
			want: []string{at(3, 14) + `Version constraint allows no version: No version of registry.opentofu.org/hashicorp/aws can satisfy ">= 3.0, < 2.0"`},
		},
		{
			name: "versions is not a string",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = [">= 1.0"]
}
`,
			want: []string{at(3, 14) + `Invalid versions: versions is one string of constraints separated by commas, not a list: versions = ">= 1.0".`},
		},
		{
			name: "versions is an object",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = { min = "1.0" }
}
`,
			want: []string{at(3, 14) + "Unsuitable value type: Unsuitable value: string required"},
		},
		{
			name: "invalid platform",
			src: `platforms = ["linux_amd64", "Linux-AMD64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
`,
			want: []string{
				at(1, 29) + `Invalid platform: invalid platform "Linux-AMD64": must be os_arch, such as linux_amd64`,
				marker(`platforms = ["linux_amd64", "Linux-AMD64"]`, 29, 13),
			},
		},
		{
			name: "platform typo",
			src: `platforms = ["linux_amd64", "linux_amd46"]
provider "hashicorp/aws" { versions = ">= 1.0" }
`,
			want: []string{
				at(1, 29) + `Invalid platform: platform linux_amd46: unknown architecture "amd46"; did you mean linux_amd64?`,
			},
		},
		{
			name: "platform listed twice",
			src: `platforms = ["linux_amd64", "darwin_arm64", "linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
`,
			want: []string{
				at(1, 45) + `Invalid platform: platform linux_amd64 is listed twice (items 1 and 3); was another one meant?`,
			},
		},
		{
			name: "invalid platform in provider block",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions  = ">= 1.0"
  platforms = ["linux_amd64_v2"]
}
`,
			want: []string{
				at(4, 16) + `Invalid platform: invalid platform "linux_amd64_v2"`,
				marker(`  platforms = ["linux_amd64_v2"]`, 16, 16),
			},
		},
		{
			name: "platforms is a string",
			src: `platforms = "linux_amd64"
provider "hashicorp/aws" { versions = ">= 1.0" }
`,
			want: []string{at(1, 14) + "Unsuitable value type: Unsuitable value: list of string required"},
		},
		{
			name: "empty platforms list",
			src: `platforms = []
provider "hashicorp/aws" { versions = ">= 1.0" }
`,
			want: []string{
				at(1, 13) + "No platforms: The platforms list is empty.",
				marker(`platforms = []`, 13, 2),
			},
		},
		{
			name: "empty platforms list in provider block",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions  = ">= 1.0"
  platforms = []
}
`,
			want: []string{at(4, 15) + "No platforms: The platforms list is empty."},
		},
		{
			name: "provider without platforms anywhere",
			src: `provider "hashicorp/aws" {
  versions = ">= 1.0"
}
`,
			want: []string{
				at(1, 1) + "No platforms: Provider registry.opentofu.org/hashicorp/aws has no platforms",
				marker(`provider "hashicorp/aws" {`, 1, 24),
			},
		},
		{
			name: "missing versions and newest",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
}
`,
			want: []string{
				at(2, 1) + "Missing versions: Say which versions to mirror",
				marker(`provider "hashicorp/aws" {`, 1, 24),
			},
		},
		{
			name: "provider address as a URL",
			src: `platforms = ["linux_amd64"]
provider "https://registry.terraform.io/hashicorp/aws/" { newest = 1 }
`,
			want: []string{at(2, 10) + `Invalid provider: a provider address has no scheme: "registry.terraform.io/hashicorp/aws", as in required_providers.`},
		},
		{
			name: "module block naming a git source",
			src: `module "git::https://example.com/network.git?ref=v1.0.0" {
  versions = "1.0.0"
}
`,
			want: []string{at(1, 8) + `Invalid module: "git::https://example.com/network.git?ref=v1.0.0" is a module source, not a registry address`},
		},
		{
			name: "module constraint that allows no version",
			src: `module "terraform-aws-modules/vpc/aws" {
  versions = "~> 5.1, >= 6.0"
}
`,
			want: []string{at(2, 14) + `Invalid version constraint: version constraint "~> 5.1, >= 6.0" allows no version`},
		},
		{
			name: "module versions as a list",
			src: `module "terraform-aws-modules/vpc/aws" {
  versions = ["~> 5.0"]
}
`,
			want: []string{at(2, 14) + `Invalid versions: versions is one string of constraints separated by commas, not a list: versions = "~> 5.0".`},
		},
		{
			name: "newest = 0",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = ">= 1.0"
  newest   = 0
}
`,
			want: []string{
				at(4, 14) + "Invalid newest: newest must be a whole number of at least 1.",
				marker(`  newest   = 0`, 14, 1),
			},
		},
		{
			name: "newest negative",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  versions = ">= 1.0"
  newest   = -3
}
`,
			want: []string{at(4, 14) + "Invalid newest", marker(`  newest   = -3`, 14, 2)},
		},
		{
			name: "newest fractional",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  newest = 1.5
}
`,
			want: []string{at(3, 12) + "Unsuitable value type"},
		},
		{
			name: "duplicate host",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
host "example.com" {
  services = { "providers.v1" = "https://a.example.com/" }
}
host "EXAMPLE.com" {
  services = { "providers.v1" = "https://b.example.com/" }
}
`,
			want: []string{
				at(6, 1) + `Duplicate host block: host "example.com" is configured more than once.`,
				marker(`host "EXAMPLE.com" {`, 1, 18),
			},
		},
		{
			name: "invalid hostname label",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
host "not a host!" {
  services = { "providers.v1" = "https://a.example.com/" }
}
`,
			want: []string{
				at(3, 6) + `Invalid hostname: "not a host!" is not a valid hostname`,
				marker(`host "not a host!" {`, 6, 13),
			},
		},
		{
			name: "host without services",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
host "example.com" {
}
`,
			want: []string{at(3, 20) + `Missing required argument: The argument "services" is required`},
		},
		{
			name: "host services not a map",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
host "example.com" {
  services = ["https://a.example.com/"]
}
`,
			want: []string{at(4, 14) + "Unsuitable value type"},
		},
		{
			name: "host with an unknown argument",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
host "example.com" {
  services = {}
  token    = "x"
}
`,
			want: []string{at(5, 3) + `Unsupported argument: An argument named "token" is not expected here.`},
		},
		{
			name: "credentials token not a string",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
credentials "example.com" {
  token = ["x"]
}
`,
			want: []string{at(4, 11) + "Unsuitable value type"},
		},
		{
			name: "credentials without token",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
credentials "example.com" {
}
`,
			want: []string{
				at(3, 27) + `Missing token: The credentials block for "example.com" needs a token (or, with the token in a TF_TOKEN_ variable, for_locations_from alone).`,
				marker(`credentials "example.com" {`, 27, 1),
			},
		},
		{
			name: "credentials with invalid hostname",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
credentials "https://example.com" { token = "x" }
`,
			want: []string{at(3, 13) + "Invalid hostname"},
		},
		{
			name: "duplicate credentials",
			src: `platforms = ["linux_amd64"]
provider "hashicorp/aws" { versions = ">= 1.0" }
credentials "example.com" { token = "x" }
credentials "Example.com" { token = "y" }
`,
			want: []string{at(4, 1) + "Duplicate credentials block"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.src), "mirror.hcl")
			if err == nil {
				t.Fatalf("Parse succeeded, want an error")
			}
			var cerr *config.Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error is %T, want *config.Error", err)
			}
			assertInOrder(t, err.Error(), tt.want)
		})
	}
}

func assertInOrder(t *testing.T, msg string, want []string) {
	t.Helper()
	rest := msg
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("error does not contain (in order) %q\nfull error:\n%s", w, msg)
			return
		}
		rest = rest[i+len(w):]
	}
}

func TestParseReportsEveryError(t *testing.T) {
	src := `platforms = ["linux_amd64"]

provider "hashicorp/aws" {
  versions = "v1.0.0"
}

provider "localhost:8443/a/b" {
  versions = ">= 1.0"
}

provider "hashicorp/google" {
  versions  = ">= 1.0"
  platforms = ["bogus"]
}

host "bad host" {
  services = {}
}

credentials "example.com" {
}
`
	_, err := config.Parse([]byte(src), "mirror.hcl")
	var cerr *config.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("Parse error = %v, want *config.Error", err)
	}
	want := []string{
		at(4, 14) + "Invalid version constraint",
		at(7, 10) + "Invalid provider",
		at(13, 16) + "Invalid platform",
		at(16, 6) + "Invalid hostname",
		at(20, 27) + "Missing token",
	}
	assertInOrder(t, err.Error(), want)
	if len(cerr.Diags) != len(want) {
		t.Errorf("got %d diagnostics, want %d:\n%s", len(cerr.Diags), len(want), err)
	}
	// Each problem is its own paragraph: position line, source line, marker.
	if got := strings.Count(err.Error(), "\n"); got != 3*len(want)-1 {
		t.Errorf("error has %d newlines, want %d:\n%s", got, 3*len(want)-1, err)
	}
}

func TestParseNewestZeroWithoutVersions(t *testing.T) {
	_, err := config.Parse([]byte(`platforms = ["linux_amd64"]
provider "hashicorp/aws" {
  newest = 0
}
`), "mirror.hcl")
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	if !strings.Contains(err.Error(), at(3, 12)+"Invalid newest") {
		t.Errorf("error does not point at newest = 0:\n%s", err)
	}
}

func TestErrorMarkerKeepsTabs(t *testing.T) {
	src := "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/aws\" {\n\tversion = \">= 1.0\"\n}\n"
	_, err := config.Parse([]byte(src), "mirror.hcl")
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	want := at(3, 2) + "Unsupported argument"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error does not contain %q:\n%s", want, err)
	}
	if !strings.Contains(err.Error(), "\n    \tversion = \">= 1.0\"\n    \t^^^^^^^") {
		t.Errorf("marker does not line up under a tab-indented line:\n%s", err)
	}
}

func TestErrorMarkerAfterNonASCII(t *testing.T) {
	// Columns count characters, not bytes: the marker must sit under the
	// offending text even when multi-byte characters come before it.
	src := "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/aws\" { versions = \">= 1.0\" }\ncredentials \"café.fr\" { tokn = \"x\" }\n"
	_, err := config.Parse([]byte(src), "mirror.hcl")
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	want := at(3, 25) + "Unsupported argument"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error does not contain %q:\n%s", want, err)
	}
	if w := marker(`credentials "café.fr" { tokn = "x" }`, 25, 4); !strings.Contains(err.Error(), w) {
		t.Errorf("marker is misplaced; want%s\ngot:\n%s", w, err)
	}
}

func TestErrorMarkerCountsCharacters(t *testing.T) {
	// One caret per character of the offending text, not per byte.
	src := "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/aws\" { versions = \"≥ 1.0\" }\n"
	_, err := config.Parse([]byte(src), "mirror.hcl")
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	assertInOrder(t, err.Error(), []string{
		at(2, 39) + "Invalid version constraint",
		marker(`provider "hashicorp/aws" { versions = "≥ 1.0" }`, 39, 7),
	})
}

func TestErrorMarkerMultiLineRange(t *testing.T) {
	// A range that spans lines is underlined to the end of its first line.
	src := `platforms = [
  # none yet
]
provider "hashicorp/aws" { versions = ">= 1.0" }
`
	_, err := config.Parse([]byte(src), "mirror.hcl")
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	assertInOrder(t, err.Error(), []string{at(1, 13) + "No platforms", marker("platforms = [", 13, 1)})
}

func TestErrorMarkerWithCRLF(t *testing.T) {
	src := "platforms = [\"linux_amd64\"]\r\nprovider \"hashicorp/aws\" {\r\n  versions = \"v2\"\r\n}\r\n"
	_, err := config.Parse([]byte(src), "mirror.hcl")
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	assertInOrder(t, err.Error(), []string{at(3, 14) + "Invalid version constraint", marker(`  versions = "v2"`, 14, 4)})
	if strings.Contains(err.Error(), "\r") {
		t.Errorf("error contains a carriage return: %q", err)
	}
}

func TestErrorWithoutSubject(t *testing.T) {
	// Diagnostics without a position render as just their message.
	err := &config.Error{Diags: nil}
	if err.Error() != "" {
		t.Errorf("empty Error() = %q", err.Error())
	}
}

func TestLoad(t *testing.T) {
	m, err := config.Load(filepath.Join("testdata", "mirror.hcl"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(m.Requirements) != 1 || m.Requirements[0].Provider.String() != "registry.opentofu.org/hashicorp/aws" {
		t.Errorf("Requirements = %+v", m.Requirements)
	}
}

func TestLoadErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.hcl")
	writeFile(t, path, "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/aws\" {}\n")
	_, err := config.Load(path)
	if err == nil {
		t.Fatal("Load succeeded, want an error")
	}
	if want := path + ":2:1: Missing versions"; !strings.Contains(err.Error(), want) {
		t.Errorf("error does not contain %q:\n%s", want, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := config.Load(filepath.Join(t.TempDir(), "nope.hcl"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load error = %v, want one wrapping fs.ErrNotExist", err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestManifestWithoutProvidersIsValid(t *testing.T) {
	// Providers may come from configurations named on the command line.
	m, err := config.Parse([]byte(`platforms = ["linux_amd64"]`+"\n"), "mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Requirements) != 0 || len(m.Platforms) != 1 {
		t.Errorf("requirements %v, platforms %v", m.Requirements, m.Platforms)
	}
}

func TestConfigurationBlocks(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"live/app-a", "live/app-b", "live/notes.txt.d", "live/.terraform", "live/.hidden/x", "modules/x"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "live", "README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := `configuration "live/app-*" {}
configuration "live/*" {}
configuration "modules/x" {}
configuration "live/.hid*/x" {}
`
	m, err := config.Parse([]byte(src), filepath.Join(dir, "mirror.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, c := range m.Configurations {
		r, err := filepath.Rel(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, filepath.ToSlash(r))
	}
	want := []string{"live/.hidden/x", "live/app-a", "live/app-b", "live/notes.txt.d", "modules/x"}
	if !slices.Equal(rel, want) {
		t.Errorf("configurations = %q, want %q (directories only, deduplicated, sorted; a wildcard skips names with a leading dot, as the shell does)", rel, want)
	}
	_, err = config.Parse([]byte(`configuration "nope-*" {}`), filepath.Join(dir, "mirror.hcl"))
	if err == nil || !strings.Contains(err.Error(), "mirror.hcl:1:15: No configuration found") {
		t.Errorf("a glob matching nothing: err = %v", err)
	}
}

// A top-level platforms list that cannot be read is that list's error
// alone: the provider blocks that rely on it are not also said to have no
// platforms.
func TestTopLevelPlatformErrorIsSaidOnce(t *testing.T) {
	for _, list := range []string{`["linux_amd64", "linux_amd64"]`, `["Linux_amd64"]`} {
		_, err := config.Parse([]byte("platforms = "+list+"\nprovider \"hashicorp/foo\" { versions = \">= 1.0.0\" }\n"), "mirror.hcl")
		if err == nil || !strings.Contains(err.Error(), "Invalid platform") || strings.Contains(err.Error(), "No platforms") {
			t.Errorf("platforms = %s: %v; want the invalid platform alone", list, err)
		}
	}
}
