package cli

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestBuildRefusesArchivesThatCannotBeUnpacked builds hashicorp/foo from an
// origin whose 1.1.0 release is signed and its archive matches SHA256SUMS,
// but the archive cannot be unpacked into a directory exactly as named. The
// build must report a verification failure naming the package and the
// entry, publish nothing of 1.1.0 (in the network tree and in the unpacked
// filesystem layout), and still mirror the good 1.0.0.
func TestBuildRefusesArchivesThatCannotBeUnpacked(t *testing.T) {
	good := craftedZip(t, craftedBinary("1.0.0"))
	bin := craftedBinary("1.1.0")
	cases := []struct {
		name    string
		entries []craftedEntry
		entry   string // the entry the error must name
		why     string
	}{
		{"duplicate entry", []craftedEntry{bin, {name: "README.md", body: "a"}, {name: bin.name, body: "#!/bin/sh\necho the other binary\n", mode: 0o755}},
			bin.name, "duplicate entry name"},
		{"file and directory of the same name", []craftedEntry{bin, {name: "docs", body: "a file"}, {name: "docs/README.md", body: "x"}},
			"docs/README.md", `parent "docs" is a file entry`},
		{"dot-dot inside a name", []craftedEntry{bin, {name: "docs/../README.md", body: "x"}},
			"docs/../README.md", "name is not canonical"},
	}
	for _, tc := range cases {
		for _, kind := range []string{"network", "unpacked"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				origin := serveCraftedReleases(t, map[string][]byte{
					"1.0.0": good,
					"1.1.0": craftedZip(t, tc.entries...),
				})
				dir := t.TempDir()
				writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = ">= 1.0.0" }
host "registry.opentofu.org" {
  services = { "providers.v1" = "`+origin.servicesURL+`" }
}
`)
				code, stdout, stderr := origin.run(t, dir, "build", "--layout", kind)
				if code != ExitVerification {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitVerification, stdout, stderr)
				}
				// One line names the package and the entry, and says why.
				want := []string{"hashicorp/foo", "1.1.0", "linux_amd64", fmt.Sprintf("entry %q", tc.entry), tc.why}
				if !craftedHasLineWithAll(stdout+stderr, want) {
					t.Errorf("no line of the output says all of %q\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
				}
				if origin.requests("/releases/terraform-provider-foo_1.1.0_linux_amd64.zip") == 0 {
					t.Errorf("the 1.1.0 archive was never downloaded: the refusal was not the archive's")
				}

				site := filepath.Join(dir, "site")
				network := site
				if kind == "unpacked" {
					network = filepath.Join(site, ".tfmirror", "store")
				}
				base := filepath.Join(network, "registry.opentofu.org", "hashicorp", "foo")
				if _, err := os.Stat(filepath.Join(base, "terraform-provider-foo_1.0.0_linux_amd64.zip")); err != nil {
					t.Errorf("the good release was not mirrored: %v", err)
				}
				for _, name := range []string{"1.1.0.json", "terraform-provider-foo_1.1.0_linux_amd64.zip"} {
					if _, err := os.Lstat(filepath.Join(base, name)); err == nil || !os.IsNotExist(err) {
						t.Errorf("%s was published for the refused release (%v)", name, err)
					}
				}
				if index, err := os.ReadFile(filepath.Join(base, "index.json")); err != nil || strings.Contains(string(index), "1.1.0") || !strings.Contains(string(index), "1.0.0") {
					t.Errorf("index.json should list 1.0.0 and not 1.1.0: %s (%v)", index, err)
				}
				// Nothing anywhere in the output directory (outside the
				// build's private work area) is of the refused release.
				err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					rel, _ := filepath.Rel(site, p)
					rel = filepath.ToSlash(rel)
					if d.IsDir() && (strings.HasPrefix(rel, ".tfmirror/run-") || rel == ".tfmirror/partial") {
						return filepath.SkipDir
					}
					if strings.Contains(rel, "1.1.0") {
						t.Errorf("%s is in the output directory", rel)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if kind == "unpacked" {
					if _, err := os.Stat(filepath.Join(site, "registry.opentofu.org", "hashicorp", "foo", "1.0.0", "linux_amd64", "terraform-provider-foo_v1.0.0")); err != nil {
						t.Errorf("the good release was not unpacked: %v", err)
					}
				}
				// What was published is consistent.
				if code, stdout, stderr := origin.run(t, dir, "verify", network); code != ExitOK {
					t.Errorf("verify %s: exit %d\nstdout:\n%s\nstderr:\n%s", network, code, stdout, stderr)
				}
			})
		}
	}
}

// craftedEntry is one entry of a crafted provider archive; mode 0 is 0644.
type craftedEntry struct {
	name string
	body string
	mode fs.FileMode
}

func craftedBinary(version string) craftedEntry {
	return craftedEntry{name: "terraform-provider-foo_v" + version, body: "#!/bin/sh\necho foo " + version + "\n", mode: 0o755}
}

// craftedZip writes entries in order, duplicates and all, as a zip.
func craftedZip(t *testing.T, entries ...craftedEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		h.SetMode(0o644)
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func craftedHasLineWithAll(output string, want []string) bool {
	for line := range strings.SplitSeq(output, "\n") {
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// craftedOrigin is a provider registry serving hashicorp/foo releases for
// linux_amd64 whose archives are given byte for byte (fakeregistry builds
// its own), each listed in its version's SHA256SUMS, signed by a key the
// download documents advertise: signed releases as a registry publishes
// them.
type craftedOrigin struct {
	servicesURL string
	environ     []string
	srv         *httptest.Server
	mu          sync.Mutex
	counts      map[string]int // requests by URL path
}

func serveCraftedReleases(t *testing.T, archives map[string][]byte) *craftedOrigin {
	t.Helper()
	key := pgptest.New(t, "crafted releases")
	files := map[string][]byte{}
	versions := regproto.Versions{Versions: []regproto.Version{}}
	for v, archive := range archives {
		zipName := "terraform-provider-foo_" + v + "_linux_amd64.zip"
		sumsName := "terraform-provider-foo_" + v + "_SHA256SUMS"
		sums := []byte(sha256Hex(archive) + "  " + zipName + "\n")
		download, err := json.Marshal(regproto.Download{
			Protocols: []string{"5.0"}, OS: "linux", Arch: "amd64", Filename: zipName,
			DownloadURL:         "/releases/" + zipName,
			ShasumsURL:          "/releases/" + sumsName,
			ShasumsSignatureURL: "/releases/" + sumsName + ".sig",
			Shasum:              sha256Hex(archive),
			SigningKeys:         regproto.SigningKeys{GPGPublicKeys: []regproto.GPGKey{{KeyID: key.ID, ASCIIArmor: key.Armored}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		files["/v1/providers/hashicorp/foo/"+v+"/download/linux/amd64"] = download
		files["/releases/"+zipName] = archive
		files["/releases/"+sumsName] = sums
		files["/releases/"+sumsName+".sig"] = key.Sign(t, sums)
		versions.Versions = append(versions.Versions, regproto.Version{
			Version: v, Protocols: []string{"5.0"}, Platforms: []regproto.Platform{{OS: "linux", Arch: "amd64"}},
		})
	}
	doc, err := json.Marshal(versions)
	if err != nil {
		t.Fatal(err)
	}
	files["/v1/providers/hashicorp/foo/versions"] = doc

	o := &craftedOrigin{counts: map[string]int{}}
	ca := testca.New(t)
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.counts[r.URL.Path]++
		o.mu.Unlock()
		data, ok := files[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ".zip"):
			w.Header().Set("Content-Type", "application/zip")
		case strings.HasPrefix(r.URL.Path, "/v1/"):
			w.Header().Set("Content-Type", "application/json")
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		_, _ = w.Write(data)
	}))
	o.srv.TLS = ca.TLSConfig(t, "localhost", "127.0.0.1")
	o.srv.StartTLS()
	t.Cleanup(o.srv.Close)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	o.servicesURL = o.srv.URL + "/v1/providers/"
	o.environ = []string{"SSL_CERT_FILE=" + caFile}
	return o
}

func (o *craftedOrigin) run(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return origin{environ: o.environ}.run(t, dir, args...)
}

// requests counts the requests for path so far.
func (o *craftedOrigin) requests(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[path]
}
