package fakeregistry

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// fixture is a registry and a client that trusts it.
type fixture struct {
	reg    *Registry
	client *http.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ca := testca.New(t)
	return &fixture{reg: New(t, ca), client: ca.Client()}
}

// get fetches u and fails the test unless the status is want.
func (f *fixture) get(t *testing.T, u string, want int) ([]byte, http.Header) {
	t.Helper()
	resp, err := f.client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d", u, resp.StatusCode, want)
	}
	return body, resp.Header
}

// getJSON fetches u, checks its Content-Type and decodes it into v.
func (f *fixture) getJSON(t *testing.T, u string, v any) {
	t.Helper()
	body, h := f.get(t, u, http.StatusOK)
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", u, ct)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// download fetches a download document the way a client would: discovery
// first, then the providers service.
func (f *fixture) download(t *testing.T, ns, typ, version, goos, arch string) (downloadDoc, string) {
	t.Helper()
	services := f.services(t)
	docURL := resolve(t, services, fmt.Sprintf("%s/%s/%s/download/%s/%s", ns, typ, version, goos, arch))
	var doc downloadDoc
	f.getJSON(t, docURL, &doc)
	return doc, docURL
}

// services returns the absolute providers.v1 URL found by discovery.
func (f *fixture) services(t *testing.T) string {
	t.Helper()
	discoURL := f.reg.URL + "/.well-known/terraform.json"
	var disco map[string]string
	f.getJSON(t, discoURL, &disco)
	return resolve(t, discoURL, disco["providers.v1"])
}

func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}

func sumOf(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// sumsLine returns the hash SHA256SUMS gives for name.
func sumsLine(t *testing.T, sums []byte, name string) string {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		hash, file, ok := strings.Cut(line, "  ")
		if ok && file == name {
			return hash
		}
	}
	t.Fatalf("SHA256SUMS has no line for %s:\n%s", name, sums)
	return ""
}

func checkSignature(armored string, sums, sig []byte) (*openpgp.Entity, error) {
	keyring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
	if err != nil {
		return nil, err
	}
	return openpgp.CheckDetachedSignature(keyring, bytes.NewReader(sums), bytes.NewReader(sig), nil)
}

func readZip(t *testing.T, data []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("read zip: %v", err)
	}
	return zr
}

func TestRegistryFields(t *testing.T) {
	f := newFixture(t)
	if !strings.HasPrefix(f.reg.URL, "https://127.0.0.1:") || strings.HasSuffix(f.reg.URL, "/") {
		t.Errorf("URL = %q", f.reg.URL)
	}
	if f.reg.ServicesURL != f.reg.URL+"/v1/providers/" {
		t.Errorf("ServicesURL = %q", f.reg.ServicesURL)
	}
	if len(f.reg.KeyID) != 16 || strings.ToUpper(f.reg.KeyID) != f.reg.KeyID {
		t.Errorf("KeyID = %q", f.reg.KeyID)
	}
	if !strings.HasPrefix(f.reg.ArmoredKey, "-----BEGIN PGP PUBLIC KEY BLOCK-----") {
		t.Errorf("ArmoredKey = %q", f.reg.ArmoredKey)
	}
	if got := f.services(t); got != f.reg.ServicesURL {
		t.Errorf("discovered services %q, want %q", got, f.reg.ServicesURL)
	}
}

func TestVersions(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64", "darwin_arm64")
	f.reg.AddWithOptions("hashicorp", "null", "3.2.2", Options{Protocols: []string{"6.0"}}, "windows_amd64")
	var doc versionsDoc
	f.getJSON(t, f.reg.ServicesURL+"hashicorp/null/versions", &doc)
	want := versionsDoc{Versions: []versionEntry{
		{Version: "3.2.1", Protocols: []string{"5.0"}, Platforms: []platformEntry{{OS: "darwin", Arch: "arm64"}, {OS: "linux", Arch: "amd64"}}},
		{Version: "3.2.2", Protocols: []string{"6.0"}, Platforms: []platformEntry{{OS: "windows", Arch: "amd64"}}},
	}}
	if fmt.Sprint(doc) != fmt.Sprint(want) {
		t.Errorf("versions = %+v, want %+v", doc, want)
	}
}

