package fakeregistry

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
)

// The provider type and version every fault test below serves; each test
// has its own namespace.
const (
	typ, ver = "null", "3.2.1"
	platform = "linux_amd64"
)

// TestFaults runs the fault tests one after the other on one registry
// (making its RSA key is the slow part), each with its own namespace so its
// paths, faults and counters are its own, and a Reset after it.
func TestFaults(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		test func(t *testing.T, f *fixture, ns string)
	}{
		{"Paths", testPaths},
		{"FailTimes", testFailTimes},
		{"RateLimit", testRateLimit},
		{"QueuedFaults", testQueuedFaults},
		{"ResetMidBody", testResetMidBody},
		{"Truncate", testTruncate},
		{"Stall", testStall},
		{"StallCancel", testStallCancel},
		{"RedirectLoop", testRedirectLoop},
		{"EndlessJSON", testEndlessJSON},
		{"SignWithAdvertisedKey", testSignWithAdvertisedKey},
		{"PathTraversalFilename", testPathTraversalFilename},
		{"AddZipBomb", testAddZipBomb},
		{"AddManyEntries", testAddManyEntries},
		{"AddWithSize", testAddWithSize},
		{"Accounting", testAccounting},
		{"ArchiveDelay", testArchiveDelay},
		{"ConcurrentFaults", testConcurrentFaults},
		{"ConcurrentSetters", testConcurrentSetters},
		{"ResetClearsTransportFaults", testResetClearsTransportFaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() {
				f.reg.Reset()
				f.reg.OnBytes(nil)
			})
			tc.test(t, f, strings.ToLower(tc.name))
		})
	}
}

// publish publishes ns/typ ver for platform and darwin_arm64, with archives
// of size bytes (0: as Add makes them).
func publish(f *fixture, ns string, size int) {
	if size > 0 {
		f.reg.AddWithSize(ns, typ, ver, size, platform, "darwin_arm64")
	} else {
		f.reg.Add(ns, typ, ver, platform, "darwin_arm64")
	}
}

// fetch GETs path on the registry and reads the whole body; it fails the
// test only if the request itself fails.
func (f *fixture) fetch(t *testing.T, path string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// fetchOK GETs path and fails the test unless it gets 200 and a whole body.
func (f *fixture) fetchOK(t *testing.T, path string) []byte {
	t.Helper()
	resp, body, err := f.fetch(t, path)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, err %v", path, resp.StatusCode, err)
	}
	return body
}

func testPaths(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	doc, docURL := f.download(t, ns, typ, ver, "linux", "amd64")
	for _, c := range []struct{ got, want string }{
		{DiscoveryPath, "/.well-known/terraform.json"},
		{VersionsPath(ns, typ), "/v1/providers/" + ns + "/null/versions"},
		{f.reg.URL + DownloadDocPath(ns, typ, ver, platform), docURL},
		{ArchivePath(ns, typ, ver, platform), doc.DownloadURL},
		{SumsPath(ns, typ, ver), doc.ShasumsURL},
		{SignaturePath(ns, typ, ver), doc.ShasumsSignatureURL},
	} {
		if c.got != c.want {
			t.Errorf("path %q, want %q", c.got, c.want)
		}
	}
	f.fetchOK(t, VersionsPath(ns, typ))
}

func testFailTimes(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	path := ArchivePath(ns, typ, ver, platform)
	f.reg.FailTimes(path, http.StatusServiceUnavailable, 2)
	for i := range 2 {
		resp, body, err := f.fetch(t, path)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || len(body) == 0 || len(body) > 100 {
			t.Fatalf("request %d: status %d, %d bytes, err %v", i, resp.StatusCode, len(body), err)
		}
	}
	f.fetchOK(t, ArchivePath(ns, typ, ver, "darwin_arm64")) // other paths unaffected
	if got := f.fetchOK(t, path); !bytes.Equal(got, f.reg.Archive(ns, typ, ver, platform)) {
		t.Error("third request did not get the archive")
	}
	if n := f.reg.RequestCount(path); n != 3 {
		t.Errorf("RequestCount = %d, want 3", n)
	}
	// Faults for paths nothing serves still apply.
	f.reg.FailTimes("/nothing", http.StatusBadGateway, 1)
	if resp, _, _ := f.fetch(t, "/nothing"); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("unknown path: status %d, want 502", resp.StatusCode)
	}
}

