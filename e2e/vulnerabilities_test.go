package e2e

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/goprovider"
	"github.com/tfmirror/tfmirror/internal/testutil/govulndb"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/vulndb"
)

// TestVulnerabilitiesAgainstGovulncheck mirrors a provider release of
// real Go programs (linux_amd64, darwin_arm64, windows_amd64 stripped)
// that depend on a deliberately old, vulnerable golang.org/x/text and
// call its vulnerable functions, then holds tfmirror's module-level
// matching of each mirrored package's build information, read in the
// h1: pass, against govulncheck -mode=binary on the same executable and
// the same real Go vulnerability database (golang.org/x/vulndb pinned,
// in the layout vuln.go.dev serves): every advisory govulncheck reports
// must be in tfmirror's findings, with the same fixed version, and, at
// module level, nothing more (an advisory of Windows only is not
// reported for linux); the vulnerable module's advisories must be found,
// naming their fixes, and govulncheck must find their vulnerable
// functions in the binary.
func TestVulnerabilitiesAgainstGovulncheck(t *testing.T) {
	osvDir := govulndb.OSVDir(t)
	govulncheck := govulndb.Govulncheck(t)
	served := t.TempDir()
	govulndb.WriteServed(t, osvDir, served, nil)
	db := sameDatabase(t, osvDir, served)

	rel := goprovider.Build(t, goprovider.Vulnerable("vulnprobe", "1.0.0"))
	site := mirrorRelease(t, rel)

	for _, target := range rel.Spec.Targets {
		t.Run(target.Platform, func(t *testing.T) {
			zipPath := filepath.Join(site, "registry.test", "acme", "vulnprobe",
				goprovider.ArchiveName("vulnprobe", "1.0.0", target.Platform))
			info := programOf(t, zipPath)
			exe := unpackProgram(t, zipPath, goprovider.ExecutableName("vulnprobe", "1.0.0", target.Platform))
			if want, err := buildinfo.ReadFile(exe); err != nil || want.String() != info.String() {
				t.Fatalf("build information from the h1: pass:\n%s\ndebug/buildinfo (%v):\n%s", info, err, want)
			}

			found := db.Match(vulndb.ProgramOf(info))
			checkVulnerableModule(t, found)
			reported := runGovulncheck(t, govulncheck, served, exe)
			ours := map[string]vulndb.Finding{}
			for _, f := range found {
				ours[f.Module+" "+f.ID] = f
			}
			for key, g := range reported {
				f, ok := ours[key]
				switch {
				case !ok:
					t.Errorf("govulncheck reports %s (fixed in %s); tfmirror's findings do not have it", key, g.fixed)
				case strings.TrimPrefix(g.fixed, "v") != f.Fixed:
					t.Errorf("%s: govulncheck says fixed in %s, tfmirror %q", key, g.fixed, f.Fixed)
				}
			}
			for id := range goprovider.VulnerableAdvisories {
				if !reported[goprovider.VulnerableModule.Path+" "+id].symbol {
					t.Errorf("govulncheck does not find %s's vulnerable functions in the binary: the program no longer calls them", id)
				}
			}
			for key := range ours {
				if _, ok := reported[key]; !ok {
					t.Errorf("tfmirror finds %s, which govulncheck does not report: module-level matching no longer agrees", key)
				}
			}
			t.Logf("tfmirror and govulncheck: %d advisories, %d of them at symbol level", len(ours), atSymbolLevel(reported))
		})
	}
}

