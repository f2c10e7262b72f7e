package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	appaudit "github.com/tfmirror/tfmirror/internal/app/audit"
	"github.com/tfmirror/tfmirror/internal/testutil/govulndb"
	"github.com/tfmirror/tfmirror/layout"
)

// tinyOSV writes a database of one record, an advisory of every Go
// standard library, and returns its directory.
func tinyOSV(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "GO-2099-0001.json"), []byte(`{"id":"GO-2099-0001","modified":"2099-01-01T00:00:00Z","published":"2099-01-01T00:00:00Z",
"affected":[{"package":{"name":"stdlib","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}`))
	return dir
}

func TestAuditFlagsBecomeOptions(t *testing.T) {
	var got appaudit.Options
	run := commands{audit: func(_ context.Context, o appaudit.Options) (*appaudit.Report, error) { got = o; return nil, nil }}
	if code := runWith(t, run, "audit", "s3://b/p/", "--vulndb", "https://vuln.go.dev", "--config", "m.hcl", "--retries", "2"); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if got.Mirror != "s3://b/p/" || got.Flags.VulnDB != "https://vuln.go.dev" || !got.Flags.ConfigSet || got.Flags.Net.Retries != 2 {
		t.Errorf("options: %+v", got)
	}
}

// audit of a mirror whose packages are shell scripts: each has an SBOM
// that says it has no build information (exit 0), from a directory and
// from an https:// mirror, with the database read from an https:// URL
// in vuln.go.dev's layout; a package whose provenance names no SBOM is
// reported without one; an SBOM that is not its package's fails the
// audit with exit 3, naming it.
func TestAuditOfAMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	served := filepath.Join(site, "served-vulndb") // served with the site
	govulndb.WriteServed(t, tinyOSV(t), served, nil)
	url := serveSite(t, &o, site, "application/json")
	for _, args := range [][]string{{site, "--vulndb", tinyOSV(t)}, {url, "--vulndb", url + "served-vulndb"}} {
		code, stdout, stderr := o.run(t, t.TempDir(), append([]string{"audit", "--json"}, args...)...)
		if code != ExitOK {
			t.Fatalf("audit %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		var s struct {
			Audited map[string]int `json:"audited"`
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.Audited["packages"] != 2 || s.Audited["no_build_information"] != 2 {
			t.Errorf("audit %v: summary %v (%v)", args, s.Audited, err)
		}
	}

	p, v := "registry.opentofu.org/hashicorp/foo", "1.0.0"
	prov := filepath.Join(site, filepath.FromSlash(layout.ProvenancePath(addrs.MustParseProvider(p), addrs.MustParseVersion(v))))
	data, err := os.ReadFile(prov)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["archives"].(map[string]any)["darwin_arm64"].(map[string]any), "sbom")
	data, _ = json.Marshal(doc)
	writeFile(t, prov, data)
	sbom := filepath.Join(site, "registry.opentofu.org/hashicorp/foo", "terraform-provider-foo_1.0.0_linux_amd64"+layout.SBOMSuffix)
	writeFile(t, sbom, []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":{"type":"application","name":"other","version":"9"}}}`))
	code, stdout, stderr := o.run(t, t.TempDir(), "audit", site, "--vulndb", tinyOSV(t))
	if code != ExitVerification || !strings.Contains(stdout, "no SBOM") || !strings.Contains(stdout+stderr, "bad SBOM") ||
		!strings.Contains(stdout+stderr, p+" "+v+" linux_amd64") || !strings.Contains(stdout+stderr, "not this package") {
		t.Errorf("audit of a mirror with a package without SBOM and a bad SBOM: exit %d, want %d\n%s%s", code, ExitVerification, stdout, stderr)
	}
}

// Bad input is exit 2, naming the database's location and never its
// credentials: no database, one that is not there, plain http, a bucket.
func TestAuditRefusesBadDatabases(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	for args, want := range map[string]string{
		"":                                     "audit needs a vulnerability database",
		"--vulndb /nonexistent/osv":            "/nonexistent/osv",
		"--vulndb http://user:s3cret@db.test/": "https:// only",
		"--vulndb s3://bucket/osv/":            "a directory, an OSV zip or an https:// URL",
		"--vulndb " + filepath.Join(site, "catalog.json"): "not a directory or a zip",
	} {
		code, stdout, stderr := o.run(t, t.TempDir(), append([]string{"audit", site}, strings.Fields(args)...)...)
		if code != ExitUsage || !strings.Contains(stderr, want) || strings.Contains(stdout+stderr, "s3cret") {
			t.Errorf("audit %s: exit %d, want %d saying %q\n%s%s", args, code, ExitUsage, want, stdout, stderr)
		}
	}
	if code, _, stderr := o.run(t, filepath.Dir(site), "build", "--vulndb", "/nonexistent/osv"); code != ExitUsage || !strings.Contains(stderr, "/nonexistent/osv") {
		t.Errorf("build with a database that is not there: exit %d\n%s", code, stderr)
	}
}

// The audit reads versions in parallel, and reports them in the mirror's
// order all the same: providers sorted, each one's versions as its
// index.json lists them, platforms sorted; twice the same.
func TestAuditReportsInOrder(t *testing.T) {
	o := newOrigin(t)
	types := []string{"zeta", "alpha", "mid"}
	var blocks []string
	for _, typ := range types {
		for minor := range 12 {
			o.reg.Add("hashicorp", typ, fmt.Sprintf("1.%d.0", minor), "linux_amd64", "darwin_arm64", "windows_amd64")
		}
		blocks = append(blocks, fmt.Sprintf("provider \"hashicorp/%s\" { versions = \">= 1.0.0\" }\n", typ))
	}
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]
`+strings.Join(blocks, "")+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	site := filepath.Join(dir, "site")
	var want []string
	for _, typ := range []string{"alpha", "mid", "zeta"} {
		minors := make([]string, 12)
		for i := range minors {
			minors[i] = fmt.Sprintf("1.%d.0", i)
		}
		slices.Sort(minors) // index.json's keys, in order
		for _, v := range minors {
			for _, plat := range []string{"darwin_arm64", "linux_amd64", "windows_amd64"} {
				want = append(want, "registry.opentofu.org/hashicorp/"+typ+" "+v+" "+plat)
			}
		}
	}
	for run := range 2 {
		code, stdout, stderr := o.run(t, t.TempDir(), "audit", "--json", site, "--vulndb", tinyOSV(t))
		if code != ExitOK {
			t.Fatalf("audit: exit %d\n%s%s", code, stdout, stderr)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var ev struct{ Event, Provider, Version, Platform string }
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Event == "audit" {
				got = append(got, ev.Provider+" "+ev.Version+" "+ev.Platform)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("audit %d reports the packages in the order\n%s\nwant\n%s", run+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