func testRateLimit(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	path := DownloadDocPath(ns, typ, ver, platform)
	f.reg.RateLimit(path, 1, "7")
	resp, _, err := f.fetch(t, path)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("status %d, Retry-After %q, err %v", resp.StatusCode, resp.Header.Get("Retry-After"), err)
	}
	f.fetchOK(t, path)
}

// TestQueuedFaults checks that counted faults on a path apply one after
// the other, in the order set, and compose with content faults.
func testQueuedFaults(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 64<<10)
	path := ArchivePath(ns, typ, ver, platform)
	archive := f.reg.Archive(ns, typ, ver, platform)
	f.reg.TamperArchive(ns, typ, ver, platform)
	f.reg.FailTimes(path, http.StatusInternalServerError, 1)
	f.reg.RateLimit(path, 1, "1")
	f.reg.Truncate(path, 1)
	f.reg.Stall(path, 1, 10*time.Millisecond)
	for _, want := range []int{500, 429} {
		if resp, _, _ := f.fetch(t, path); resp.StatusCode != want {
			t.Errorf("status %d, want %d", resp.StatusCode, want)
		}
	}
	if _, body, err := f.fetch(t, path); !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != len(archive)/2 {
		t.Errorf("truncated: %d bytes, err %v", len(body), err)
	}
	if got := f.fetchOK(t, path); !bytes.Equal(got, tamper(archive)) {
		t.Error("stalled response is not the tampered archive")
	}
	f.reg.Reset()
	if got := f.fetchOK(t, path); !bytes.Equal(got, archive) {
		t.Error("archive after Reset differs")
	}
}

func testResetMidBody(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 256<<10)
	path := ArchivePath(ns, typ, ver, platform)
	archive := f.reg.Archive(ns, typ, ver, platform)
	f.reg.ResetMidBody(path, 1)
	resp, body, err := f.fetch(t, path)
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(archive)) {
		t.Errorf("status %d, Content-Length %d, want 200, %d", resp.StatusCode, resp.ContentLength, len(archive))
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read body: %v, want connection reset", err)
	}
	if len(body) > len(archive)/2 || !bytes.Equal(body, archive[:len(body)]) {
		t.Errorf("got %d bytes, want at most %d of the archive", len(body), len(archive)/2)
	}
	if n := f.reg.BytesServed(path); n != int64(len(archive)/2) {
		t.Errorf("BytesServed = %d, want %d", n, len(archive)/2)
	}
	f.fetchOK(t, path)
}

func testTruncate(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	path := SumsPath(ns, typ, ver)
	sums := f.reg.SHA256SUMS(ns, typ, ver)
	f.reg.Truncate(path, 2)
	for range 2 {
		resp, body, err := f.fetch(t, path)
		if !errors.Is(err, io.ErrUnexpectedEOF) || resp.ContentLength != int64(len(sums)) ||
			!bytes.Equal(body, sums[:len(sums)/2]) {
			t.Errorf("Content-Length %d, body %q, err %v", resp.ContentLength, body, err)
		}
	}
	if got := f.fetchOK(t, path); !bytes.Equal(got, sums) {
		t.Error("SHA256SUMS after the faults differs")
	}
}

func testStall(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 64<<10)
	path := ArchivePath(ns, typ, ver, platform)
	archive := f.reg.Archive(ns, typ, ver, platform)
	const d = 150 * time.Millisecond
	f.reg.Stall(path, 1, d)

	start := time.Now()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.URL+path, nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	half := make([]byte, len(archive)/2)
	if _, err := io.ReadFull(resp.Body, half); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= d {
		t.Errorf("first half took %v, want it before the stall of %v", took, d)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(append(half, rest...), archive) {
		t.Fatalf("body differs, err %v", err)
	}
	if took := time.Since(start); took < d {
		t.Errorf("body took %v, want at least %v", took, d)
	}
}

// testStallCancel checks that a client can leave a stalled response.
func testStallCancel(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 64<<10)
	path := ArchivePath(ns, typ, ver, platform)
	f.reg.Stall(path, 1, time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.reg.URL+path, nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}
	f.fetchOK(t, path)
}

