package registry_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/mirror"
)

const (
	docPath   = "/api/v1/providers/acme/foo/1.0.0/download/linux/amd64"
	goodSum   = "4a6c0d9ec4c1b1cd3bd1e6c0d3e83a3e5ed3bc12b3b6e39c46c7b0e7b31a2bf0"
	metaHost  = addrs.Hostname("registry.example.com")
	zipName   = "terraform-provider-foo_1.0.0_linux_amd64.zip"
	sumsName  = "terraform-provider-foo_1.0.0_SHA256SUMS"
	sigName   = "terraform-provider-foo_1.0.0_SHA256SUMS.sig"
	armoredK1 = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nkey one\n-----END PGP PUBLIC KEY BLOCK-----\n"
	armoredK2 = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nkey two\n-----END PGP PUBLIC KEY BLOCK-----\n"
)

// baseDoc is a valid download document; tests change fields of a copy.
func baseDoc() map[string]any {
	return map[string]any{
		"protocols":             []string{"5.0"},
		"os":                    "linux",
		"arch":                  "amd64",
		"filename":              zipName,
		"download_url":          zipName,
		"shasums_url":           "/files/" + sumsName,
		"shasums_signature_url": "https://cdn.example.net/files/" + sigName,
		"shasum":                goodSum,
		"signing_keys": map[string]any{
			"gpg_public_keys": []map[string]any{
				{"key_id": "1111111111111111", "ascii_armor": armoredK1, "trust_signature": "", "source": "", "source_url": nil},
				{"key_id": "2222222222222222", "ascii_armor": armoredK2},
			},
		},
	}
}

// metaServer serves body at docPath through the providers.v1 service of
// registry.example.com, which is forced to point at the server.
func metaServer(t *testing.T, h http.Handler) (*server, func() (mirror.PackageMeta, error)) {
	t.Helper()
	return metaServerWith(t, h, httpx.Locations{})
}

