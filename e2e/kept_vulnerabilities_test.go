package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// TestKeptPackagesMatchedAgainstTheDatabase builds the vulnerable release
// and the scripts into a directory without a vulnerability database,
// with a signed catalog; then a no-op build with --vulndb (the real
// pinned database) and a policy that holds back: the packages it keeps
// are matched from the SBOMs the tree holds, reported "present" with
// their advisories (the policy's hold does not apply to what is
// published already), recorded in vulnerabilities.json with the database
// they were matched against, which catalog.json names by SHA-256 and
// verify --catalog-key checks. A second no-op build with the same
// database writes nothing; a vulnerabilities.json changed behind the
// signed catalog's back is a verification failure.
func TestKeptPackagesMatchedAgainstTheDatabase(t *testing.T) {
	ca := testca.New(t)
	f := newVulnFixture(t, ca)
	cfg := f.manifest(t, "mirror.hcl", "")
	hold := f.manifest(t, "hold.hcl", `
vulnerabilities "*" {
  action = "hold"
}
`)
	private, public := pgptest.New(t, "operator").WriteFiles(t, t.TempDir(), "operator")
	site := filepath.Join(f.work, "site")
	if stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", cfg, "--out", site, "--sign-key", private); code != 0 {
		t.Fatalf("build without a database: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(site, layout.VulnerabilitiesPath)); err == nil {
		t.Fatalf("a build without a database wrote %s", layout.VulnerabilitiesPath)
	}

	stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", hold, "--out", site, "--sign-key", private, "--vulndb", f.osv, "--json")
	if code != 0 {
		t.Fatalf("no-op build with --vulndb: exit %d\n%s\n%s", code, stdout, stderr)
	}
	kept := f.wantAdvisoriesReported(t, stdout, "present")
	checkRecordedVulnerabilities(t, f, site, kept)
	checkCatalogNamesVulnerabilities(t, site, 3)
	if stdout, stderr, code := runTfmirror(t, f.work, f.env, "verify", "--catalog-key", public, site); code != 0 {
		t.Fatalf("verify --catalog-key after the build with --vulndb: exit %d\n%s\n%s", code, stdout, stderr)
	}

	before := treeFiles(t, site)
	if stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", hold, "--out", site, "--sign-key", private, "--vulndb", f.osv); code != 0 {
		t.Fatalf("second no-op build with --vulndb: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for rel, was := range treeFiles(t, site) {
		if before[rel] != was {
			t.Errorf("the second no-op build with the same database rewrote %s", rel)
		}
	}

	vulns := filepath.Join(site, layout.VulnerabilitiesPath)
	var rec layout.Vulnerabilities
	data, err := os.ReadFile(vulns)
	if err != nil || json.Unmarshal(data, &rec) != nil {
		t.Fatalf("read %s: %v", vulns, err)
	}
	delete(rec.Packages, "registry.test/acme/vulnprobe 1.0.0 linux_amd64")
	data, _ = json.Marshal(rec)
	writeFile(t, vulns, string(data))
	stdout, stderr, code = runTfmirror(t, f.work, f.env, "verify", "--catalog-key", public, site)
	if code != 3 || !strings.Contains(stdout+stderr, layout.VulnerabilitiesPath) || !strings.Contains(stdout+stderr, "SHA-256") {
		t.Errorf("verify --catalog-key with %s changed: exit %d, want 3 naming it\n%s\n%s", layout.VulnerabilitiesPath, code, stdout, stderr)
	}
}

// checkCatalogNamesVulnerabilities: catalog.json names vulnerabilities.json
// by its SHA-256, with the database (how many records, their digest) and
// the count of vulnerable packages.
func checkCatalogNamesVulnerabilities(t *testing.T, site string, packages int) {
	t.Helper()
	vulns, err := os.ReadFile(filepath.Join(site, layout.VulnerabilitiesPath))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(site, layout.CatalogPath))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Vulnerabilities *struct {
			Path, SHA256 string
			Packages     int
			Database     *struct {
				Records int
				SHA256  string
			}
		}
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(vulns)
	ref := c.Vulnerabilities
	switch {
	case ref == nil:
		t.Fatalf("%s does not name %s:\n%s", layout.CatalogPath, layout.VulnerabilitiesPath, data)
	case ref.Path != layout.VulnerabilitiesPath || ref.SHA256 != hex.EncodeToString(sum[:]) || ref.Packages != packages:
		t.Errorf("%s names %+v; want %s, SHA-256 %x, %d packages", layout.CatalogPath, *ref, layout.VulnerabilitiesPath, sum, packages)
	case ref.Database == nil || ref.Database.Records < 4000 || len(ref.Database.SHA256) != 64:
		t.Errorf("%s names the database %+v; want the pinned database's records and digest", layout.CatalogPath, ref.Database)
	}
}

// treeFiles are the files of a tree (outside its private directory) by
// path, with their size and modification time.
func treeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == layout.PrivateDirName:
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fmt.Sprintf("%d %s", info.Size(), info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