// TestSlowHandlersDoNotHoldClose checks that the end of a test stops
// stalled, delayed and endless responses whose clients are still there.
func TestSlowHandlersDoNotHoldClose(t *testing.T) {
	t.Parallel()
	start := time.Now()
	t.Run("registry", func(t *testing.T) {
		f := newFixture(t)
		const ns = "slow"
		publish(f, ns, 64<<10)
		f.reg.Stall(ArchivePath(ns, typ, ver, platform), 1, time.Hour)
		f.reg.SetArchiveDelay(time.Hour)
		f.reg.EndlessJSON(VersionsPath(ns, typ))
		for _, p := range []string{
			ArchivePath(ns, typ, ver, platform), ArchivePath(ns, typ, ver, "darwin_arm64"), VersionsPath(ns, typ),
		} {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, f.reg.URL+p, nil)
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			// Left open and unread until the registry is closed.
			t.Cleanup(func() { resp.Body.Close() })
		}
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("slow handlers held the end of the test for %v", took)
	}
}

func testRedirectLoop(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	path := VersionsPath(ns, typ)
	f.reg.RedirectLoop(path)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.URL+path+"?q=1", nil)
	_, err := f.client.Do(req)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("GET: %v, want too many redirects", err)
	}
	if n := f.reg.RequestCount(path); n != 10 {
		t.Errorf("RequestCount = %d, want 10", n)
	}

	noFollow := *f.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != path+"?q=1" {
		t.Errorf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	f.reg.Reset()
	f.fetchOK(t, path)
}

func testEndlessJSON(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	path := VersionsPath(ns, typ)
	f.reg.EndlessJSON(path)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.URL+path, nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
		t.Errorf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	const limit = 1 << 20
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body.Close()
	if err != nil || len(body) != limit {
		t.Fatalf("read %d bytes, err %v", len(body), err)
	}
	rest, ok := strings.CutPrefix(string(body), `{"versions":[`)
	if !ok || !strings.HasPrefix(rest, strings.Repeat(`{"version":"1.0.0"},`, 100)) {
		t.Errorf("body starts %q", body[:100])
	}
	// The handler stops once the client has gone.
	var last int64 = -1
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := f.reg.BytesServed(path)
		if n == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still writing: %d bytes served", n)
		}
		last = n
	}
	f.reg.Reset()
	f.fetchOK(t, path)
}

func testSignWithAdvertisedKey(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	f.reg.Add(ns, typ, "3.2.2", platform)
	if len(f.reg.OtherKeyID) != 16 || f.reg.OtherKeyID == f.reg.KeyID ||
		!strings.HasPrefix(f.reg.OtherArmoredKey, "-----BEGIN PGP PUBLIC KEY BLOCK-----") {
		t.Fatalf("OtherKeyID %q, KeyID %q", f.reg.OtherKeyID, f.reg.KeyID)
	}
	f.reg.SignWithAdvertisedKey(ns, typ, ver)

	signer := func(version string) (string, error) {
		doc, docURL := f.download(t, ns, typ, version, "linux", "amd64")
		sums := f.fetchOK(t, SumsPath(ns, typ, version))
		sig := f.fetchOK(t, SignaturePath(ns, typ, version))
		if resolve(t, docURL, doc.ShasumsSignatureURL) != f.reg.URL+SignaturePath(ns, typ, version) {
			t.Errorf("signature URL %s", doc.ShasumsSignatureURL)
		}
		key := doc.SigningKeys.GPGPublicKeys[0]
		e, err := checkSignature(key.ASCIIArmor, sums, sig)
		if err != nil {
			return key.KeyID, err
		}
		if keyID(e) != key.KeyID {
			t.Errorf("signed by %s, advertised %s", keyID(e), key.KeyID)
		}
		return key.KeyID, nil
	}
	if id, err := signer(ver); err != nil || id != f.reg.OtherKeyID {
		t.Errorf("faulted version: advertised %s, verify %v; want %s", id, err, f.reg.OtherKeyID)
	}
	if id, err := signer("3.2.2"); err != nil || id != f.reg.KeyID {
		t.Errorf("other version: advertised %s, verify %v; want %s", id, err, f.reg.KeyID)
	}
	// With BadSignature too, the signature is by the key not advertised.
	f.reg.BadSignature(ns, typ, ver)
	if id, err := signer(ver); id != f.reg.OtherKeyID || !errors.Is(err, pgperrors.ErrUnknownIssuer) {
		t.Errorf("with BadSignature: advertised %s, verify %v", id, err)
	}
	f.reg.Reset()
	if id, err := signer(ver); err != nil || id != f.reg.KeyID {
		t.Errorf("after Reset: advertised %s, verify %v", id, err)
	}
}

