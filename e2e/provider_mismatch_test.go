package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestPassedProviderTypesMatchTofu passes provider configurations to a
// local module in every way the types can line up or not (declared or
// implied on either side, aliases, JSON, and OpenTofu's rule that the
// parent's declaration of the child's local name decides the parent's
// type) and requires "tfmirror check" to refuse exactly the configurations
// "tofu providers" (OpenTofu 1.12) refuses with "Provider type mismatch",
// naming the providers argument's entry.
func TestPassedProviderTypesMatchTofu(t *testing.T) {
	req := func(entries ...string) string {
		return "terraform {\n  required_providers {\n    " + strings.Join(entries, "\n    ") + "\n  }\n}\n"
	}
	call := func(passed string) string {
		return "module \"c\" {\n  source    = \"./c\"\n  providers = { " + passed + " }\n}\n"
	}
	cases := []struct {
		name, parent, child string
		json                bool
		mismatch            bool
	}{
		{"implied in the child", req(`myp = { source = "acme/one" }`) + call("p2 = myp"), `resource "p2_thing" "y" {}`, false, true},
		{"declared alike", req(`myp = { source = "acme/one" }`) + call("p2 = myp"), req(`p2 = { source = "acme/one" }`), false, false},
		{"implied alike, an alias passed", "provider \"aws\" {\n  alias = \"west\"\n}\n" + call("aws = aws.west"), `resource "aws_thing" "y" {}`, false, false},
		{"the parent's entry of the child's name decides", req(`myp = { source = "acme/one" }`, `p2 = { source = "acme/two" }`) + call("p2 = myp"), req(`p2 = { source = "acme/two" }`), false, false},
		{"declared apart", req(`myp = { source = "acme/one" }`) + call("p2 = myp"), req(`p2 = { source = "acme/two" }`), false, true},
		{"to an alias, alike", req(`myp = { source = "acme/one" }`) + call("p2.x = myp"), req(`p2 = { source = "acme/one", configuration_aliases = [p2.x] }`), false, false},
		{"to an alias, apart", req(`myp = { source = "acme/one" }`) + call("p2.x = myp"), req(`p2 = { source = "acme/two", configuration_aliases = [p2.x] }`), false, true},
		{"JSON", `{"terraform":{"required_providers":{"myp":{"source":"acme/one"}}},"module":{"c":{"source":"./c","providers":{"p2":"myp"}}}}`, `resource "p2_thing" "y" {}`, true, true},
		{"both implied, apart", call("aws = google"), `resource "aws_thing" "y" {}`, false, true},
	}
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), "platforms = [\"linux_amd64\"]\n")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(work, fmt.Sprintf("c%d", i))
			main := "main.tf"
			if tc.json {
				main = "main.tf.json"
			}
			writeFile(t, filepath.Join(dir, main), tc.parent)
			writeFile(t, filepath.Join(dir, "c", "main.tf"), tc.child)
			if out, err := runTofu(t, tofuBin(t), dir, "", nil, "get"); err != nil {
				t.Fatalf("tofu get: %v\n%s", err, out)
			}
			out, err := runTofu(t, tofuBin(t), dir, "", nil, "providers")
			if tofuRefused := err != nil && strings.Contains(out, "Provider type mismatch"); tofuRefused != tc.mismatch || (err != nil && !tofuRefused) {
				t.Fatalf("tofu providers: err %v, want a type mismatch: %v\n%s", err, tc.mismatch, out)
			}
			stdout, stderr, code := runTfmirror(t, work, nil, "check", "--config", "mirror.hcl", filepath.Base(dir))
			switch {
			case tc.mismatch && (code != 2 || !strings.Contains(stderr, main+":") || !strings.Contains(stderr, "Provider type mismatch")):
				t.Errorf("check: exit %d, want 2 naming %s and the mismatch, as tofu refuses it\n%s%s", code, main, stdout, stderr)
			case !tc.mismatch && code != 0:
				t.Errorf("check: exit %d, want 0, as tofu takes it\n%s%s", code, stdout, stderr)
			}
		})
	}
}
