package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, uri string
		status      int
		want        string
	}{
		{"GET", "/v2/", 200, kPing},
		{"GET", "/v2/_catalog?n=100", 200, kCatalog},
		{"GET", "/v2/p/h/n/t/tags/list", 200, kTagList},
		{"HEAD", "/v2/p/h/n/t/manifests/1.0.0", 404, kManifestHead},
		{"GET", "/v2/p/h/n/t/manifests/sha256:ab", 200, kManifestGet},
		{"PUT", "/v2/p/h/n/t/manifests/1.0.0", 201, kManifestPut},
		{"DELETE", "/v2/p/h/n/t/manifests/sha256:ab", 202, kManifestDelete},
		{"HEAD", "/v2/p/h/n/t/blobs/sha256:ab", 404, kBlobHead},
		{"GET", "/v2/p/h/n/t/blobs/sha256:ab", 200, kBlobGet},
		{"POST", "/v2/p/h/n/t/blobs/uploads/", 202, kUploadStart},
		{"POST", "/v2/p/h/n/t/blobs/uploads/?mount=sha256:ab&from=p/x", 201, kBlobMount},
		{"POST", "/v2/p/h/n/t/blobs/uploads/?mount=sha256:ab&from=p/x", 202, kUploadStart},
		{"PATCH", "/v2/p/h/n/t/blobs/uploads/u-1?_state=x", 202, kUploadPatch},
		{"PUT", "/v2/p/h/n/t/blobs/uploads/u-1?_state=x&digest=sha256:ab", 201, kBlobUpload},
		{"DELETE", "/v2/p/h/n/t/blobs/uploads/u-1", 204, kUploadOther},
		{"GET", "/v2/p/h/n/t/referrers/sha256:ab", 404, kReferrers},
		{"GET", "/metrics", 404, kOther},
	} {
		if got := classify(c.method, c.uri, c.status); got != c.want {
			t.Errorf("%s %s %d: %s, want %s", c.method, c.uri, c.status, got, c.want)
		}
	}
}

