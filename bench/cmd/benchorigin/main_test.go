package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1234": 1234, "5.5M": 5_500_000, "2K": 2000, "1G": 1e9, "1Mi": 1 << 20, "30MB": 30e6} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1", "1X", "inf"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}

func TestSizesFor(t *testing.T) {
	sizes, err := sizesFor("5M-200M", 24, 1)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := sizes[0], sizes[0]
	for _, s := range sizes {
		lo, hi = min(lo, s), max(hi, s)
	}
	if lo != 5e6 || hi < 199e6 || hi > 200e6 {
		t.Errorf("range 5M-200M over 24 gives [%d, %d]", lo, hi)
	}
	if sizes[len(sizes)-1] == hi {
		t.Errorf("sizes are not shuffled: %v", sizes)
	}
	again, _ := sizesFor("5M-200M", 24, 1)
	if !slices.Equal(sizes, again) {
		t.Errorf("sizes are not deterministic")
	}
	list, err := sizesFor("1M,2M", 3, 1)
	if err != nil || !slices.Equal(list, []int64{1e6, 2e6, 1e6}) {
		t.Errorf("list 1M,2M over 3 gives %v, %v", list, err)
	}
	for _, bad := range []string{"2M-1M", "0-1M", "1M,0", "x"} {
		if _, err := sizesFor(bad, 2, 1); err == nil {
			t.Errorf("sizesFor(%q): no error", bad)
		}
	}
}

func testSpec() Spec {
	return Spec{
		Generator: generatorVersion, Namespace: "bench", Providers: 2, Versions: 2,
		Platforms: []string{"linux_amd64", "darwin_arm64"}, Sizes: "100K-300K", Seed: 7,
	}
}

func TestCorpusIsDeterministicAndCached(t *testing.T) {
	spec := testSpec()
	a, err := loadOrGenerate(t.TempDir(), spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	b, err := loadOrGenerate(cache, spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Packages) != 8 || len(b.Packages) != 8 {
		t.Fatalf("got %d and %d packages, want 8", len(a.Packages), len(b.Packages))
	}
	for i := range a.Packages {
		if a.Packages[i].SHA256 != b.Packages[i].SHA256 {
			t.Errorf("%s differs between two generations", a.Packages[i].File)
		}
		p := a.Packages[i]
		if p.Size < 100e3 || p.Size > 400e3 {
			t.Errorf("%s: %d bytes, want about 100-300 KB", p.File, p.Size)
		}
		if ratio := float64(p.Size) / float64(p.Unpacked); ratio < 0.35 || ratio > 0.75 {
			t.Errorf("%s: compressed to %.2f of its size, want about half", p.File, ratio)
		}
		checkZip(t, filepath.Join(a.Dir, p.File), "terraform-provider-"+p.Type+"_v"+p.Version)
	}
	c, err := loadOrGenerate(cache, spec, io.Discard)
	if err != nil || c.Dir != b.Dir {
		t.Fatalf("second load: %v, dir %q, want the cached %q", err, c.Dir, b.Dir)
	}
}

func checkZip(t *testing.T, path, entry string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != entry || zr.File[0].Mode().Perm() != 0o755 {
		t.Fatalf("%s: unexpected entries", path)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestOriginServesTheRegistryProtocol(t *testing.T) {
	c, err := loadOrGenerate(t.TempDir(), testSpec(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSigner()
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOrigin(c, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(o)
	defer srv.Close()

	var versions versionsDoc
	getJSON(t, srv.URL+"/v1/providers/bench/p2/versions", &versions)
	if len(versions.Versions) != 2 || versions.Versions[1].Version != "1.1.0" || len(versions.Versions[1].Platforms) != 2 {
		t.Fatalf("versions: %+v", versions)
	}
	var doc downloadDoc
	getJSON(t, srv.URL+"/v1/providers/bench/p2/1.1.0/download/darwin/arm64", &doc)
	if doc.Filename != "terraform-provider-p2_1.1.0_darwin_arm64.zip" || !strings.HasPrefix(doc.DownloadURL, "/releases/") {
		t.Fatalf("download document: %+v", doc)
	}
	if len(doc.SigningKeys.GPGPublicKeys) != 1 || doc.SigningKeys.GPGPublicKeys[0].KeyID != s.KeyID {
		t.Fatalf("signing keys: %+v", doc.SigningKeys)
	}

	archive := get(t, srv.URL+doc.DownloadURL, "")
	sum := sha256.Sum256(archive)
	if hex.EncodeToString(sum[:]) != doc.Shasum {
		t.Fatalf("archive digest differs from the download document's shasum")
	}
	sums := get(t, srv.URL+doc.ShasumsURL, "")
	if !bytes.Contains(sums, []byte(doc.Shasum+"  "+doc.Filename+"\n")) {
		t.Fatalf("SHA256SUMS does not list the archive:\n%s", sums)
	}
	keyring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(doc.SigningKeys.GPGPublicKeys[0].ASCIIArmor))
	if err != nil {
		t.Fatal(err)
	}
	sig := get(t, srv.URL+doc.ShasumsSignatureURL, "")
	if _, err := openpgp.CheckDetachedSignature(keyring, bytes.NewReader(sums), bytes.NewReader(sig), nil); err != nil {
		t.Fatalf("signature: %v", err)
	}

	part := get(t, srv.URL+doc.DownloadURL, "bytes=100-199")
	if !bytes.Equal(part, archive[100:200]) {
		t.Fatalf("range request served other bytes")
	}
	var st Stats
	getJSON(t, srv.URL+"/_stats", &st)
	want := Stats{
		Requests: 6, ArchiveRequests: 2, RangeRequests: 1, ArchiveBytes: int64(len(archive)) + 100,
		VersionsRequests: 1, DownloadRequests: 1, SumsRequests: 2,
	}
	st.Bytes = 0
	if st != want {
		t.Fatalf("stats = %+v, want %+v", st, want)
	}
}

func get(t *testing.T, url, rangeHeader string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rangeHeader != "" {
		req.Header.Set("Range", rangeHeader)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal(get(t, url, ""), v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func TestPacedConnCapsTheRate(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	const rate, size = 4e6, 400_000 // 0.1 s at the capped rate
	paced := &pacedConn{Conn: server, rate: rate}
	go func() {
		defer paced.Close()
		_, _ = paced.Write(make([]byte, size))
	}()
	start := time.Now()
	n, err := io.Copy(io.Discard, client)
	elapsed := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	// A burst and one write may go ahead of the schedule.
	if minimum := time.Duration(float64(size-pacingBurst-pacingChunk) / rate * float64(time.Second)); elapsed < minimum*9/10 {
		t.Fatalf("%d bytes took %s, want at least %s", size, elapsed, minimum)
	}
}

func TestWriteStateNamesEverything(t *testing.T) {
	c, err := loadOrGenerate(t.TempDir(), testSpec(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	info := map[string]string{"ORIGIN_URL": "https://127.0.0.1:1"}
	if err := writeState(dir, c, "https://127.0.0.1:1", []byte("pem"), info); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"origin.env":   "ORIGIN_URL=https://127.0.0.1:1\n",
		"tfmirror.hcl": "provider \"bench/p2\" {\n  newest = 2\n}",
		"tofu/main.tf": "source  = \"registry.opentofu.org/bench/p1\"\n      version = \"= 1.1.0\"",
		"tofu.tfrc":    `"providers.v1" = "https://127.0.0.1:1/v1/providers/"`,
		"urls.txt":     "https://127.0.0.1:1/releases/bench/p1/1.0.0/terraform-provider-p1_1.0.0_linux_amd64.zip\n",
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, data)
		}
	}
}
