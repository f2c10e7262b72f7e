package cli

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/gitserver"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
	"github.com/tfmirror/tfmirror/layout"
)

// moduleOrigin is a module registry (the fake registry) and a git server
// over TLS from one test CA, with download locations in every form the
// registries return.
func moduleOrigin(t *testing.T) (origin, *gitserver.Server, map[string]string) {
	t.Helper()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	git := gitserver.Start(t, ca)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	o := origin{reg: reg, environ: []string{"SSL_CERT_FILE=" + caFile}, locationHosts: []string{strings.TrimPrefix(git.URL, "https://")}}

	commits := map[string]string{}
	commits["tagged"] = git.Commit(t, "tagged", map[string]string{"main.tf": "# tagged\n"}, "v1.0.0")
	commits["pinned"] = git.Commit(t, "pinned", map[string]string{"main.tf": "# pinned\n", "modules/x/main.tf": "# x\n"}, "")
	git.Commit(t, "pinned", map[string]string{"main.tf": "# later\n"}, "")
	reg.AddModule("acme/tagged/aws", "1.0.0", "git::"+git.RepoURL("tagged")+"?ref=v1.0.0", false)
	reg.AddModule("acme/pinned/aws", "1.0.0", "git::"+git.RepoURL("pinned")+"//modules/x?ref="+commits["pinned"], false)

	reg.AddFile("rel.tar.gz", targz.Pack(t, []targz.Entry{targz.Regular("top-1.0.0/main.tf", "# rel\n")}, nil))
	reg.AddModule("acme/rel/aws", "1.0.0", "../../../../../../files/rel.tar.gz//*", false)
	reg.AddFile("zip.zip", zipbuild.Bytes(t, zipbuild.File("main.tf", "# zip\n")))
	reg.AddModule("acme/zip/aws", "1.0.0", reg.URL+"/files/zip.zip", false)
	reg.AddModule("acme/zip/aws", "1.1.0", reg.URL+"/files/zip.zip?archive=zip", true)
	return o, git, commits
}

func moduleManifest(o origin, blocks string) string {
	text := blocks + `
host "registry.opentofu.org" {
  services = { "modules.v1" = "` + o.reg.ModulesURL + `" }
}
`
	if len(o.locationHosts) > 0 {
		text += "settings {\n  allowed_location_hosts = [\"" + strings.Join(o.locationHosts, `", "`) + "\"]\n}\n"
	}
	return text
}