func testPathTraversalFilename(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	sums := f.reg.SHA256SUMS(ns, typ, ver)
	archive := f.reg.Archive(ns, typ, ver, platform)
	for _, name := range []string{"../../evil.zip", "/etc/passwd", "a/b.zip", `..\x.zip`} {
		f.reg.PathTraversalFilename(ns, typ, ver, platform, name)
		doc, docURL := f.download(t, ns, typ, ver, "linux", "amd64")
		if doc.Filename != name {
			t.Errorf("filename %q, want %q", doc.Filename, name)
		}
		served := f.fetchOK(t, SumsPath(ns, typ, ver))
		if sumsLine(t, served, name) != doc.Shasum || doc.Shasum != sumOf(archive) {
			t.Errorf("SHA256SUMS does not list the archive as %q:\n%s", name, served)
		}
		if bytes.Contains(served, []byte(zipName(typ, ver, platform))) {
			t.Errorf("SHA256SUMS still lists the archive's own name:\n%s", served)
		}
		sig := f.fetchOK(t, SignaturePath(ns, typ, ver))
		if _, err := checkSignature(f.reg.ArmoredKey, served, sig); err != nil {
			t.Errorf("signature of served SHA256SUMS: %v", err)
		}
		if got := f.fetchOK(t, resolve(t, docURL, doc.DownloadURL)[len(f.reg.URL):]); !bytes.Equal(got, archive) {
			t.Error("download_url does not serve the archive")
		}
		other, _ := f.download(t, ns, typ, ver, "darwin", "arm64")
		if other.Filename != zipName(typ, ver, "darwin_arm64") {
			t.Errorf("other platform's filename %q", other.Filename)
		}
		f.reg.Reset()
		if !bytes.Equal(f.fetchOK(t, SumsPath(ns, typ, ver)), sums) {
			t.Error("SHA256SUMS after Reset differs")
		}
	}
}

// checkRelease checks that ns/typ ver's archive for platform is served,
// listed in SHA256SUMS and signed, and returns it opened.
func checkRelease(t *testing.T, f *fixture, ns, platform string) (*zip.Reader, []byte) {
	t.Helper()
	goos, arch, _ := strings.Cut(platform, "_")
	doc, docURL := f.download(t, ns, typ, ver, goos, arch)
	archive := f.fetchOK(t, resolve(t, docURL, doc.DownloadURL)[len(f.reg.URL):])
	sums := f.fetchOK(t, SumsPath(ns, typ, ver))
	sig := f.fetchOK(t, SignaturePath(ns, typ, ver))
	if sumOf(archive) != doc.Shasum || sumsLine(t, sums, doc.Filename) != doc.Shasum {
		t.Errorf("%s: archive not listed in SHA256SUMS", platform)
	}
	if _, err := checkSignature(f.reg.ArmoredKey, sums, sig); err != nil {
		t.Errorf("%s: signature: %v", platform, err)
	}
	return readZip(t, archive), archive
}

func testAddZipBomb(t *testing.T, f *fixture, ns string) {
	const size = 8 << 20
	f.reg.AddZipBomb(ns, typ, ver, size, platform, "darwin_arm64")
	for _, p := range []string{platform, "darwin_arm64"} {
		zr, archive := checkRelease(t, f, ns, p)
		if len(archive)*500 > size || len(zr.File) != 1 {
			t.Fatalf("%d bytes, %d entries", len(archive), len(zr.File))
		}
		zf := zr.File[0]
		if zf.Name != "terraform-provider-null_v3.2.1" || zf.UncompressedSize64 != size || zf.Method != zip.Deflate {
			t.Errorf("entry %s: %d bytes, method %d", zf.Name, zf.UncompressedSize64, zf.Method)
		}
	}
	zr := readZip(t, f.reg.Archive(ns, typ, ver, platform))
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(zeroChecker{}, rc)
	if err != nil || n != size {
		t.Errorf("extracted %d bytes, err %v", n, err)
	}
}