func TestDownloadAndVerify(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64", "darwin_arm64")
	doc, docURL := f.download(t, "hashicorp", "null", "3.2.1", "linux", "amd64")
	checkDownloadDoc(t, f.reg, doc)

	archive, h := f.get(t, resolve(t, docURL, doc.DownloadURL), http.StatusOK)
	if ct := h.Get("Content-Type"); ct != "application/zip" {
		t.Errorf("zip Content-Type %q", ct)
	}
	sums, _ := f.get(t, resolve(t, docURL, doc.ShasumsURL), http.StatusOK)
	sig, _ := f.get(t, resolve(t, docURL, doc.ShasumsSignatureURL), http.StatusOK)

	if !bytes.Equal(archive, f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")) {
		t.Error("served archive differs from Archive()")
	}
	if !bytes.Equal(sums, f.reg.SHA256SUMS("hashicorp", "null", "3.2.1")) {
		t.Error("served SHA256SUMS differs from SHA256SUMS()")
	}
	if got := sumOf(archive); got != doc.Shasum || got != sumsLine(t, sums, doc.Filename) {
		t.Errorf("archive sha256 %s, shasum %s, SHA256SUMS %s", got, doc.Shasum, sumsLine(t, sums, doc.Filename))
	}
	signer, err := checkSignature(doc.SigningKeys.GPGPublicKeys[0].ASCIIArmor, sums, sig)
	if err != nil {
		t.Fatalf("signature: %v", err)
	}
	if keyID(signer) != f.reg.KeyID {
		t.Errorf("signed by %s, want %s", keyID(signer), f.reg.KeyID)
	}
}

// TestAddArchives serves the archives given as they are, listed in a
// signed SHA256SUMS, next to the platforms Add made.
func TestAddArchives(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	given := []byte("PK\x05\x06" + strings.Repeat("\x00", 18)) // an empty zip
	f.reg.AddArchives("hashicorp", "null", "3.2.1", map[string][]byte{"darwin_arm64": given})
	doc, docURL := f.download(t, "hashicorp", "null", "3.2.1", "darwin", "arm64")
	archive, _ := f.get(t, resolve(t, docURL, doc.DownloadURL), http.StatusOK)
	sums := f.reg.SHA256SUMS("hashicorp", "null", "3.2.1")
	if !bytes.Equal(archive, given) || sumsLine(t, sums, doc.Filename) != sumOf(given) || doc.Shasum != sumOf(given) {
		t.Fatalf("served %q (shasum %s), want the archive given", archive, doc.Shasum)
	}
	if f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64") == nil {
		t.Fatal("the platform Add made is gone")
	}
	sig, _ := f.get(t, resolve(t, docURL, doc.ShasumsSignatureURL), http.StatusOK)
	if _, err := checkSignature(doc.SigningKeys.GPGPublicKeys[0].ASCIIArmor, sums, sig); err != nil {
		t.Fatalf("signature: %v", err)
	}
}

func checkDownloadDoc(t *testing.T, reg *Registry, doc downloadDoc) {
	t.Helper()
	base := "/releases/hashicorp/null/3.2.1/terraform-provider-null_3.2.1_"
	want := downloadDoc{
		Protocols:           []string{"5.0"},
		OS:                  "linux",
		Arch:                "amd64",
		Filename:            "terraform-provider-null_3.2.1_linux_amd64.zip",
		DownloadURL:         base + "linux_amd64.zip",
		ShasumsURL:          base + "SHA256SUMS",
		ShasumsSignatureURL: base + "SHA256SUMS.sig",
		Shasum:              doc.Shasum,
		SigningKeys:         signingKeys{GPGPublicKeys: []gpgKey{{KeyID: reg.KeyID, ASCIIArmor: reg.ArmoredKey}}},
	}
	if fmt.Sprint(doc) != fmt.Sprint(want) {
		t.Errorf("download doc\n got %+v\nwant %+v", doc, want)
	}
}

func TestDownloadDocJSON(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	body, _ := f.get(t, f.reg.ServicesURL+"hashicorp/null/3.2.1/download/linux/amd64", http.StatusOK)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	fields := []string{"protocols", "os", "arch", "filename", "download_url", "shasums_url",
		"shasums_signature_url", "shasum", "signing_keys"}
	for _, k := range fields {
		if _, ok := raw[k]; !ok {
			t.Errorf("download doc lacks %q", k)
		}
	}
	if len(raw) != len(fields) {
		t.Errorf("download doc has %d fields, want %d: %s", len(raw), len(fields), body)
	}
	for _, s := range []string{`"trust_signature":""`, `"source":""`, `"source_url":null`} {
		if !bytes.Contains(body, []byte(s)) {
			t.Errorf("download doc lacks %s", s)
		}
	}
}

