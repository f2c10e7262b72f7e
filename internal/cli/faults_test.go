package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

// siteSnapshot hashes every published file of a site (not .tfmirror/).
func siteSnapshot(t *testing.T, site string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".tfmirror" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(site, p)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// faultCase is one fault of the matrix.
type faultCase struct {
	name   string
	inject func(reg *fakeregistry.Registry)
	// manifest is added to the manifest (settings, trust blocks).
	manifest string
	args     []string
	wantCode int
	want     string // in the output of a failed build
	// retried, if set, is a path the fault must have made tfmirror
	// request more than once.
	retried string
	// held: the fault leaves the new release incomplete, so none of it
	// is published (its other platform is held back).
	held bool
}

const (
	ns, typ = "hashicorp", "foo"
	base    = "1.0.0"
	next    = "1.1.0"
)

func TestFaultMatrix(t *testing.T) {
	archive := fakeregistry.ArchivePath(ns, typ, next, "linux_amd64")
	cases := []faultCase{
		// Transient faults: the build succeeds with a correct tree.
		{name: "503 then success", inject: func(r *fakeregistry.Registry) { r.FailTimes(archive, 503, 2) }, retried: archive},
		{name: "503 on the versions list, then success", inject: func(r *fakeregistry.Registry) { r.FailTimes(fakeregistry.VersionsPath(ns, typ), 503, 1) },
			retried: fakeregistry.VersionsPath(ns, typ)},
		{name: "429 with Retry-After", inject: func(r *fakeregistry.Registry) { r.RateLimit(archive, 1, "1") }, retried: archive},
		{name: "connection reset mid-body", inject: func(r *fakeregistry.Registry) { r.ResetMidBody(archive, 2) }, retried: archive},
		{name: "truncated body", inject: func(r *fakeregistry.Registry) { r.Truncate(archive, 2) }, retried: archive},
		{name: "stalled body", inject: func(r *fakeregistry.Registry) { r.Stall(archive, 1, 5*time.Second) }, args: []string{"--stall-timeout", "300ms"}, retried: archive},
		{name: "missing platform is skipped", inject: func(*fakeregistry.Registry) {}, args: []string{"--platform-extra"}},

		// Permanent faults: the documented exit code and a message naming the fault.
		{name: "persistent 503", inject: func(r *fakeregistry.Registry) { r.FailTimes(archive, 503, 100) },
			args: []string{"--retries", "1"}, wantCode: ExitFailure, want: "503 Service Unavailable (after 2 attempts)", held: true},
		{name: "persistent 503 on a download document", inject: func(r *fakeregistry.Registry) {
			r.FailTimes(fakeregistry.DownloadDocPath(ns, typ, next, "linux_amd64"), 503, 100)
		}, args: []string{"--retries", "1"}, wantCode: ExitFailure, want: "503 Service Unavailable", held: true},
		{name: "redirect loop", inject: func(r *fakeregistry.Registry) {
			r.RedirectLoop(fakeregistry.DownloadDocPath(ns, typ, next, "linux_amd64"))
		}, wantCode: ExitFailure, want: "redirect"},
		{name: "endless JSON", inject: func(r *fakeregistry.Registry) { r.EndlessJSON(fakeregistry.VersionsPath(ns, typ)) },
			wantCode: ExitFailure, want: "limit"},
		{name: "bad signature", inject: func(r *fakeregistry.Registry) { r.BadSignature(ns, typ, next) },
			wantCode: ExitVerification, want: "SHA256SUMS signature is not valid"},
		{name: "signature by a key outside the allowlist", inject: func(r *fakeregistry.Registry) { r.SignWithAdvertisedKey(ns, typ, next) },
			manifest: "allowlist", wantCode: ExitVerification, want: "which the trust policy for registry.opentofu.org/hashicorp/foo does not allow"},
		{name: "archive not matching SHA256SUMS", inject: func(r *fakeregistry.Registry) { r.TamperArchive(ns, typ, next, "linux_amd64") },
			wantCode: ExitVerification, want: "archive has checksum"},
		{name: "shasum not matching SHA256SUMS", inject: func(r *fakeregistry.Registry) { r.ShasumMismatch(ns, typ, next, "linux_amd64") },
			wantCode: ExitVerification, want: "does not match SHA256SUMS"},
		{name: "path traversal filename", inject: func(r *fakeregistry.Registry) {
			r.PathTraversalFilename(ns, typ, next, "linux_amd64", "../../evil.zip")
		}, wantCode: ExitFailure, want: `invalid filename "../../evil.zip"`},
		{name: "missing platform with --strict", inject: func(*fakeregistry.Registry) {}, args: []string{"--platform-extra", "--strict"},
			wantCode: ExitFailure, want: "freebsd_arm"},
		{name: "zip bomb", inject: func(r *fakeregistry.Registry) { r.AddZipBomb(ns, typ, "1.2.0", 64<<20, "linux_amd64") },
			manifest: "small-limits", wantCode: ExitVerification, want: "unpacks to more than the limit of 1048576 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runFault(t, tc) })
	}
}

func runFault(t *testing.T, tc faultCase) {
	o := newOrigin(t)
	o.reg.Add(ns, typ, base, "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	manifest := func(versions string, platforms string) {
		extra := ""
		switch tc.manifest {
		case "allowlist":
			extra = `trust "hashicorp/*" { key_ids = ["` + o.reg.KeyID + `"] }`
		case "small-limits":
			extra = "settings {\n  max_unpacked_bytes = 1048576\n}"
		}
		writeManifest(t, dir, `platforms = [`+platforms+`]
provider "hashicorp/foo" { versions = "`+versions+`" }
`+extra+"\n"+o.hostBlock("registry.opentofu.org"))
	}
	manifest(base, `"linux_amd64", "darwin_arm64"`)
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("clean build: exit %d\n%s%s", code, stdout, stderr)
	}
	before := siteSnapshot(t, site)

	// --platform-extra asks for freebsd_arm too, which the new release
	// publishes and the old one does not.
	platforms := `"linux_amd64", "darwin_arm64"`
	nextPlatforms := []string{"linux_amd64", "darwin_arm64"}
	var args []string
	for _, a := range tc.args {
		if a == "--platform-extra" {
			platforms += `, "freebsd_arm"`
			nextPlatforms = append(nextPlatforms, "freebsd_arm")
			continue
		}
		args = append(args, a)
	}
	o.reg.Add(ns, typ, next, nextPlatforms...)
	tc.inject(o.reg)
	manifest(">= "+base, platforms)
	code, stdout, stderr := o.run(t, dir, append([]string{"build"}, args...)...)
	if code != tc.wantCode {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
	}
	if tc.retried != "" && o.reg.RequestCount(tc.retried) < 2 {
		t.Errorf("%s was requested %d times: the fault did not happen or was not retried", tc.retried, o.reg.RequestCount(tc.retried))
	}
	if tc.wantCode != ExitOK && !strings.Contains(stdout+stderr, tc.want) {
		t.Errorf("output does not name the fault (%q):\n%s%s", tc.want, stdout, stderr)
	}
	checkStillValid(t, o, dir, site, before)
	if tc.held {
		idx, _ := os.ReadFile(filepath.Join(site, "registry.opentofu.org", ns, typ, "index.json"))
		_, err := os.Stat(filepath.Join(site, "registry.opentofu.org", ns, typ, "terraform-provider-foo_"+next+"_darwin_arm64.zip"))
		if strings.Contains(string(idx), next) || err == nil || !strings.Contains(stdout+stderr, "is not published: linux_amd64 failed") {
			t.Errorf("%s, whose linux_amd64 failed, was published with darwin_arm64 alone (index.json: %s)\n%s%s", next, idx, stdout, stderr)
		}
	}
	if tc.wantCode == ExitOK {
		if _, err := os.Stat(filepath.Join(site, "registry.opentofu.org", ns, typ, "terraform-provider-foo_"+next+"_linux_amd64.zip")); err != nil {
			t.Errorf("a transient fault kept %s from being mirrored: %v", next, err)
		}
	}
}

// checkStillValid: the tree verifies, and every file published before is
// byte-identical, except the indexes, which may only have grown.
func checkStillValid(t *testing.T, o origin, dir, site string, before map[string]string) {
	t.Helper()
	if code, stdout, stderr := o.run(t, dir, "verify", site); code != ExitOK {
		t.Errorf("verify after the fault: exit %d\n%s%s", code, stdout, stderr)
	}
	after := siteSnapshot(t, site)
	for path, sum := range before {
		grows := strings.HasSuffix(path, "index.json") || path == "catalog.json" || path == "index.html" || isChangeFile(path)
		if after[path] != sum && !grows {
			t.Errorf("%s changed", path)
		}
		if after[path] == "" {
			t.Errorf("%s disappeared", path)
		}
	}
	idx, err := os.ReadFile(filepath.Join(site, "registry.opentofu.org", ns, typ, "index.json"))
	if err != nil || !strings.Contains(string(idx), `"`+base+`"`) {
		t.Errorf("index.json no longer lists %s: %s %v", base, idx, err)
	}
}
