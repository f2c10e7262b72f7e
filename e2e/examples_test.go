package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleServerBlock is examples/nginx/tfmirror.conf with only its port,
// certificate and root replaced.
func exampleServerBlock(t *testing.T) serverBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "nginx", "tfmirror.conf"))
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	const include = "include /srv/tfmirror/replica/*.nginx.conf;"
	for _, s := range []string{"listen 443 ssl;", "/etc/ssl/mirror.example.com.pem", "/etc/ssl/mirror.example.com.key", "root /srv/tfmirror;", include} {
		if !strings.Contains(example, s) {
			t.Fatalf("the example no longer contains %q", s)
		}
	}
	return func(port int, certFile, keyFile, root string) string {
		return strings.NewReplacer(
			"listen 443 ssl;", fmt.Sprintf("listen 127.0.0.1:%d ssl;", port),
			"/etc/ssl/mirror.example.com.pem", nginxQuote(certFile),
			"/etc/ssl/mirror.example.com.key", nginxQuote(keyFile),
			"root /srv/tfmirror;", "root "+nginxQuote(root)+";",
			include, "include "+nginxQuote(filepath.Join(root, "replica", "*.nginx.conf"))+";",
		).Replace(example)
	}
}

// TestExampleNginxConfigServesAMirror installs through the example nginx
// configuration and checks what it promises.
func TestExampleNginxConfigServesAMirror(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	f := newFixture(t, mainFixturePackages, mainManifest)
	base := startNginxServer(t, f.site, f.ca, exampleServerBlock(t))

	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "~> 1.0"
    }
  }
}
`)
	cli := mirrorOnlyCLI(base)
	initThroughMirror(t, f, tofuBin(t), wd, cli, plat, map[string]pkgVersion{"registry.opentofu.org/hashicorp/foo": f.pkgs[1]})

	client := f.ca.Client()
	for path, want := range map[string]string{
		"registry.opentofu.org/hashicorp/foo/index.json":                                   "application/json no-cache",
		"registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip": "application/zip public, max-age=31536000, immutable",
		"registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_SHA256SUMS":      "text/plain public, max-age=31536000, immutable",
	} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type") + " " + resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, got, want)
		}
	}
	// What the example hides: a replica's nginx files, even under
	// /replica/, where ^~ stops the regex locations outside it.
	writeFile(t, filepath.Join(f.site, "replica", "planted.nginx.conf"), "# nginx's, not the mirror's\n")
	for _, path := range []string{"replica/planted.nginx.conf", ".tfmirror/lock"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	resp, err := client.Get(base + ".tfmirror/lock")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET .tfmirror/lock: %d, want 404", resp.StatusCode)
	}
}
