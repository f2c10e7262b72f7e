package addrs

import "testing"

func TestSplitModuleSubdir(t *testing.T) {
	tests := []struct{ in, src, subdir string }{
		{"https://h/r.zip", "https://h/r.zip", ""},
		{"https://h/r.zip//a/b", "https://h/r.zip", "a/b"},
		{"https://h/r.git//a?ref=v1", "https://h/r.git?ref=v1", "a"},
		{"https://h/r.git?ref=v1//x", "https://h/r.git?ref=v1//x", ""},
		{"https://h//a//b", "https://h", "a//b"},
		{"git::https://h/r.git//m?ref=v2", "git::https://h/r.git?ref=v2", "m"},
	}
	for _, tc := range tests {
		src, subdir := SplitModuleSubdir(tc.in)
		if src != tc.src || subdir != tc.subdir {
			t.Errorf("SplitModuleSubdir(%q) = %q, %q; want %q, %q", tc.in, src, subdir, tc.src, tc.subdir)
		}
	}
}

// The strings OpenTofu 1.12 writes as a module's Source in
// .terraform/modules/modules.json for these calls (its addrs.ModuleSource
// String), where they can be told without go-getter's detectors.
func TestRecordedModuleSource(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"acme/net/aws", "registry.opentofu.org/acme/net/aws", true},
		{"registry.terraform.io/acme/net/aws//modules/x", "registry.terraform.io/acme/net/aws//modules/x", true},
		{"git::https://example.com/net.git?ref=v1", "git::https://example.com/net.git?ref=v1", true},
		{"git::https://example.com/net.git//sub/./x?ref=v1", "git::https://example.com/net.git//sub/x?ref=v1", true},
		{"https://example.com/m.zip//a", "https://example.com/m.zip//a", true},
		{"s3::https://s3.amazonaws.com/b/m.zip", "s3::https://s3.amazonaws.com/b/m.zip", true},
		{"github.com/acme/net", "", false},
		{"git@github.com:acme/net.git", "", false},
		{"/abs/path", "", false},
	}
	for _, tc := range tests {
		got, ok := RecordedModuleSource(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RecordedModuleSource(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// Terraform records a registry module named without a host under its own
// default registry; the call is the same one.
func TestSameRecordedModuleSource(t *testing.T) {
	tests := []struct {
		raw, recorded string
		same, ok      bool
	}{
		{"acme/net/aws", "registry.opentofu.org/acme/net/aws", true, true},
		{"acme/net/aws", "registry.terraform.io/acme/net/aws", true, true},
		{"acme/net/aws//sub", "registry.terraform.io/acme/net/aws//sub", true, true},
		{"registry.opentofu.org/acme/net/aws", "registry.terraform.io/acme/net/aws", false, true},
		{"acme/net/aws", "registry.example.com/acme/net/aws", false, true},
		{"git::https://example.com/n.git?ref=v2", "git::https://example.com/n.git?ref=v1", false, true},
		{"github.com/acme/net", "git::https://github.com/acme/net.git", false, false},
	}
	for _, tc := range tests {
		same, ok := SameRecordedModuleSource(tc.raw, tc.recorded)
		if same != tc.same || ok != tc.ok {
			t.Errorf("SameRecordedModuleSource(%q, %q) = %v, %v; want %v, %v", tc.raw, tc.recorded, same, ok, tc.same, tc.ok)
		}
	}
}