// zeroChecker is a writer that fails on anything but zero bytes.
type zeroChecker struct{}

func (zeroChecker) Write(p []byte) (int, error) {
	for i, b := range p {
		if b != 0 {
			return i, errors.New("non-zero byte")
		}
	}
	return len(p), nil
}

func testAddManyEntries(t *testing.T, f *fixture, ns string) {
	f.reg.AddManyEntries(ns, typ, ver, 5000, platform)
	zr, archive := checkRelease(t, f, ns, platform)
	if len(zr.File) != 5000 || zr.File[0].Name != "terraform-provider-null_v3.2.1" {
		t.Fatalf("%d entries, first %s", len(zr.File), zr.File[0].Name)
	}
	if len(archive) > 5000*200 {
		t.Errorf("archive of %d bytes", len(archive))
	}
	if body := readEntry(t, zr.File[4999]); len(body) > 8 {
		t.Errorf("last entry %s has %d bytes", zr.File[4999].Name, len(body))
	}
}

func testAddWithSize(t *testing.T, f *fixture, ns string) {
	const size = 1 << 20
	f.reg.AddWithSize(ns, typ, ver, size, platform, "darwin_arm64")
	zr, archive := checkRelease(t, f, ns, platform)
	if len(archive) != size || len(zr.File) != 1 {
		t.Fatalf("%d bytes, %d entries", len(archive), len(zr.File))
	}
	zf := zr.File[0]
	if zf.Name != "terraform-provider-null_v3.2.1" || zf.Mode().Perm() != 0o755 {
		t.Errorf("entry %s mode %v", zf.Name, zf.Mode())
	}
	body := readEntry(t, zf)
	if !bytes.HasPrefix(body, []byte("#!/bin/sh\n# fake provider "+ns+"/null 3.2.1 linux_amd64\n")) {
		t.Errorf("content starts %q", body[:60])
	}
	var deflated bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestSpeed)
	fw.Write(body)
	fw.Close()
	if deflated.Len() < len(body)*99/100 {
		t.Errorf("content deflates from %d to %d bytes", len(body), deflated.Len())
	}
	other := f.reg.Archive(ns, typ, ver, "darwin_arm64")
	if len(other) != size || bytes.Equal(other, archive) {
		t.Error("platforms share an archive")
	}
	if again, err := sizedArchive(ns, typ, ver, platform, size); err != nil || !bytes.Equal(again, archive) {
		t.Errorf("AddWithSize is not deterministic (%v)", err)
	}
	f.reg.AddWithSize(ns, typ, "0.0.1", 10, platform)
	if n := len(f.reg.Archive(ns, typ, "0.0.1", platform)); n < 10 || n > 300 {
		t.Errorf("tiny archive of %d bytes", n)
	}
}

func testAccounting(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 100<<10)
	path := ArchivePath(ns, typ, ver, platform)
	archive := f.reg.Archive(ns, typ, ver, platform)
	var mu sync.Mutex
	var totals []int64
	f.reg.OnBytes(func(total int64) {
		f.reg.RequestCount(path) // the hook may call the registry
		mu.Lock()
		totals = append(totals, total)
		mu.Unlock()
	})
	f.fetchOK(t, path)
	f.fetchOK(t, path)
	f.fetchOK(t, SumsPath(ns, typ, ver)) // not an archive: no hook call
	f.fetch(t, "/nothing/"+ns)

	if n := f.reg.RequestCount(path); n != 2 {
		t.Errorf("RequestCount = %d, want 2", n)
	}
	if n := f.reg.RequestCount("/nothing/" + ns); n != 1 {
		t.Errorf("RequestCount(/nothing/...) = %d, want 1", n)
	}
	if n := f.reg.BytesServed(path); n != 2*int64(len(archive)) {
		t.Errorf("BytesServed = %d, want %d", n, 2*len(archive))
	}
	if n := f.reg.BytesServed(SumsPath(ns, typ, ver)); n != int64(len(f.reg.SHA256SUMS(ns, typ, ver))) {
		t.Errorf("BytesServed(SHA256SUMS) = %d", n)
	}
	// Totals count every archive byte the registry served, earlier tests'
	// too: check the steps.
	chunks := (len(archive) + chunkSize - 1) / chunkSize
	mu.Lock()
	got := slices.Clone(totals)
	mu.Unlock()
	if len(got) != 2*chunks {
		t.Fatalf("%d hook calls, want %d", len(got), 2*chunks)
	}
	var want []int64
	for download := range 2 {
		for k := 1; k <= chunks; k++ {
			want = append(want, got[0]-chunkSize+int64(download*len(archive)+min(k*chunkSize, len(archive))))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("hook totals %v, want %v", got, want)
	}
	f.reg.OnBytes(nil)
	f.fetchOK(t, path)
	mu.Lock()
	defer mu.Unlock()
	if len(totals) != len(got) {
		t.Error("hook called after OnBytes(nil)")
	}
}