// metaServerWith is metaServer with a client that holds the document's
// URLs to locs.
func metaServerWith(t *testing.T, h http.Handler, locs httpx.Locations) (*server, func() (mirror.PackageMeta, error)) {
	t.Helper()
	ca := testca.New(t)
	srv := newServer(t, ca, h)
	api, disco := clients(t, ca)
	c := registry.New(registry.Config{
		Fetcher: httpx.NewFetcher(api, fastPolicy()), Discovery: disco, Locations: locs,
		Services: map[addrs.Hostname]map[string]string{metaHost: {"providers.v1": srv.URL + "/api/v1/providers/"}},
	})
	return srv, func() (mirror.PackageMeta, error) {
		return c.PackageMeta(ctx(t), provider(metaHost, "acme", "foo"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
	}
}

func docHandler(t *testing.T, doc map[string]any) http.Handler {
	t.Helper()
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+docPath, serveJSON(string(body)))
	return mux
}

func TestPackageMetaResolvesURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ref  string
		want string // srv.URL is prepended when want starts with "/"
		// allowed are the hosts on which the registry may name locations
		// whatever their scheme and address.
		allowed []string
	}{
		{"relative to the document's directory", zipName, "/api/v1/providers/acme/foo/1.0.0/download/linux/" + zipName, nil},
		{"dot segments", "../../files/" + zipName, "/api/v1/providers/acme/foo/1.0.0/files/" + zipName, nil},
		{"absolute path", "/releases/" + zipName, "/releases/" + zipName, nil},
		{"query kept", "/releases/" + zipName + "?sig=abc", "/releases/" + zipName + "?sig=abc", nil},
		{"scheme-relative on another host", "//cdn.example.net/" + zipName, "https://cdn.example.net/" + zipName, nil},
		{"absolute on another host", "https://downloads.example.org/x/" + zipName, "https://downloads.example.org/x/" + zipName, nil},
		{"plain http on an allowed host", "http://downloads.example.org/" + zipName, "http://downloads.example.org/" + zipName, []string{"downloads.example.org"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := baseDoc()
			doc["download_url"] = tt.ref
			doc["shasums_url"] = tt.ref + ".sums"
			doc["shasums_signature_url"] = tt.ref + ".sig"
			srv, call := metaServerWith(t, docHandler(t, doc), httpx.Locations{Allowed: tt.allowed})
			meta, err := call()
			if err != nil {
				t.Fatalf("PackageMeta: %v", err)
			}
			want := tt.want
			if strings.HasPrefix(want, "/") {
				want = srv.URL + want
			}
			got := []string{registry.LocationURL(meta.Archive).String(), registry.LocationURL(meta.Sums).String(), registry.LocationURL(meta.Signature).String()}
			wantAll := []string{want, want + ".sums", want + ".sig"}
			if diff := cmp.Diff(wantAll, got); diff != "" {
				t.Errorf("URLs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPackageMetaFields(t *testing.T) {
	t.Parallel()
	doc := baseDoc()
	doc["shasum"] = strings.ToUpper(goodSum) // either case is a digest
	srv, call := metaServer(t, docHandler(t, doc))
	meta, err := call()
	if err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}
	if meta.Filename != zipName {
		t.Errorf("Filename = %q, want %q", meta.Filename, zipName)
	}
	if got := hex.EncodeToString(meta.SHA256[:]); got != goodSum {
		t.Errorf("SHA256 = %s, want %s", got, goodSum)
	}
	if diff := cmp.Diff([]string{armoredK1, armoredK2}, meta.SigningKeys); diff != "" {
		t.Errorf("SigningKeys (-want +got):\n%s", diff)
	}
	if got, want := registry.LocationURL(meta.Sums).String(), srv.URL+"/files/"+sumsName; got != want {
		t.Errorf("Sums = %s, want %s", got, want)
	}
	if got, want := registry.LocationURL(meta.Signature).String(), "https://cdn.example.net/files/"+sigName; got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}
	if diff := cmp.Diff([]string{"GET " + docPath}, srv.paths()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestPackageMetaResolvesAgainstRedirectedDocument(t *testing.T) {
	t.Parallel()
	doc := baseDoc()
	doc["download_url"] = zipName
	doc["shasums_url"] = "../" + sumsName
	body, _ := json.Marshal(doc)
	mux := http.NewServeMux()
	mux.Handle("GET "+docPath, http.RedirectHandler("/mirror/docs/linux_amd64.json", http.StatusTemporaryRedirect))
	mux.Handle("GET /mirror/docs/linux_amd64.json", serveJSON(string(body)))
	srv, call := metaServer(t, mux)
	meta, err := call()
	if err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}
	if got, want := registry.LocationURL(meta.Archive).String(), srv.URL+"/mirror/docs/"+zipName; got != want {
		t.Errorf("Archive = %s, want %s (relative to the final document URL)", got, want)
	}
	if got, want := registry.LocationURL(meta.Sums).String(), srv.URL+"/mirror/"+sumsName; got != want {
		t.Errorf("Sums = %s, want %s", got, want)
	}
}

func TestPackageMetaProtocols(t *testing.T) {
	t.Parallel()
	tests := []struct {
		protocols any
		ok        bool
	}{
		{nil, true},
		{[]string{}, true},
		{[]string{"5.0"}, true},
		{[]string{"5"}, true},
		{[]string{"6.0"}, true},
		{[]string{"6.9"}, true},
		{[]string{"4.0", "5.0"}, true},
		{[]string{"4.0"}, false},
		{[]string{"7.0"}, false},
		{[]string{"4.0", "7.0"}, false},
		{[]string{"five"}, false},
	}
	for _, tt := range tests {
		name, _ := json.Marshal(tt.protocols)
		t.Run(string(name), func(t *testing.T) {
			doc := baseDoc()
			if tt.protocols == nil {
				delete(doc, "protocols")
			} else {
				doc["protocols"] = tt.protocols
			}
			_, call := metaServer(t, docHandler(t, doc))
			_, err := call()
			if tt.ok && err != nil {
				t.Fatalf("PackageMeta: %v", err)
			}
			if !tt.ok {
				wantErrContains(t, err, "the package speaks plugin protocols", "OpenTofu supports 5 and 6")
			}
		})
	}
}

func TestPackageMetaRejectsBadDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(map[string]any)
		want   []string
	}{
		{"os mismatch", func(d map[string]any) { d["os"] = "darwin" }, []string{"asked for linux_amd64, the registry answered for darwin_amd64"}},
		{"arch mismatch", func(d map[string]any) { d["arch"] = "arm64" }, []string{"asked for linux_amd64, the registry answered for linux_arm64"}},
		{"os missing", func(d map[string]any) { delete(d, "os") }, []string{"the registry answered for _amd64"}},
		{"shasum missing", func(d map[string]any) { delete(d, "shasum") }, []string{"shasum:"}},
		{"shasum too short", func(d map[string]any) { d["shasum"] = goodSum[:62] }, []string{"shasum:", "is not a SHA-256 digest"}},
		{"shasum not hex", func(d map[string]any) { d["shasum"] = strings.Repeat("zz", 32) }, []string{"shasum:", "is not a SHA-256 digest"}},
		{"shasum with zh prefix", func(d map[string]any) { d["shasum"] = "zh:" + goodSum }, []string{"shasum:"}},
		{"filename with slash", func(d map[string]any) { d["filename"] = "dir/" + zipName }, []string{`invalid filename "dir/` + zipName + `"`}},
		{"filename with dot-dot", func(d map[string]any) { d["filename"] = "../" + zipName }, []string{"invalid filename"}},
		{"filename dot-dot", func(d map[string]any) { d["filename"] = ".." }, []string{`invalid filename ".."`}},
		{"filename dot", func(d map[string]any) { d["filename"] = "." }, []string{`invalid filename "."`}},
		{"filename with backslash", func(d map[string]any) { d["filename"] = `..\` + zipName }, []string{"invalid filename"}},
		{"filename with NUL", func(d map[string]any) { d["filename"] = "a\x00.zip" }, []string{"invalid filename"}},
		{"filename missing", func(d map[string]any) { delete(d, "filename") }, []string{`invalid filename ""`}},
		{"download_url missing", func(d map[string]any) { delete(d, "download_url") }, []string{"download_url: missing"}},
		{"shasums_url missing", func(d map[string]any) { d["shasums_url"] = "" }, []string{"shasums_url: missing"}},
		{"shasums_signature_url missing", func(d map[string]any) { delete(d, "shasums_signature_url") }, []string{"shasums_signature_url: missing"}},
		{"unsupported scheme", func(d map[string]any) { d["download_url"] = "ftp://downloads.example.org/" + zipName }, []string{"download_url:", "must use https or http"}},
		{"file scheme", func(d map[string]any) { d["shasums_url"] = "file:///etc/passwd" }, []string{"shasums_url:", "must use https or http"}},
		{"unparseable URL", func(d map[string]any) { d["download_url"] = "https://[::1/x" }, []string{"download_url: invalid URL"}},
		{"URL with credentials", func(d map[string]any) { d["download_url"] = "https://user:hunter2@downloads.example.org/" + zipName }, []string{"download_url:", "must not contain credentials", "user:xxxxx@"}},
		{"signature URL with credentials", func(d map[string]any) { d["shasums_signature_url"] = "https://tok:hunter2@cdn.example.net/x.sig" }, []string{"shasums_signature_url:", "must not contain credentials"}},
		{"protocols not a list", func(d map[string]any) { d["protocols"] = "5.0" }, []string{"parse download document"}},
		{"wrong type", func(d map[string]any) { d["signing_keys"] = []string{"x"} }, []string{"parse download document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := baseDoc()
			tt.change(doc)
			srv, call := metaServer(t, docHandler(t, doc))
			_, err := call()
			wantErrContains(t, err, tt.want...)
			if err == nil {
				return
			}
			if !strings.Contains(err.Error(), srv.URL+docPath) {
				t.Errorf("error %q does not name the document URL", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the password: %v", err)
			}
			if errors.Is(err, mirror.ErrPlatformUnavailable) {
				t.Errorf("a bad document must not read as an unavailable platform: %v", err)
			}
		})
	}
}

func TestPackageMetaNotJSON(t *testing.T) {
	t.Parallel()
	srv, call := metaServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"os": "linux",`))
	}))
	_, err := call()
	wantErrContains(t, err, "parse download document "+srv.URL+docPath)
}

func TestPackageMetaStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status      int
		unavailable bool
		want        []string
	}{
		{http.StatusNotFound, true, []string{"registry.example.com/acme/foo 1.0.0 linux_amd64", mirror.ErrPlatformUnavailable.Error()}},
		{http.StatusUnauthorized, false, []string{"401 Unauthorized", "TF_TOKEN_registry_example_com"}},
		{http.StatusInternalServerError, false, []string{docPath + " returned 500 Internal Server Error"}},
		{http.StatusGone, false, []string{"410 Gone"}},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			_, call := metaServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "nope", tt.status)
			}))
			_, err := call()
			wantErrContains(t, err, tt.want...)
			if got := errors.Is(err, mirror.ErrPlatformUnavailable); got != tt.unavailable {
				t.Errorf("errors.Is(%v, ErrPlatformUnavailable) = %v, want %v", err, got, tt.unavailable)
			}
		})
	}
}
