package addrs

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProvider(t *testing.T) {
	tests := []struct {
		in string
		// want is "hostname/namespace/type" with the comparison (punycode)
		// hostname; display is String() with the Unicode hostname.
		want, display string
		port          bool
		wantErr       string
	}{
		// One part means hashicorp on the default registry (OpenTofu's
		// ParseProviderSourceString).
		{in: "aws", want: "registry.opentofu.org/hashicorp/aws"},
		{in: "AWS", want: "registry.opentofu.org/hashicorp/aws"},
		{in: "hashicorp/aws", want: "registry.opentofu.org/hashicorp/aws"},
		{in: "registry.opentofu.org/hashicorp/aws", want: "registry.opentofu.org/hashicorp/aws"},
		{in: "Registry.OpenTofu.org/HashiCorp/AWS", want: "registry.opentofu.org/hashicorp/aws"},
		{in: "registry.terraform.io/hashicorp/aws", want: "registry.terraform.io/hashicorp/aws"},
		{in: "integrations/github", want: "registry.opentofu.org/integrations/github"},
		{in: "google-beta", want: "registry.opentofu.org/hashicorp/google-beta"},
		{in: "hashicorp/terraform", want: "registry.opentofu.org/hashicorp/terraform"},
		{in: "example.com:443/a/b", want: "example.com/a/b"},
		{in: "localhost:8443/a/b", want: "localhost:8443/a/b", port: true},
		{in: "localhost:08443/a/b", want: "localhost:8443/a/b", port: true},
		{in: "bücher.example/ns/foo", want: "xn--bcher-kva.example/ns/foo", display: "bücher.example/ns/foo"},
		{in: "BÜCHER.example/ns/foo", want: "xn--bcher-kva.example/ns/foo", display: "bücher.example/ns/foo"},
		{in: "NS/Tÿpe", want: "registry.opentofu.org/ns/tÿpe"},
		{in: "a/" + strings.Repeat("x", 100), want: "registry.opentofu.org/a/" + strings.Repeat("x", 100)},

		{in: "", wantErr: "invalid provider address"},
		{in: "xn--bcher-kva.example/a/b", wantErr: "punycode"},
		{in: "terraform-provider-aws", wantErr: `prefix "terraform-`},
		{in: "hashicorp/terraform-provider-aws", wantErr: `prefix "terraform-provider-"`},
		{in: "hashicorp/terraform-aws", wantErr: `prefix "terraform-"`},
		{in: "hashicorp/opentofu-provider-aws", wantErr: `prefix "opentofu-provider-"`},
		{in: "a--b/c", wantErr: "consecutive dashes"},
		{in: "a/b--c", wantErr: "consecutive dashes"},
		{in: "-a/b", wantErr: "invalid provider address"},
		{in: "a/b-", wantErr: "invalid provider address"},
		{in: "_a/c", wantErr: "invalid provider namespace"}, // "a_b/c" is valid since Terraform 1.16: namespace_test.go
		{in: "a.b/c", wantErr: "dots are not allowed"},
		{in: "a/b/c/d", wantErr: "invalid provider address"},
		{in: "/a/b", wantErr: "invalid provider address"},
		{in: "a//b", wantErr: "invalid provider address"},
		{in: "a/b/", wantErr: "invalid provider address"},
		{in: "exa_mple.com/a/b", wantErr: "invalid provider address"},
		{in: "example..com/a/b", wantErr: "invalid provider address"},
		// Built-in providers are part of the CLI; there is nothing to mirror.
		{in: "terraform", wantErr: "built-in"},
		{in: "terraform.io/builtin/terraform", wantErr: "built-in"},
		// Legacy and unknown namespaces cannot be mirrored.
		{in: "-/aws", wantErr: "namespace"},
		{in: "registry.opentofu.org/-/aws", wantErr: "namespace"},
		{in: "example.com/-/aws", wantErr: "namespace"},
		{in: "?/aws", wantErr: "invalid provider address"},
		// Invalid UTF-8 would be replaced by U+FFFD inside tfaddr, giving an
		// address that does not parse again (found by FuzzParseProvider).
		{in: "\x80/0", wantErr: "not valid UTF-8"},
		{in: "a/\x80", wantErr: "not valid UTF-8"},
		{in: "ex\x80ample.com/a/b", wantErr: "not valid UTF-8"},
		{in: "\xff", wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParseProvider(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseProvider(%q) = %s, want error containing %q", tt.in, p, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseProvider(%q) error = %q, want it to contain %q", tt.in, err, tt.wantErr)
				}
				if !p.IsZero() {
					t.Errorf("ParseProvider(%q) returned %#v with an error, want the zero Provider", tt.in, p)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseProvider(%q): %v", tt.in, err)
			}
			got := string(p.Hostname) + "/" + p.Namespace + "/" + p.Type
			if got != tt.want {
				t.Errorf("ParseProvider(%q) = %s, want %s", tt.in, got, tt.want)
			}
			display := tt.display
			if display == "" {
				display = tt.want
			}
			if p.String() != display {
				t.Errorf("ParseProvider(%q).String() = %s, want %s", tt.in, p.String(), display)
			}
			if HasPort(p) != tt.port {
				t.Errorf("HasPort(%s) = %v, want %v", p, HasPort(p), tt.port)
			}
			// The normalized form parses to the same provider.
			again, err := ParseProvider(p.String())
			if err != nil {
				t.Fatalf("ParseProvider(%q) (re-parse): %v", p.String(), err)
			}
			if again != p {
				t.Errorf("re-parsing %s gave %#v, want %#v", p, again, p)
			}
		})
	}
}