func TestSHA256SUMS(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	f.reg.Add("hashicorp", "null", "3.2.1", "darwin_arm64")
	sums := f.reg.SHA256SUMS("hashicorp", "null", "3.2.1")
	manifest, _ := f.get(t, f.reg.URL+"/releases/hashicorp/null/3.2.1/terraform-provider-null_3.2.1_manifest.json", http.StatusOK)
	files := []struct {
		name string
		data []byte
	}{
		{"terraform-provider-null_3.2.1_darwin_arm64.zip", f.reg.Archive("hashicorp", "null", "3.2.1", "darwin_arm64")},
		{"terraform-provider-null_3.2.1_linux_amd64.zip", f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")},
		{"terraform-provider-null_3.2.1_manifest.json", manifest},
	}
	var want strings.Builder
	for _, file := range files {
		fmt.Fprintf(&want, "%s  %s\n", sumOf(file.data), file.name)
	}
	if string(sums) != want.String() {
		t.Errorf("SHA256SUMS\n%s\nwant\n%s", sums, want.String())
	}
	sig, _ := f.get(t, f.reg.URL+"/releases/hashicorp/null/3.2.1/terraform-provider-null_3.2.1_SHA256SUMS.sig", http.StatusOK)
	if _, err := checkSignature(f.reg.ArmoredKey, sums, sig); err != nil {
		t.Errorf("signature after adding a platform: %v", err)
	}
}

func TestManifest(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	f.getJSON(t, f.reg.URL+"/releases/hashicorp/null/3.2.1/terraform-provider-null_3.2.1_manifest.json", &m)
	if m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, []string{"5.0"}) {
		t.Errorf("manifest = %+v", m)
	}
}

