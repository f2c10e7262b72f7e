package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/goprovider"
	"github.com/tfmirror/tfmirror/internal/testutil/govulndb"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// vulnFixture is a registry serving goprovider.Vulnerable as
// registry.test/acme/vulnprobe 1.0.0 (real Go programs for three
// platforms, one stripped, with a vulnerable golang.org/x/text) and a
// release of shell scripts as registry.test/acme/script 1.0.0.
type vulnFixture struct {
	work, osv string
	rel       *goprovider.Release
	env       []string
	services  string
}

func newVulnFixture(t *testing.T, ca *testca.CA) *vulnFixture {
	t.Helper()
	f := &vulnFixture{work: t.TempDir(), osv: govulndb.OSVDir(t), rel: goprovider.Build(t, goprovider.Vulnerable("vulnprobe", "1.0.0"))}
	reg := fakeregistry.New(t, ca)
	reg.AddArchives("acme", "vulnprobe", "1.0.0", f.rel.Archives)
	reg.Add("acme", "script", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")
	f.env, f.services = caFileEnv(t, ca), reg.ServicesURL
	return f
}

// manifest writes mirror.hcl with extra (vulnerabilities blocks) and
// returns its name.
func (f *vulnFixture) manifest(t *testing.T, name, extra string) string {
	t.Helper()
	writeFile(t, filepath.Join(f.work, name), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "registry.test/acme/vulnprobe" {
  versions = "1.0.0"
}

provider "registry.test/acme/script" {
  versions = "1.0.0"
}

host "registry.test" {
  services = { "providers.v1" = %q }
}
%s`, f.services, extra))
	return name
}

// jsonEvents are the --json lines of stdout whose event is kind.
func jsonEvents(t *testing.T, stdout, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ev["event"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

// reportOf is a package's advisories as events give them: by
// "provider version platform", "status: id(fixed) ...".
func reportOf(events []map[string]any) map[string]string {
	out := map[string]string{}
	for _, ev := range events {
		var ids []string
		advs, _ := ev["advisories"].([]any)
		for _, a := range advs {
			a := a.(map[string]any)
			ids = append(ids, fmt.Sprintf("%s %s@%s(fixed %v)", a["id"], a["module"], a["found"], a["fixed"]))
		}
		out[fmt.Sprintf("%s %s %s", ev["provider"], ev["version"], ev["platform"])] = fmt.Sprintf("%s: %s", ev["status"], strings.Join(ids, " "))
	}
	return out
}

// wantAdvisoriesReported checks that the package events of a build's
// --json output (stdout) give every package of the vulnerable release
// every advisory of the vulnerable module, with its fix, and the status
// given ("" for any); it returns those events as reportOf reads them.
func (f *vulnFixture) wantAdvisoriesReported(t *testing.T, stdout, status string) map[string]string {
	t.Helper()
	report := reportOf(jsonEvents(t, stdout, "package"))
	for _, target := range f.rel.Spec.Targets {
		got := report["registry.test/acme/vulnprobe 1.0.0 "+target.Platform]
		for id, fixed := range goprovider.VulnerableAdvisories {
			want := fmt.Sprintf("%s %s@%s(fixed %s)", id, goprovider.VulnerableModule.Path, goprovider.VulnerableModule.Version, fixed)
			if (status != "" && !strings.HasPrefix(got, status+": ")) || !strings.Contains(got, want) {
				t.Errorf("%s: the build reports %q; want %q in it, status %q", target.Platform, got, want, status)
			}
		}
	}
	return report
}

// TestVulnerabilityReportInBuildAndAudit builds the vulnerable release
// and a release of shell scripts with --vulndb (the real pinned Go
// database) into a directory, a bucket (versitygw) and a registry
// (docker-registry) at once: each vulnerable package's JSON event names
// the vulnerable module's advisories with their fixes, the summary
// counts them. Then tfmirror audit on each of the three, and on the
// directory served by nginx, gives the same report, the build's
// advisories, with the scripts as "no build information", exit 1 (a
// finding, no policy), and never reads an archive (the registry's log has
// no request for an archive's blob, nginx's none for a zip); a policy that
// only warns exits 0.
func TestVulnerabilityReportInBuildAndAudit(t *testing.T) {
	ca := testca.New(t)
	f := newVulnFixture(t, ca)
	cfg := f.manifest(t, "mirror.hcl", "")
	s3 := s3test.Start(t)
	s3.CreateBucket(t, s3Bucket)
	oci := registrytest.StartWith(t, registrytest.Options{CA: ca})
	template := "oci://" + oci.Host + "/mirror/${hostname}/${namespace}/${type}"
	env := mergeEnv(f.env, s3.Environ(), []string{"DOCKER_CONFIG=" + oci.DockerConfigDir})
	site, bucket := filepath.Join(f.work, "site"), s3.URI(s3Bucket, s3Prefix)

	stdout, stderr, code := runTfmirror(t, f.work, env, "build", "--config", cfg, "--out", site, "--out", bucket, "--out", template, "--vulndb", f.osv, "--json")
	if code != 0 {
		t.Fatalf("build: exit %d\n%s\n%s", code, stdout, stderr)
	}
	built := f.wantAdvisoriesReported(t, stdout, "")
	var summary struct {
		Vulnerabilities struct {
			Database             string
			Packages, Advisories int
		}
	}
	if err := json.Unmarshal(summaryOf(stdout), &summary); err != nil || summary.Vulnerabilities.Packages != 3 || summary.Vulnerabilities.Advisories < 2 || summary.Vulnerabilities.Database != f.osv {
		t.Errorf("build summary's vulnerabilities: %+v (%v)", summary.Vulnerabilities, err)
	}

	checkRecordedVulnerabilities(t, f, site, built)

	accessLog := filepath.Join(t.TempDir(), "access.log")
	served := startNginxServer(t, site, ca, func(port int, certFile, keyFile, root string) string {
		block := defaultServerBlock(port, certFile, keyFile, root)
		return strings.Replace(block, "autoindex off;", "autoindex off;\n\t\taccess_log "+nginxQuote(accessLog)+";", 1)
	})
	before := len(oci.Requests(t))
	var reports []map[string]string
	for _, loc := range []string{site, bucket, template, served} {
		stdout, stderr, code := runTfmirror(t, f.work, env, "audit", loc, "--config", cfg, "--vulndb", f.osv, "--json")
		if code != 1 {
			t.Fatalf("audit %s: exit %d, want 1 (findings, no policy)\n%s\n%s", loc, code, stdout, stderr)
		}
		reports = append(reports, reportOf(jsonEvents(t, stdout, "audit")))
	}
	for i, loc := range []string{"the bucket", "the registry", "the https:// mirror"} {
		if !maps.Equal(reports[0], reports[i+1]) {
			t.Errorf("audit of %s differs from the directory's:\n%v\n%v", loc, reports[i+1], reports[0])
		}
	}
	for pkg, line := range reports[0] {
		switch {
		case strings.HasPrefix(pkg, "registry.test/acme/script "):
			if line != "no_build_information: " {
				t.Errorf("audit: %s: %q, want no build information", pkg, line)
			}
		case line != strings.Replace(built[pkg], "mirrored:", "vulnerable:", 1):
			t.Errorf("audit: %s: %q; the build reported %q", pkg, line, built[pkg])
		}
	}
	if len(reports[0]) != 6 {
		t.Errorf("audit reports %d packages, want 6: %v", len(reports[0]), reports[0])
	}
	for _, r := range oci.Requests(t)[before:] {
		for plat, data := range f.rel.Archives {
			sum := sha256.Sum256(data)
			if strings.Contains(r.URI, "/blobs/sha256:"+hex.EncodeToString(sum[:])) {
				t.Errorf("audit of the registry read the %s archive: %s %s", plat, r.Method, r.URI)
			}
		}
	}

	logged, err := os.ReadFile(accessLog)
	if err != nil || !strings.Contains(string(logged), layout.SBOMSuffix) {
		t.Fatalf("nginx's access log has no SBOM request (%v):\n%s", err, logged)
	}
	for _, line := range strings.Split(string(logged), "\n") {
		if strings.Contains(line, ".zip") {
			t.Errorf("audit of the https:// mirror read an archive: %s", line)
		}
	}

	warn := f.manifest(t, "warn.hcl", `
vulnerabilities "*" {
  action = "warn"
}
`)
	stdout, stderr, code = runTfmirror(t, f.work, env, "audit", site, "--config", warn, "--vulndb", f.osv)
	if code != 0 || !strings.Contains(stdout+stderr, "GO-2022-1059") {
		t.Errorf("audit with a policy that warns: exit %d, want 0 with the advisories shown\n%s\n%s", code, stdout, stderr)
	}
}

// checkRecordedVulnerabilities: the tree's vulnerabilities.json records
// each vulnerable package's advisories as the build reported them, and
// the catalog page, in headless Chromium, shows them in the package's
// row.
func checkRecordedVulnerabilities(t *testing.T, f *vulnFixture, site string, built map[string]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(site, layout.VulnerabilitiesPath))
	if err != nil {
		t.Fatal(err)
	}
	var rec layout.Vulnerabilities
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	page := openInChromium(t, chromiumBin(t), (&url.URL{Scheme: "file", Path: filepath.Join(site, htmlcatalog.Path)}).String())
	sec := findByAttr(page.dom, "id", "provider-registry.test/acme/vulnprobe")
	if sec == nil {
		t.Fatal("the page has no section for registry.test/acme/vulnprobe")
	}
	for _, target := range f.rel.Spec.Targets {
		ids := rec.Packages["registry.test/acme/vulnprobe 1.0.0 "+target.Platform]
		for id := range goprovider.VulnerableAdvisories {
			if !slices.Contains(ids, id) || rec.Advisories[id].Module != goprovider.VulnerableModule.Path || !strings.Contains(built["registry.test/acme/vulnprobe 1.0.0 "+target.Platform], id) {
				t.Errorf("%s: %s records %v; want %s of %s", target.Platform, layout.VulnerabilitiesPath, ids, id, goprovider.VulnerableModule.Path)
			}
		}
		row := findByAttr(sec, "data-platform", target.Platform)
		var shown []string
		for _, li := range domFind(row, func(n *html.Node) bool { v, _ := domAttr(n, "class"); return v == "advisory" }) {
			shown = append(shown, strings.Fields(domText(li))[0])
		}
		slices.Sort(shown)
		if !slices.Equal(shown, ids) {
			t.Errorf("%s: the page shows the advisories %v; want %v", target.Platform, shown, ids)
		}
	}
	if len(rec.Packages) != 3 {
		t.Errorf("%s records %d packages, want the 3 vulnerable ones: %v", layout.VulnerabilitiesPath, len(rec.Packages), rec.Packages)
	}
}

// TestVulnerabilitiesPolicyHoldsAndRefuses builds the vulnerable release
// with the real database under a vulnerabilities policy: hold keeps it
// out (exit 0, its packages held back, nothing of it in the mirror, the
// other provider published); refuse fails it (exit 3, the error names
// the provider, version, platform, advisory and module; nothing of it
// published); warn publishes it; ignoring two of its advisories (with
// reasons) still holds it back for the others the database has.
func TestVulnerabilitiesPolicyHoldsAndRefuses(t *testing.T) {
	f := newVulnFixture(t, testca.New(t))
	ignore := fmt.Sprintf(`ignore = { %s }`, strings.Join(slices.Collect(func(yield func(string) bool) {
		for id := range goprovider.VulnerableAdvisories {
			yield(fmt.Sprintf("%q = \"not reachable from the provider's schema\"", id))
		}
	}), ", "))
	for _, tc := range []struct {
		name, block string
		code        int
		status      string
	}{
		{"hold", `action = "hold"`, 0, "held"},
		{"refuse", `action = "refuse"`, 3, "failed"},
		{"warn", `action = "warn"`, 0, "mirrored"},
		{"hold, two ignored", `action = "hold"` + "\n  " + ignore, 0, "held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.manifest(t, tc.name+".hcl", "\nvulnerabilities \"registry.test/acme/*\" {\n  "+tc.block+"\n}\n")
			site := filepath.Join(f.work, "site-"+tc.name)
			stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", cfg, "--out", site, "--vulndb", f.osv, "--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for pkg, line := range reportOf(jsonEvents(t, stdout, "package")) {
				want := "mirrored"
				if strings.HasPrefix(pkg, "registry.test/acme/vulnprobe ") {
					want = tc.status
				}
				if !strings.HasPrefix(line, want+":") {
					t.Errorf("%s: %s, want %s", pkg, line, want)
				}
			}
			_, err := os.Stat(filepath.Join(site, "registry.test/acme/vulnprobe/1.0.0.json"))
			archives, _ := filepath.Glob(filepath.Join(site, "registry.test/acme/vulnprobe/*.zip"))
			if published := err == nil; published != (tc.status == "mirrored") || (!published && len(archives) > 0) {
				t.Errorf("vulnprobe 1.0.0 published %v, archives in the mirror %v", published, archives)
			}
			if _, err := os.Stat(filepath.Join(site, "registry.test/acme/script/1.0.0.json")); err != nil {
				t.Errorf("the release without advisories was not published: %v", err)
			}
			if tc.status == "failed" {
				for _, want := range []string{"registry.test/acme/vulnprobe 1.0.0 linux_amd64", "refused by the vulnerabilities policy", "GO-2021-0113 in golang.org/x/text v0.3.5"} {
					if !strings.Contains(stderr, want) && !strings.Contains(stdout, want) {
						t.Errorf("the refusal does not say %q:\n%s", want, stdout)
					}
				}
			}
		})
	}
}