func testArchiveDelay(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 64<<10+1) // 5 chunks: 4 pauses
	path := ArchivePath(ns, typ, ver, platform)
	const d = 25 * time.Millisecond
	f.reg.SetArchiveDelay(d)
	start := time.Now()
	f.fetchOK(t, path)
	if took := time.Since(start); took < 4*d {
		t.Errorf("archive took %v, want at least %v", took, 4*d)
	}
	// Other responses do not pause (an hour would time the test out).
	f.reg.SetArchiveDelay(time.Hour)
	f.fetchOK(t, SumsPath(ns, typ, ver))
	f.fetchOK(t, VersionsPath(ns, typ))
	f.reg.Reset()
	f.fetchOK(t, path)
}

// testConcurrentFaults checks that a counted fault is used up exactly once
// per request when requests race.
func testConcurrentFaults(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	path := ArchivePath(ns, typ, ver, platform)
	f.reg.FailTimes(path, http.StatusServiceUnavailable, 5)
	// A connection each, so that no dial is left over when requests finish.
	client := *f.client
	tr := f.client.Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	client.Transport = tr
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.URL+path, nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				failed.Add(1)
			}
		})
		wg.Go(func() { f.reg.RateLimit("/elsewhere", 1, "1") })
	}
	wg.Wait()
	if n := failed.Load(); n != 5 {
		t.Errorf("%d requests failed, want 5", n)
	}
}

// testConcurrentSetters switches faults and resets them while requests are
// served, for the race detector.
func testConcurrentSetters(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			f.reg.TamperArchive(ns, typ, ver, platform)
			f.reg.BadSignature(ns, typ, ver)
			f.reg.ShasumMismatch(ns, typ, ver, platform)
			f.reg.SignWithAdvertisedKey(ns, typ, ver)
			f.reg.PathTraversalFilename(ns, typ, ver, platform, "../x.zip")
			f.reg.Truncate("/elsewhere", 1)
			f.reg.EndlessJSON("/elsewhere")
			f.reg.SetArchiveDelay(0)
			f.reg.Reset()
		})
		wg.Go(func() {
			for _, p := range []string{DownloadDocPath(ns, typ, ver, platform), SumsPath(ns, typ, ver), SignaturePath(ns, typ, ver)} {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.URL+p, nil)
				resp, err := f.client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s: status %d", p, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
}

func testResetClearsTransportFaults(t *testing.T, f *fixture, ns string) {
	publish(f, ns, 0)
	paths := []string{
		VersionsPath(ns, typ), DownloadDocPath(ns, typ, ver, platform), ArchivePath(ns, typ, ver, platform),
		SumsPath(ns, typ, ver), SignaturePath(ns, typ, ver), DiscoveryPath,
	}
	for i, p := range paths {
		f.reg.FailTimes(p, 500, 3)
		f.reg.RateLimit(p, 3, "1")
		f.reg.ResetMidBody(p, 3)
		f.reg.Truncate(p, 3)
		f.reg.Stall(p, 3, time.Hour)
		if i%2 == 0 {
			f.reg.RedirectLoop(p)
		} else {
			f.reg.EndlessJSON(p)
		}
	}
	f.reg.SetArchiveDelay(time.Hour)
	f.reg.Reset()
	for _, p := range paths {
		f.fetchOK(t, p)
	}
}