// TestCountersLog feeds the counters lines as docker-registry 2.8.2 writes
// them: a request refused for want of credentials is only a warning, the
// others "response completed" (with error for statuses >= 400); other
// lines and benchoci's own requests are not counted.
func TestCountersLog(t *testing.T) {
	storage := t.TempDir()
	hexDigest := strings.Repeat("ab", 32)
	blob := filepath.Join(storage, "docker", "registry", "v2", "blobs", "sha256", "ab", hexDigest, "data")
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCounters(storage)
	var file bytes.Buffer
	sink := newLogSink(&file, c)
	logLines := strings.Join([]string{
		`{"go.version":"go1.19.8","level":"info","msg":"listening on 127.0.0.1:1, tls"}`,
		`{"http.request.method":"GET","http.request.uri":"/v2/?benchoci-sync=0","level":"warning","msg":"error authorizing context: basic authentication challenge for realm \"benchoci\": invalid authorization credential"}`,
		`{"http.request.method":"GET","http.request.uri":"/v2/","level":"warning","msg":"error authorizing context: basic authentication challenge for realm \"benchoci\": invalid authorization credential"}`,
		`{"http.request.method":"HEAD","http.request.uri":"/v2/p/t/blobs/sha256:` + hexDigest + `","level":"info","msg":"authorized request"}`,
		`{"http.request.method":"HEAD","http.request.uri":"/v2/p/t/blobs/sha256:` + hexDigest + `","http.response.status":404,"level":"error","msg":"response completed with error"}`,
		`{"http.request.method":"POST","http.request.uri":"/v2/p/t/blobs/uploads/","http.response.status":202,"level":"info","msg":"response completed"}`,
		`{"http.request.method":"PUT","http.request.uri":"/v2/p/t/blobs/uploads/u?_state=s\u0026digest=sha256%3A` + hexDigest + `","http.response.status":201,"level":"info","msg":"response completed"}`,
		`{"http.request.method":"PUT","http.request.uri":"/v2/p/t/manifests/1.0.0","http.response.status":400,"level":"error","msg":"response completed with error"}`,
		`{"http.request.method":"PUT","http.request.uri":"/v2/p/t/manifests/1.0.0","http.response.status":201,"level":"info","msg":"response completed"}`,
		`127.0.0.1 - - [23/Nov/2026:23:45:51 +0000] "GET /v2/ HTTP/2.0" 401 87 "" "curl/7.88.1"`,
		`{"http.request.method":"GET","http.request.uri":"/v2/?benchoci-sync=3","level":"warning","msg":"error authorizing context: basic authentication challenge"}`,
	}, "\n") + "\n"
	// Written in pieces that split lines, as a pipe delivers them.
	for chunk := range pieces(logLines, 37) {
		if _, err := sink.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if file.String() != logLines {
		t.Error("the log file is not what the registry wrote")
	}
	if got := c.synced(); got != 3 {
		t.Errorf("synced = %d, want 3", got)
	}
	got := c.snapshot()
	want := map[string]int64{
		"requests": 6, "unauthorized": 1, "not_found": 1, "errors": 1,
		kBlobHead: 1, kUploadStart: 1, kBlobUpload: 1, kManifestPut: 2, kPing: 0,
		"upload_bytes": 5, "largest_upload": 5, "writes": 4,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for _, k := range allKinds {
		if _, ok := got[k]; !ok {
			t.Errorf("the snapshot lacks %s", k)
		}
	}
}

// pieces cuts s into pieces of n bytes.
func pieces(s string, n int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

func TestStoredTags(t *testing.T) {
	storage := t.TempDir()
	repos := filepath.Join(storage, "docker", "registry", "v2", "repositories")
	for _, tag := range []string{"tfmirror-1/h/n/a/1.0.0", "tfmirror-1/h/n/a/sha256-ab", "tfmirror-1/h/n/b/1.0.0", "oras-1/h/n/a/1.0.0"} {
		repo, name := filepath.Split(tag)
		link := filepath.Join(repos, repo, "_manifests", "tags", name, "current", "link")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(link, []byte("sha256:ab"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A repository with blobs but no tag yet.
	if err := os.MkdirAll(filepath.Join(repos, "tfmirror-1", "h", "n", "c", "_manifests", "revisions"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := storedTags(storage, "tfmirror-1")
	if err != nil {
		t.Fatal(err)
	}
	if got["repositories"] != 3 || got["tags"] != 3 || got["version_tags"] != 2 {
		t.Errorf("tfmirror-1: %v", got)
	}
	got, err = storedTags(storage, "none")
	if err != nil || got["repositories"] != 0 {
		t.Errorf("none: %v, %v", got, err)
	}
	if _, err := storedTags(storage, "../x"); err == nil {
		t.Error("a prefix with .. was accepted")
	}
}

// TestRegistry starts docker-registry as benchoci does, uploads a blob and
// a manifest with the credentials of its config.json, and reads the counts
// and tags back through the handler.
func TestRegistry(t *testing.T) {
	bin, err := registrytest.Binary()
	if err != nil {
		if serverproc.Required() {
			t.Fatalf("%v (required on CI and under scripts/test)", err)
		}
		t.Skip(err)
	}
	state := t.TempDir()
	reg, err := newRegistry(bin, filepath.Join(state, "storage"), state)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.stop)
	front := httptest.NewServer(reg.handler())
	defer front.Close()

	var conf struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	data, err := os.ReadFile(reg.dockerConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	auth := conf.Auths[reg.host].Auth
	if auth == "" {
		t.Fatalf("config.json has no credentials for %s:\n%s", reg.host, data)
	}
	client := reg.client(10 * time.Second)
	do := func(method, u string, body []byte, header map[string]string, want int) *http.Response {
		t.Helper()
		if !strings.HasPrefix(u, "https://") {
			u = "https://" + reg.host + u
		}
		req, err := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Basic "+auth)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %s, want %d", method, u, resp.Status, want)
		}
		return resp
	}
	before := get(t, front.URL+"/_stats")
	for _, want := range []string{"requests=0\n", "unauthorized=0\n"} {
		if !strings.Contains(before, want) {
			t.Errorf("/_stats before any client lacks %q:\n%s", want, before)
		}
	}

	blob := []byte(`{"os":"linux","architecture":"amd64"}`)
	digest := fmt.Sprintf("sha256:%x", sha256.Sum256(blob))
	do(http.MethodHead, "/v2/bench/p/blobs/"+digest, nil, nil, http.StatusNotFound)
	loc := do(http.MethodPost, "/v2/bench/p/blobs/uploads/", nil, nil, http.StatusAccepted).Header.Get("Location")
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	do(http.MethodPut, loc+sep+"digest="+digest, blob, map[string]string{"Content-Type": "application/octet-stream"}, http.StatusCreated)
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[]}`, digest, len(blob))
	do(http.MethodPut, "/v2/bench/p/manifests/1.0.0", []byte(manifest), map[string]string{"Content-Type": "application/vnd.oci.image.manifest.v1+json"}, http.StatusCreated)
	// Without credentials: a challenge.
	resp, err := client.Get("https://" + reg.host + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	stats := get(t, front.URL+"/_stats")
	for _, want := range []string{
		"requests=5\n", "unauthorized=1\n", "not_found=1\n", "errors=0\n", "blob_heads=1\n", "upload_starts=1\n",
		"blob_uploads=1\n", fmt.Sprintf("upload_bytes=%d\n", len(blob)), fmt.Sprintf("largest_upload=%d\n", len(blob)), "manifest_puts=1\n", "writes=3\n",
	} {
		if !strings.Contains(stats, want) {
			t.Errorf("/_stats lacks %q:\n%s", want, stats)
		}
	}
	if again := get(t, front.URL+"/_stats"); again != stats {
		t.Errorf("/_stats counted its own requests:\n%s\nthen\n%s", stats, again)
	}
	tags := get(t, front.URL+"/_tags?prefix=bench")
	if tags != "repositories=1\ntags=1\nversion_tags=1\n" {
		t.Errorf("/_tags?prefix=bench:\n%s", tags)
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, body)
	}
	return string(body)
}