func readModuleRecord(t *testing.T, site, module, version string) layout.ModuleRecord {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(site, "modules", "registry.opentofu.org", filepath.FromSlash(module), version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := layout.DecodeModuleRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestBuildMirrorsModuleLocations builds module blocks whose registry
// answers in every form (git at a tag, git at a commit with a //subdir, a
// relative .tar.gz with //*, a .zip in the body and one in X-Terraform-Get
// with an ?archive= hint) and checks what the tree records and serves.
func TestBuildMirrorsModuleLocations(t *testing.T) {
	o, _, commits := moduleOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, `
module "acme/tagged/aws" { versions = "1.0.0" }
module "acme/pinned/aws" { newest = 1 }
module "acme/rel/aws" { newest = 1 }
module "acme/zip/aws" { versions = ">= 1.0" }
`))
	code, stdout, stderr := o.run(t, dir, "build", "--json")
	if code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	var bytes struct {
		Published int64 `json:"bytes_published"`
	}
	if err := json.Unmarshal(summaryLine(t, stdout), &bytes); err != nil || bytes.Published == 0 {
		t.Errorf("a build of modules only published %d bytes (%v)", bytes.Published, err)
	}
	site := filepath.Join(dir, "site")
	// The module replica's documents are the mirror's own (replica.Check).
	if out := mustRun(t, o, t.TempDir(), "verify", site); !strings.Contains(out, " 0 problems") {
		t.Errorf("verify of the modules' mirror:\n%s", out)
	}
	for _, tc := range []struct{ module, version, subdir, commit string }{
		{"acme/tagged/aws", "1.0.0", "", commits["tagged"]},
		{"acme/pinned/aws", "1.0.0", "modules/x", commits["pinned"]},
		{"acme/rel/aws", "1.0.0", "top-1.0.0", ""},
		{"acme/zip/aws", "1.0.0", "", ""},
		{"acme/zip/aws", "1.1.0", "", ""},
	} {
		rec := readModuleRecord(t, site, tc.module, tc.version)
		if rec.Subdir != tc.subdir || rec.Upstream.Commit != tc.commit || (tc.commit == "") != (rec.Upstream.ArchiveSHA256 != "") {
			t.Errorf("%s %s: record %+v, want subdir %q, commit %q", tc.module, tc.version, rec, tc.subdir, tc.commit)
		}
		var doc struct {
			Location string `json:"location"`
		}
		data, err := os.ReadFile(filepath.Join(site, "replica", "registry.opentofu.org", "v1", "modules", filepath.FromSlash(tc.module), tc.version, "download"))
		if err == nil {
			err = json.Unmarshal(data, &doc)
		}
		want := "../../../../../../../../modules/registry.opentofu.org/" + tc.module + "/" + tc.version + ".zip"
		if tc.subdir != "" {
			want += "//" + tc.subdir
		}
		if err != nil || doc.Location != want {
			t.Errorf("%s %s: download document %q (%v), want location %q", tc.module, tc.version, data, err, want)
		}
	}
	var summary struct {
		Event    string `json:"event"`
		Modules  []any  `json:"modules"`
		ExitCode *int   `json:"exit_code"`
	}
	for line := range strings.Lines(stdout) {
		if json.Unmarshal([]byte(line), &summary) == nil && summary.Event == "summary" {
			break
		}
	}
	if len(summary.Modules) != 5 || summary.ExitCode == nil || *summary.ExitCode != 0 {
		t.Errorf("--json summary: %+v, want 5 modules and exit code 0", summary)
	}
	if out := mustRun(t, o, dir, "verify", site); !strings.Contains(out, " 0 problems, 0 warnings") {
		t.Errorf("verify:\n%s", out)
	}
}

// TestModuleInputErrors: an unknown module or a constraint no version
// matches is bad input (exit 2) naming the module; a dry run fetches and
// writes nothing.
func TestModuleInputErrors(t *testing.T) {
	o, git, _ := moduleOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, `module "acme/nothere/aws" { newest = 1 }`))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitUsage || !strings.Contains(stdout+stderr, "module acme/nothere/aws") {
		t.Errorf("unknown module: exit %d, want 2 naming it\n%s%s", code, stdout, stderr)
	}
	writeManifest(t, dir, moduleManifest(o, `module "acme/zip/aws" { versions = "~> 9.0" }`))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitUsage || !strings.Contains(stdout+stderr, `module acme/zip/aws: no version matches "~> 9.0"`) {
		t.Errorf("no matching version: exit %d, want 2 naming the module and constraint\n%s%s", code, stdout, stderr)
	}
	writeManifest(t, dir, moduleManifest(o, `module "acme/zip/aws" { versions = "~> 1.0, >= nonsense" }`))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitUsage || !strings.Contains(stderr, "mirror.hcl:1") {
		t.Errorf("a bad constraint: exit %d, want 2 at its position\n%s%s", code, stdout, stderr)
	}

	writeManifest(t, dir, moduleManifest(o, `module "acme/tagged/aws" { newest = 1 }`))
	if code, stdout, stderr := o.run(t, dir, "build", "--no-modules"); code != ExitUsage || !strings.Contains(stderr, "nothing to mirror") {
		t.Errorf("--no-modules with only modules: exit %d, want 2 and nothing to mirror\n%s%s", code, stdout, stderr)
	}
	before := git.Requests()
	code, stdout, stderr := o.run(t, dir, "build", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "would fetch 1 module version, keep 0") {
		t.Errorf("dry run: exit %d\n%s%s", code, stdout, stderr)
	}
	if git.Requests() != before {
		t.Error("a dry run fetched from git")
	}
	if _, err := os.Stat(filepath.Join(dir, "site", "modules")); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote modules: %v", err)
	}
}