func TestArchiveContent(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	zr := readZip(t, f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64"))
	if len(zr.File) != 1 {
		t.Fatalf("zip has %d entries, want 1", len(zr.File))
	}
	zf := zr.File[0]
	if zf.Name != "terraform-provider-null_v3.2.1" || zf.Mode().Perm() != 0o755 {
		t.Errorf("entry %s mode %v", zf.Name, zf.Mode())
	}
	body := readEntry(t, zf)
	if !strings.HasPrefix(string(body), "#!/bin/sh\n# fake provider hashicorp/null 3.2.1 linux_amd64\n") {
		t.Errorf("content starts %q", body[:60])
	}
	if len(body) < 2048 || zf.CompressedSize64 >= zf.UncompressedSize64 {
		t.Errorf("size %d compressed to %d", zf.UncompressedSize64, zf.CompressedSize64)
	}
}

func readEntry(t *testing.T, zf *zip.File) []byte {
	t.Helper()
	rc, err := zf.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestArchiveDeterministic(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	a.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64", "linux_arm64")
	b.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	first := a.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")
	if !bytes.Equal(first, b.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")) {
		t.Error("same Add gave different archives")
	}
	if bytes.Equal(first, a.reg.Archive("hashicorp", "null", "3.2.1", "linux_arm64")) {
		t.Error("different platforms gave the same archive")
	}
}

func TestDirEntries(t *testing.T) {
	f := newFixture(t)
	f.reg.AddWithOptions("hashicorp", "null", "3.2.1", Options{DirEntries: true}, "linux_amd64")
	zr := readZip(t, f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64"))
	var names []string
	for _, zf := range zr.File {
		names = append(names, zf.Name)
	}
	want := []string{"terraform-provider-null_v3.2.1", "docs/", "docs/README.md"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %q, want %q", names, want)
	}
	if !zr.File[1].Mode().IsDir() {
		t.Errorf("docs/ mode %v, want a directory", zr.File[1].Mode())
	}
}

func TestUnsigned(t *testing.T) {
	f := newFixture(t)
	f.reg.AddWithOptions("hashicorp", "null", "3.2.1", Options{Unsigned: true}, "linux_amd64")
	body, _ := f.get(t, f.reg.ServicesURL+"hashicorp/null/3.2.1/download/linux/amd64", http.StatusOK)
	if !bytes.Contains(body, []byte(`"signing_keys":{"gpg_public_keys":[]}`)) {
		t.Errorf("download doc %s", body)
	}
}

func TestTamperArchive(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64", "darwin_arm64")
	sums := f.reg.SHA256SUMS("hashicorp", "null", "3.2.1")
	f.reg.TamperArchive("hashicorp", "null", "3.2.1", "linux_amd64")

	want := f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")
	got := f.fetchZip(t, "linux", "amd64")
	if len(got) != len(want) || countDiff(got, want) != 1 {
		t.Errorf("tampered archive: %d bytes differ, lengths %d/%d", countDiff(got, want), len(got), len(want))
	}
	doc, _ := f.download(t, "hashicorp", "null", "3.2.1", "linux", "amd64")
	if doc.Shasum != sumOf(want) || !bytes.Equal(f.reg.SHA256SUMS("hashicorp", "null", "3.2.1"), sums) {
		t.Error("tampering changed shasum or SHA256SUMS")
	}
	if !bytes.Equal(f.fetchZip(t, "darwin", "arm64"), f.reg.Archive("hashicorp", "null", "3.2.1", "darwin_arm64")) {
		t.Error("tampering changed another platform")
	}
	f.reg.Reset()
	if !bytes.Equal(f.fetchZip(t, "linux", "amd64"), want) {
		t.Error("Reset did not restore the archive")
	}
}

// fetchZip downloads hashicorp/null 3.2.1 for a platform.
func (f *fixture) fetchZip(t *testing.T, goos, arch string) []byte {
	t.Helper()
	name := "terraform-provider-null_3.2.1_" + goos + "_" + arch + ".zip"
	body, _ := f.get(t, f.reg.URL+"/releases/hashicorp/null/3.2.1/"+name, http.StatusOK)
	return body
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestBadSignature(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	f.reg.BadSignature("hashicorp", "null", "3.2.1")

	doc, docURL := f.download(t, "hashicorp", "null", "3.2.1", "linux", "amd64")
	if doc.SigningKeys.GPGPublicKeys[0].KeyID != f.reg.KeyID {
		t.Errorf("bad signature changed advertised key to %s", doc.SigningKeys.GPGPublicKeys[0].KeyID)
	}
	sums, _ := f.get(t, resolve(t, docURL, doc.ShasumsURL), http.StatusOK)
	sig, _ := f.get(t, resolve(t, docURL, doc.ShasumsSignatureURL), http.StatusOK)
	if _, err := checkSignature(f.reg.ArmoredKey, sums, sig); !errors.Is(err, pgperrors.ErrUnknownIssuer) {
		t.Errorf("verify bad signature: err %v, want unknown issuer", err)
	}
	f.reg.Reset()
	sig, _ = f.get(t, resolve(t, docURL, doc.ShasumsSignatureURL), http.StatusOK)
	if _, err := checkSignature(f.reg.ArmoredKey, sums, sig); err != nil {
		t.Errorf("signature after Reset: %v", err)
	}
}

func TestShasumMismatch(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64", "darwin_arm64")
	sums := f.reg.SHA256SUMS("hashicorp", "null", "3.2.1")
	f.reg.ShasumMismatch("hashicorp", "null", "3.2.1", "linux_amd64")

	doc, _ := f.download(t, "hashicorp", "null", "3.2.1", "linux", "amd64")
	if doc.Shasum == sumsLine(t, sums, doc.Filename) || len(doc.Shasum) != 64 {
		t.Errorf("shasum %q still matches SHA256SUMS", doc.Shasum)
	}
	if !bytes.Equal(f.fetchZip(t, "linux", "amd64"), f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")) {
		t.Error("mismatch changed the archive")
	}
	other, _ := f.download(t, "hashicorp", "null", "3.2.1", "darwin", "arm64")
	if other.Shasum != sumsLine(t, sums, other.Filename) {
		t.Error("mismatch changed another platform")
	}
	f.reg.Reset()
	doc, _ = f.download(t, "hashicorp", "null", "3.2.1", "linux", "amd64")
	if doc.Shasum != sumsLine(t, sums, doc.Filename) {
		t.Error("Reset did not restore shasum")
	}
}

func TestNotFound(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	for _, p := range []string{
		"/v1/providers/hashicorp/random/versions",
		"/v1/providers/hashicorp/null/9.9.9/download/linux/amd64",
		"/v1/providers/hashicorp/null/3.2.1/download/linux/arm64",
		"/releases/hashicorp/null/3.2.1/terraform-provider-null_3.2.1_linux_arm64.zip",
		"/releases/hashicorp/null/9.9.9/terraform-provider-null_9.9.9_SHA256SUMS",
		"/releases/hashicorp/null/3.2.1/other",
		"/nothing",
	} {
		f.get(t, f.reg.URL+p, http.StatusNotFound)
	}
}

func TestRequests(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	f.download(t, "hashicorp", "null", "3.2.1", "linux", "amd64")
	f.get(t, f.reg.URL+"/nothing", http.StatusNotFound)
	want := []string{
		"GET /.well-known/terraform.json",
		"GET /v1/providers/hashicorp/null/3.2.1/download/linux/amd64",
		"GET /nothing",
	}
	if got := f.reg.Requests(); !slices.Equal(got, want) {
		t.Errorf("Requests() = %q, want %q", got, want)
	}
}

func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	var wg sync.WaitGroup
	zipURL := f.reg.URL + "/releases/hashicorp/null/3.2.1/terraform-provider-null_3.2.1_linux_amd64.zip"
	for range 8 {
		wg.Go(func() {
			resp, err := f.client.Get(zipURL)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			f.reg.Add("hashicorp", "null", "3.2.1", "darwin_arm64")
			f.reg.TamperArchive("hashicorp", "null", "3.2.1", "darwin_arm64")
		})
	}
	wg.Wait()
	if n := len(f.reg.Requests()); n != 8 {
		t.Errorf("%d requests recorded, want 8", n)
	}
}