func TestDefaultRegistryHost(t *testing.T) {
	if DefaultRegistryHost != Hostname("registry.opentofu.org") {
		t.Errorf("DefaultRegistryHost = %s, want registry.opentofu.org", DefaultRegistryHost)
	}
}

func TestParsePlatform(t *testing.T) {
	tests := []struct {
		in      string
		want    Platform
		wantErr bool
	}{
		{in: "linux_amd64", want: Platform{OS: "linux", Arch: "amd64"}},
		{in: "darwin_arm64", want: Platform{OS: "darwin", Arch: "arm64"}},
		{in: "windows_386", want: Platform{OS: "windows", Arch: "386"}},
		{in: "freebsd_arm", want: Platform{OS: "freebsd", Arch: "arm"}},
		{in: "solaris_amd64", want: Platform{OS: "solaris", Arch: "amd64"}},
		// Not checked against a list of known platforms, like OpenTofu.
		{in: "plan9_mips64le", want: Platform{OS: "plan9", Arch: "mips64le"}},
		{in: "a_b", want: Platform{OS: "a", Arch: "b"}},

		{in: "", wantErr: true},
		{in: "linux", wantErr: true},
		{in: "linux_amd_64", wantErr: true},
		{in: "Linux_amd64", wantErr: true},
		{in: "linux_AMD64", wantErr: true},
		{in: "_amd64", wantErr: true},
		{in: "linux_", wantErr: true},
		{in: "_", wantErr: true},
		{in: "linux-amd64", wantErr: true},
		{in: "linux/amd64", wantErr: true},
		{in: " linux_amd64", wantErr: true},
		{in: "linux_amd64 ", wantErr: true},
		{in: "linux_amd64\n", wantErr: true},
		{in: "linüx_amd64", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePlatform(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParsePlatform(%q) = %v, want error", tt.in, got)
				}
				if !strings.Contains(err.Error(), "os_arch") {
					t.Errorf("ParsePlatform(%q) error = %q, want it to explain os_arch", tt.in, err)
				}
				if got != (Platform{}) {
					t.Errorf("ParsePlatform(%q) returned %v with an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePlatform(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParsePlatform(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("ParsePlatform(%q).String() = %q", tt.in, got.String())
			}
		})
	}
}

func TestLessPlatform(t *testing.T) {
	var ps []Platform
	for _, s := range []string{"windows_amd64", "linux_arm64", "darwin_arm64", "linux_amd64", "darwin_amd64", "linux_386"} {
		p, err := ParsePlatform(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return LessPlatform(ps[i], ps[j]) })
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{"darwin_amd64", "darwin_arm64", "linux_386", "linux_amd64", "linux_arm64", "windows_amd64"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sorted platforms (-want +got):\n%s", diff)
	}
	a := Platform{OS: "linux", Arch: "amd64"}
	if LessPlatform(a, a) {
		t.Error("LessPlatform(a, a) = true, want false")
	}
}