// sameDatabase loads the database from data/osv and from the served
// layout made of it, and checks they hold the same records.
func sameDatabase(t *testing.T, osvDir, served string) *vulndb.DB {
	t.Helper()
	fromOSV, err := vulndb.Load(osvDir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := vulndb.Load(served)
	if err != nil {
		t.Fatal(err)
	}
	if db.Len() != fromOSV.Len() || db.Len() < 4000 {
		t.Fatalf("the served layout holds %d records, data/osv %d", db.Len(), fromOSV.Len())
	}
	return db
}

// mirrorRelease publishes rel on the test origin as
// registry.test/acme/vulnprobe and mirrors it with tfmirror build; it
// returns the mirror's directory.
func mirrorRelease(t *testing.T, rel *goprovider.Release) string {
	t.Helper()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.AddArchives("acme", "vulnprobe", rel.Spec.Version, rel.Archives)
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), `platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "registry.test/acme/vulnprobe" {
  versions = "`+rel.Spec.Version+`"
}

host "registry.test" {
  services = { "providers.v1" = "`+reg.ServicesURL+`" }
}
`)
	stdout, stderr, code := runTfmirror(t, work, caFileEnv(t, ca), "build", "--config", "mirror.hcl", "--out", "site")
	if code != 0 {
		t.Fatalf("tfmirror build: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return filepath.Join(work, "site")
}

// programOf is the build information of the package's executable as the
// h1: pass reads it.
func programOf(t *testing.T, zipPath string) *debug.BuildInfo {
	t.Helper()
	sum, _, err := hashing.HashFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := hashing.HashArchive(zipPath, sum, hashing.DefaultZipLimits)
	if err != nil {
		t.Fatal(err)
	}
	if sums.Program.Info == nil {
		t.Fatalf("%s: no build information found in %q", zipPath, sums.Program.Executable)
	}
	return sums.Program.Info
}

// checkVulnerableModule: the findings name the advisories of the
// vulnerable module at its version, with their fixes, and none of the
// safe module.
func checkVulnerableModule(t *testing.T, found []vulndb.Finding) {
	t.Helper()
	got := map[string]string{}
	for _, f := range found {
		switch f.Module {
		case goprovider.VulnerableModule.Path:
			if f.Found != goprovider.VulnerableModule.Version {
				t.Errorf("%s: found in %s, want %s", f.ID, f.Found, goprovider.VulnerableModule.Version)
			}
			got[f.ID] = f.Fixed
		case goprovider.SafeModule.Path:
			t.Errorf("%s reported for %s %s, which it does not affect", f.ID, f.Module, f.Found)
		}
	}
	for id, fixed := range goprovider.VulnerableAdvisories {
		if got[id] != fixed {
			t.Errorf("%s in %s: fixed %q, want %q (all: %v)", goprovider.VulnerableModule.Path, id, got[id], fixed, got)
		}
	}
}

func atSymbolLevel(reported map[string]reportedVuln) int {
	n := 0
	for _, r := range reported {
		if r.symbol {
			n++
		}
	}
	return n
}

// reportedVuln is what govulncheck says of one advisory in one module.
type reportedVuln struct {
	fixed  string
	symbol bool // reported at symbol level: the binary holds a vulnerable function
}

// runGovulncheck runs govulncheck -mode=binary on exe against the
// database in dir and returns its findings by "module id".
func runGovulncheck(t *testing.T, govulncheck, dir, exe string) map[string]reportedVuln {
	t.Helper()
	cmd := exec.Command(govulncheck, "-mode=binary", "-db", "file://"+dir, "-json", exe)
	home := t.TempDir()
	cmd.Env = mergeEnv(baseEnv(), []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("govulncheck %s: %v\n%s", exe, err, stderr.String())
	}
	reported := map[string]reportedVuln{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var msg struct {
			Finding *struct {
				OSV          string `json:"osv"`
				FixedVersion string `json:"fixed_version"`
				Trace        []struct {
					Module   string `json:"module"`
					Function string `json:"function"`
				} `json:"trace"`
			} `json:"finding"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("govulncheck's output: %v", err)
		}
		if f := msg.Finding; f != nil && len(f.Trace) > 0 {
			key := f.Trace[0].Module + " " + f.OSV
			r := reported[key]
			r.fixed = f.FixedVersion
			r.symbol = r.symbol || f.Trace[0].Function != ""
			reported[key] = r
		}
	}
	if len(reported) == 0 {
		t.Fatalf("govulncheck reports nothing:\n%s", out)
	}
	return reported
}

// unpackProgram unpacks the package at zipPath and returns the path of
// its executable, name, the one file it must hold.
func unpackProgram(t *testing.T, zipPath, name string) string {
	t.Helper()
	data, err := os.ReadFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unzipTo(t, data, dir)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != name {
		t.Fatalf("%s holds %v (%v), want only %s", zipPath, entries, err, name)
	}
	return filepath.Join(dir, name)
}
