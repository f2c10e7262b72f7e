package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestUpstreamMirrorRequiringClientCertificate builds from a network
// mirror behind an nginx that requires client certificates (mutual TLS):
// without a client_certificate block the build fails naming the mirror;
// with one for the mirror's host it builds, checking the signatures the
// mirror kept.
func TestUpstreamMirrorRequiringClientCertificate(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	env := caFileEnv(t, ca)
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, reg.ServicesURL))
	if stdout, stderr, code := runTfmirror(t, work, env, "build", "--out", "upstream"); code != 0 {
		t.Fatalf("build the upstream: exit %d\n%s%s", code, stdout, stderr)
	}
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	base := startNginxServer(t, filepath.Join(work, "upstream"), ca, func(port int, certFile, keyFile, root string) string {
		return strings.Replace(defaultServerBlock(port, certFile, keyFile, root), "root ",
			"ssl_verify_client on;\n\t\tssl_client_certificate "+nginxQuote(caFile)+";\n\t\troot ", 1)
	})
	certFile, keyFile := ca.WriteClientFiles(t, t.TempDir(), "builder")

	manifest := fmt.Sprintf(`platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider_installation {
  network_mirror {
    url = %q
  }
}
`, base)
	writeFile(t, filepath.Join(work, "mirror.hcl"), manifest)
	stdout, stderr, code := runTfmirror(t, work, env, "build", "--out", "site")
	if code == 0 || !strings.Contains(stdout+stderr, "network_mirror "+base) || !strings.Contains(stdout+stderr, "client_certificate") {
		t.Fatalf("build without a client certificate: exit %d, want a failure naming the mirror\n%s%s", code, stdout, stderr)
	}
	writeFile(t, filepath.Join(work, "mirror.hcl"), manifest+fmt.Sprintf(`
client_certificate "127.0.0.1" {
  cert_file = %q
  key_file  = %q
}
`, certFile, keyFile))
	stdout, stderr, code = runTfmirror(t, work, env, "build", "--out", "site")
	if code != 0 || !strings.Contains(stdout, "signed by "+reg.KeyID) {
		t.Fatalf("build with the client certificate: exit %d, want 0 and the origin's signature checked\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "site", "registry.opentofu.org", "hashicorp", "foo", "1.0.0.json")); err != nil {
		t.Error(err)
	}

	// A key that is not the certificate's is bad input naming the host.
	_, otherKey := ca.WriteClientFiles(t, t.TempDir(), "other")
	writeFile(t, filepath.Join(work, "mirror.hcl"), manifest+fmt.Sprintf("client_certificate \"127.0.0.1\" {\n  cert_file = %q\n  key_file  = %q\n}\n", certFile, otherKey))
	if stdout, stderr, code := runTfmirror(t, work, env, "build", "--out", "site"); code != 2 || !strings.Contains(stderr, `client_certificate "127.0.0.1"`) {
		t.Errorf("a mismatched key: exit %d, want 2 naming the host\n%s%s", code, stdout, stderr)
	}
}
