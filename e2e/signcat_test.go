package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
)

// A mirror built with --sign-key and served by nginx: verify
// --catalog-key passes, and lock --catalog-key writes the lock files the
// real "tofu providers lock" writes from the origin, without a single
// archive request (counted in nginx's access log), which tofu then
// accepts as they are.
func TestLockFromSignedCatalogMatchesTofu(t *testing.T) {
	tofu := tofuBin(t)
	fx := newMonorepoFixture(t)
	want := fx.tofuProvidersLocks(t)
	private, public := pgptest.New(t, "operator").WriteFiles(t, t.TempDir(), "operator")
	site, _ := fx.buildSite(t, "--sign-key", private)

	accessLog := filepath.Join(t.TempDir(), "access.log")
	makeTraversable(t, filepath.Dir(accessLog))
	base := startNginxServer(t, site, fx.ca, func(port int, certFile, keyFile, root string) string {
		block := defaultServerBlock(port, certFile, keyFile, root)
		return strings.Replace(block, "server {", "server {\n\t\taccess_log "+nginxQuote(accessLog)+";", 1)
	})
	if stdout, stderr, code := runTfmirror(t, fx.work, fx.env, "verify", "--catalog-key", public, base); code != 0 || !strings.Contains(stdout, " 0 problems") {
		t.Fatalf("verify --catalog-key %s: exit %d\n%s%s", base, code, stdout, stderr)
	}
	before := archiveRequests(t, accessLog)
	if before == 0 {
		t.Fatal("the access log shows no archive request, although verify read every archive")
	}

	copyDir := copyMonorepo(t)
	args := append([]string{"lock"}, monorepoRoots...)
	args = append(args, "--mirror", base, "--catalog-key", public)
	args = append(args, platformFlags("--platform")...)
	stdout, stderr, code := runTfmirror(t, copyDir, fx.env, args...)
	if code != 0 || strings.Contains(stdout+stderr, "downloading") {
		t.Fatalf("tfmirror lock --catalog-key: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := archiveRequests(t, accessLog) - before; n != 0 {
		t.Errorf("lock --catalog-key made %d archive requests", n)
	}
	for _, root := range monorepoRoots {
		got, err := os.ReadFile(filepath.Join(copyDir, root, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		compareLock(t, root+"/.terraform.lock.hcl from lock --catalog-key", want[root], got)
	}
	dir := filepath.Join(copyDir, "app-a")
	before2, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	fx.tofuInit(t, tofu, dir, mirrorOnlyCLI(base), "-lockfile=readonly")
	after, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil || string(after) != string(before2) {
		t.Errorf("tofu init -lockfile=readonly changed the lock file (%v):\n%s", err, lineDiff(string(before2), string(after)))
	}
}

// archiveRequests counts the requests for .zip files in an nginx access
// log.
func archiveRequests(t *testing.T, log string) int {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, ".zip ") {
			n++
		}
	}
	return n
}