// TestBuildModulesIntoBucket publishes modules into a bucket beside a
// directory: the bucket holds the same files, byte for byte, verify finds
// nothing wrong, and a second build writes nothing.
func TestBuildModulesIntoBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	o, _, _ := moduleOrigin(t)
	o.environ = append(o.environ, srv.Environ()...)
	o.environ = append(o.environ, "XDG_CACHE_HOME="+t.TempDir())
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, `
module "acme/tagged/aws" { versions = "1.0.0" }
module "acme/rel/aws" { newest = 1 }
`))
	bucket := srv.URI("mirror", "site/")
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site", "--out", bucket); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	objects := bucketFiles(t, srv, "mirror", "site/")
	diffSnapshots(t, allPublishedFiles(t, filepath.Join(dir, "site")), contents(objects))
	for _, key := range []string{"modules/registry.opentofu.org/acme/rel/aws/1.0.0.zip", "replica/registry.opentofu.org/v1/modules/acme/rel/aws/1.0.0/download", "catalog.json"} {
		if _, ok := objects[key]; !ok {
			t.Errorf("the bucket lacks %s", key)
		}
	}
	if code, stdout, stderr := o.run(t, dir, "verify", bucket); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("verify %s: exit %d\n%s%s", bucket, code, stdout, stderr)
	}
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site", "--out", bucket); code != ExitOK || !strings.Contains(stdout, "modules: 0 mirrored, 2 already present") {
		t.Fatalf("second build: exit %d\n%s%s", code, stdout, stderr)
	}
	for key, obj := range bucketFiles(t, srv, "mirror", "site/") {
		if obj.modified != objects[key].modified || obj.etag != objects[key].etag {
			t.Errorf("the second build rewrote %s", key)
		}
	}
}

// verify checks that the module registry offers every module version the
// mirror holds: a versions document, a download document, the discovery
// document or the nginx fragment taken away is a problem naming it (tofu
// init found no module, and verify said 0 problems).
func TestVerifyChecksTheModuleRegistry(t *testing.T) {
	o, _, _ := moduleOrigin(t)
	site := siteOf(t, o, moduleManifest(o, `module "acme/zip/aws" { versions = ">= 1.0" }
`))
	base := "replica/registry.opentofu.org/"
	for _, rel := range []string{
		base + "v1/modules/acme/zip/aws/versions",
		base + "v1/modules/acme/zip/aws/1.1.0/download",
		base + ".well-known/terraform.json",
		"replica/x-terraform-get.nginx.conf",
	} {
		t.Run(path.Base(rel), func(t *testing.T) {
			file := filepath.Join(site, filepath.FromSlash(rel))
			data := readFile(t, file)
			defer writeFile(t, file, data)
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
			if code != ExitVerification || !strings.Contains(stdout, "problem  "+rel+": ") {
				t.Errorf("verify with %s gone: exit %d, want %d naming it\n%s%s", rel, code, ExitVerification, stdout, stderr)
			}
		})
	}
	// Terraform behind nginx reads the location from the fragment's
	// X-Terraform-Get, not the document: one sent elsewhere is a problem.
	t.Run("x-terraform-get elsewhere", func(t *testing.T) {
		file := filepath.Join(site, "replica", "x-terraform-get.nginx.conf")
		data := readFile(t, file)
		defer writeFile(t, file, data)
		evil := regexp.MustCompile(`X-Terraform-Get "[^"]*"`).ReplaceAll(data, []byte(`X-Terraform-Get "https://evil.example/x.zip"`))
		writeFile(t, file, evil)
		code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
		if code != ExitVerification || !strings.Contains(stdout, "problem  replica/x-terraform-get.nginx.conf: the nginx fragment is not the one") {
			t.Errorf("verify with X-Terraform-Get edited: exit %d, want %d naming the fragment\n%s%s", code, ExitVerification, stdout, stderr)
		}
	})
	// A download document that sends clients elsewhere (read once, by the
	// module registry's check) is a problem naming it.
	t.Run("location elsewhere", func(t *testing.T) {
		file := filepath.Join(site, filepath.FromSlash(base+"v1/modules/acme/zip/aws/1.1.0/download"))
		data := readFile(t, file)
		defer writeFile(t, file, data)
		writeFile(t, file, []byte(`{"location":"https://evil.example/x.zip"}`))
		code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
		if code != ExitVerification || !strings.Contains(stdout, `1.1.0/download: the replica sends clients to "https://evil.example/x.zip"`) {
			t.Errorf("verify with a download document sent elsewhere: exit %d, want %d naming it\n%s%s", code, ExitVerification, stdout, stderr)
		}
	})
	// The example nginx configuration includes every replica/*.nginx.conf:
	// one tfmirror did not write is a problem.
	t.Run("another nginx fragment", func(t *testing.T) {
		file := filepath.Join(site, "replica", "y-extra.nginx.conf")
		writeFile(t, file, []byte("location = /x { return 204; }\n"))
		defer os.Remove(file)
		code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
		if code != ExitVerification || !strings.Contains(stdout, "problem  replica/y-extra.nginx.conf: an nginx configuration fragment tfmirror did not write") {
			t.Errorf("verify with another nginx fragment: exit %d, want %d naming it\n%s%s", code, ExitVerification, stdout, stderr)
		}
	})
	if code, stdout, stderr := o.run(t, t.TempDir(), "verify", site); code != ExitOK {
		t.Errorf("verify of the mirror as built: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A mirrored module whose package makes a call the mirror cannot answer
// (another remote source, a source from the caller's value) is mirrored
// with a warning naming the module, the call and its file:line: init,
// installing from the mirror, would stop there (the build said nothing).
func TestBuildWarnsOfModuleCallsItCannotMirror(t *testing.T) {
	o, git, _ := moduleOrigin(t)
	o.reg.AddFile("calls.zip", zipbuild.Bytes(t, zipbuild.File("main.tf", `variable "ns" {}
module "net" { source = "git::`+git.RepoURL("tagged")+`?ref=v1.0.0" }
module "dyn" { source = "${var.ns}/sub/aws" }
`)))
	o.reg.AddModule("acme/calls/aws", "1.0.0", o.reg.URL+"/files/calls.zip", false)
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, `module "acme/calls/aws" { versions = "1.0.0" }
`))
	code, stdout, stderr := o.run(t, dir, "build")
	if code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"module acme/calls/aws 1.0.0: module.net in main.tf:2 calls",
		"module acme/calls/aws 1.0.0: module.dyn in main.tf:3: its source needs a value",
	} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("the build does not warn %q\n%s%s", want, stdout, stderr)
		}
	}
}

