package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestTofuInstallsThroughTfmirrorServe serves the built mirror with
// "tfmirror serve" (with a certificate of the test CA) and installs from it
// with a network_mirror only.
func TestTofuInstallsThroughTfmirrorServe(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	f := newFixture(t, mainFixturePackages, mainManifest)
	_, certFile, keyFile := f.ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startTfmirror(t, f.work, f.env, "serve", f.site, "--listen", addr, "--cert", certFile, "--key", keyFile)
	waitForTLS(t, addr)

	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "~> 1.0"
    }
    baz = {
      source = "registry.test/acme/baz"
    }
  }
}
`)
	cli := mirrorOnlyCLI("https://" + addr + "/")
	initThroughMirror(t, f, tofuBin(t), wd, cli, plat, map[string]pkgVersion{
		"registry.opentofu.org/hashicorp/foo": f.pkgs[1],
		"registry.test/acme/baz":              f.pkgs[3],
	})
}

func waitForTLS(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only probing that the port answers
		if err == nil {
			_ = conn.Close()
			return
		}
	}
	t.Fatalf("nothing answered TLS on %s", addr)
}
