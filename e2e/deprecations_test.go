package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestDeprecationsCarriedThrough: the warnings an origin's versions list
// gives of a provider reach a build's JSON events, the catalog page (read
// by headless Chromium) and the registry replica, through which real
// tofu and Terraform print them at init as they do from the origin.
func TestDeprecationsCarriedThrough(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	tofu := tofuBin(t)
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.Add("hashicorp", "foo", "1.0.0", plat)
	const warning = "This provider is deprecated: use acme/foo <from 2.0>."
	reg.SetWarnings("hashicorp", "foo", warning)
	env := caFileEnv(t, ca)
	work := t.TempDir()
	site := filepath.Join(work, "site")
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = [%q]
provider "hashicorp/foo" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, plat, reg.ServicesURL))
	stdout, stderr, code := runTfmirror(t, work, env, "build", "--registry-replica", "--json")
	if code != 0 {
		t.Fatalf("build: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var events int
	for line := range strings.SplitSeq(stdout, "\n") {
		var ev struct {
			Event    string   `json:"event"`
			Provider string   `json:"provider"`
			Warnings []string `json:"warnings"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "deprecation" {
			events++
			if ev.Provider != "registry.opentofu.org/hashicorp/foo" || len(ev.Warnings) != 1 || ev.Warnings[0] != warning {
				t.Errorf("deprecation event %s", line)
			}
		}
	}
	if events != 1 {
		t.Errorf("%d deprecation events, want 1\n%s", events, stdout)
	}

	base := startNginx(t, site, ca)
	for _, client := range []struct{ name, bin string }{{"tofu", tofu}, {"terraform", ""}} {
		t.Run(client.name+" through the replica", func(t *testing.T) {
			bin := client.bin
			if bin == "" {
				bin = terraformBin(t)
			}
			initPrintsWarning(t, reg, bin, base, env, warning)
		})
	}

	// Into the air gap: the imported mirror's replica, made there, says
	// what the origin said.
	t.Run("through a bundle", func(t *testing.T) {
		bundle := filepath.Join(work, "b.tar.gz")
		gapped := filepath.Join(t.TempDir(), "site")
		for _, args := range [][]string{{"bundle", "create", site, "--out", bundle}, {"bundle", "import", bundle, "--out", gapped}, {"replica", gapped}} {
			if stdout, stderr, code := runTfmirror(t, work, env, args...); code != 0 {
				t.Fatalf("%s: exit %d\n%s\n%s", args[:2], code, stdout, stderr)
			}
		}
		initPrintsWarning(t, reg, tofu, startNginx(t, gapped, ca), env, warning)
	})

	// A mirror of the mirror, over HTTP: the served mirror's catalog
	// says what the origin warned of.
	t.Run("through a mirror of the mirror", func(t *testing.T) {
		second := filepath.Join(t.TempDir(), "site")
		if stdout, stderr, code := runTfmirror(t, work, env, "build", "--from", base, "--out", second, "--registry-replica"); code != 0 {
			t.Fatalf("build --from %s: exit %d\n%s\n%s", base, code, stdout, stderr)
		}
		initPrintsWarning(t, reg, tofu, startNginx(t, second, ca), env, warning)
	})

	t.Run("the page in chromium", func(t *testing.T) {
		chromium := chromiumBin(t)
		pageURL := (&url.URL{Scheme: "file", Path: filepath.Join(site, htmlcatalog.Path)}).String()
		got := openInChromium(t, chromium, pageURL)
		if len(got.console) > 0 {
			t.Errorf("chromium logged to the console:\n%s", strings.Join(got.console, "\n"))
		}
		w := findByAttr(got.dom, "class", "warning")
		if w == nil || domText(w) != warning {
			t.Errorf("the page shows no warning %q", warning)
		}
		signer := findByAttr(got.dom, "data-key", reg.KeyID)
		if signer == nil || !strings.Contains(domText(signer), "first key") {
			t.Errorf("the page does not list key %s as foo's first key", reg.KeyID)
		}
	})
}

// initPrintsWarning runs bin init against the registry replica under
// base, without a request to the origin reg, and requires it to print
// warning as the origin's.
func initPrintsWarning(t *testing.T, reg *fakeregistry.Registry, bin, base string, env []string, warning string) {
	t.Helper()
	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = { source = "registry.opentofu.org/hashicorp/foo", version = "1.0.0" }
  }
}
`)
	before := len(reg.Requests())
	out, err := runTofu(t, bin, wd, hostCLI(base+"replica/registry.opentofu.org/v1/providers/"), env, "init", "-input=false")
	if err != nil {
		t.Fatalf("%s init from the replica: %v\n%s", filepath.Base(bin), err, out)
	}
	if reqs := reg.Requests(); len(reqs) != before {
		t.Errorf("the origin was contacted during init from the replica: %q", reqs[before:])
	}
	for _, want := range []string{"Additional provider information from registry", "- " + warning} {
		if !strings.Contains(out, want) {
			t.Errorf("%s init through the replica does not print %q\n%s", filepath.Base(bin), want, out)
		}
	}
}
