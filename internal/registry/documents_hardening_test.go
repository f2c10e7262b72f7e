package registry_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/mirror"
)

// TestHostileDocuments reads documents of a hostile registry through the
// real client: none may panic, each refusal names what is wrong.
func TestHostileDocuments(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.AddWithOptions("hashicorp", "huge", "1.0.0", fakeregistry.Options{Protocols: []string{"99999999999999999999999"}}, "linux_amd64")
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	c := newClient(t, ca, nil, nil)
	host := fakeHost(reg)

	// The protocol number overflows every integer type; it used to panic
	// inside the version library, in a build goroutine.
	_, err := c.PackageMeta(ctx(t), provider(host, "hashicorp", "huge"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
	wantErrContains(t, err, "the package speaks plugin protocols 99999999999999999999999")

	// OpenTofu 1.12's packages field announces the archive's size.
	reg.AnnouncePackages()
	meta, err := c.PackageMeta(ctx(t), provider(host, "hashicorp", "foo"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
	if err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}
	if want := int64(len(reg.Archive("hashicorp", "foo", "1.0.0", "linux_amd64"))); meta.Size != want {
		t.Errorf("Size = %d, want the announced %d", meta.Size, want)
	}
}

// TestPackagesField checks the packages field as OpenTofu does: a listed
// package has a positive size and no zh: other than the shasum field's.
func TestPackagesField(t *testing.T) {
	ca := testca.New(t)
	const sum = "5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a"
	doc := func(packages string) string {
		return `{"protocols":["5.0"],"os":"linux","arch":"amd64","filename":"p.zip","download_url":"p.zip",
"shasums_url":"s","shasums_signature_url":"s.sig","shasum":"` + sum + `","signing_keys":{"gpg_public_keys":[]},"packages":` + packages + `}`
	}
	for _, tt := range []struct {
		packages string
		size     int64
		want     string
	}{
		{`{"linux_amd64":{"hashes":["zh:` + sum + `","h1:x"],"package_size":236}}`, 236, ""},
		{`{"darwin_arm64":{"package_size":5}}`, 0, ""},
		{`{"linux_amd64":{"package_size":0}}`, 0, "package_size must be more than 0, not 0"},
		{`{"linux_amd64":{"package_size":-1}}`, 0, "package_size must be more than 0"},
		{`{"linux_amd64":{"package_size":99999999999999999999999}}`, 0, "package_size"},
		{`{"linux_amd64":{"hashes":["zh:00"],"package_size":9}}`, 0, `hash "zh:00" does not match the shasum field`},
	} {
		srv := newServer(t, ca, serveJSON(doc(tt.packages)))
		c := newClient(t, ca, map[addrs.Hostname]map[string]string{srv.Host: {"providers.v1": srv.URL + "/v1/"}}, nil)
		meta, err := c.PackageMeta(ctx(t), provider(srv.Host, "hashicorp", "foo"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
		if tt.want != "" {
			wantErrContains(t, err, tt.want)
			continue
		}
		if err != nil || meta.Size != tt.size {
			t.Errorf("packages %s: size %d, error %v; want %d", tt.packages, meta.Size, err, tt.size)
		}
	}
}

// documentsTransport serves a whole registry from memory: a discovery
// document, a versions document and a download document.
type documentsTransport struct{ disco, versions, download []byte }

func (d documentsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body := []byte(nil)
	switch p := req.URL.Path; {
	case p == "/.well-known/terraform.json":
		body = d.disco
	case strings.HasSuffix(p, "/versions"):
		body = d.versions
	case strings.Contains(p, "/download/"):
		body = d.download
	}
	resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}
	if body == nil {
		resp.StatusCode, resp.Status, resp.ContentLength = http.StatusNotFound, "404 Not Found", 0
	}
	return resp, nil
}

// FuzzRegistryDocuments feeds whole documents of a registry (discovery,
// versions, download) to the client, as a build reads them: whatever they
// hold, the client returns an error or a result that keeps its promises,
// and never panics.
func FuzzRegistryDocuments(f *testing.F) {
	f.Add([]byte(`{"providers.v1":"/v1/providers/"}`), []byte(`{"versions":[{"version":"1.0.0","protocols":["5.0"]}]}`),
		[]byte(`{"protocols":["5.0"],"os":"linux","arch":"amd64","filename":"p.zip","download_url":"/p.zip","shasums_url":"http://x/s",
"shasums_signature_url":"s.sig","shasum":"5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a","signing_keys":{"gpg_public_keys":[]},
"packages":{"linux_amd64":{"hashes":["zh:5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a"],"package_size":236}}}`))
	f.Add([]byte(`{"providers.v1":"http://registry.example/v1/"}`), []byte(`{"versions":[{"version":"99999999999999999999999.0.0"}]}`),
		[]byte(`{"protocols":["99999999999999999999999"],"os":"linux","arch":"amd64"}`))
	f.Add([]byte(`{"providers.v1":"https://u:p@other.example/v1?X-Amz-Signature=s"}`), []byte(`{"versions":{}}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, disco, versions, download []byte) {
		client := &http.Client{Transport: documentsTransport{disco: disco, versions: versions, download: download}}
		policy := httpx.DefaultPolicy()
		policy.Retries = 0 // nothing here goes away by waiting
		c := registry.New(registry.Config{Fetcher: httpx.NewFetcher(client, policy), Discovery: client})
		p := addrs.Provider{Hostname: "registry.example", Namespace: "hashicorp", Type: "foo"}
		list, err := c.AvailableVersions(t.Context(), p)
		if err == nil {
			for _, v := range list {
				if _, err := addrs.ParseVersion(v.String()); err != nil {
					t.Fatalf("accepted version %q does not parse again: %v", v, err)
				}
			}
		}
		v, _ := addrs.ParseVersion("1.0.0")
		meta, err := c.PackageMeta(t.Context(), p, v, addrs.Platform{OS: "linux", Arch: "amd64"})
		if err != nil {
			if errors.Is(err, mirror.ErrPlatformUnavailable) && !bytes.Equal(download, nil) {
				t.Fatalf("a served download document was taken for a missing platform: %v", err)
			}
			return
		}
		checkMeta(t, meta)
	})
}

// checkMeta fails unless meta keeps the client's promises.
func checkMeta(t *testing.T, meta mirror.PackageMeta) {
	t.Helper()
	if meta.Filename == "" || meta.Filename == ".." || strings.ContainsAny(meta.Filename, "/\\\x00") {
		t.Fatalf("accepted filename %q", meta.Filename)
	}
	for _, loc := range []mirror.Location{meta.Archive, meta.Sums, meta.Signature} {
		u := registry.LocationURL(loc)
		if u == nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
			t.Fatalf("accepted location %v", loc)
		}
	}
	if meta.Size < 0 {
		t.Fatalf("accepted size %d", meta.Size)
	}
}