// A module package that cannot be packed (a link to a directory) is
// refused naming the module and where it came from, not tfmirror's own
// staging path.
func TestModulePackRefusalNamesTheSource(t *testing.T) {
	o, _, _ := moduleOrigin(t)
	o.reg.AddFile("linked.tar.gz", targz.Pack(t, []targz.Entry{
		targz.Regular("sub/main.tf", "# sub\n"),
		{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "alias", Linkname: "sub", Mode: 0o777}},
		targz.Regular("main.tf", "# top\n"),
	}, nil))
	o.reg.AddModule("acme/linked/aws", "1.0.0", o.reg.URL+"/files/linked.tar.gz", false)
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, `module "acme/linked/aws" { versions = "1.0.0" }
`))
	code, stdout, stderr := o.run(t, dir, "build")
	out := stdout + stderr
	if code == ExitOK || !strings.Contains(out, "acme/linked/aws 1.0.0") || !strings.Contains(out, "pack the module from "+o.reg.URL+"/files/linked.tar.gz") ||
		!strings.Contains(out, "alias") || strings.Contains(out, "staging") {
		t.Errorf("build of a module with a link to a directory: exit %d, want a refusal naming the module, its source and the link, not the staging path\n%s", code, out)
	}
}

// A module package whose bytes changed is a problem that says so, and
// only that (it ended with a stray ": invalid argument").
func TestVerifyDamagedModulePackage(t *testing.T) {
	o, _, _ := moduleOrigin(t)
	site := siteOf(t, o, moduleManifest(o, `module "acme/zip/aws" { versions = "1.0.0" }
`))
	flipByte(t, filepath.Join(site, filepath.FromSlash(layout.ModuleArchivePath(addrs.MustParseModule("acme/zip/aws"), addrs.MustParseVersion("1.0.0")))))
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
	if code != ExitVerification || !regexp.MustCompile(`the record says [0-9a-f]{64} and \d+ bytes\n`).MatchString(stdout) {
		t.Errorf("verify of a damaged module package: exit %d, want %d and a problem ending with the recorded digest and size\n%s%s", code, ExitVerification, stdout, stderr)
	}
}
