package netmirror_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/netmirror"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

var (
	foo = addrs.MustParseProvider("registry.opentofu.org/hashicorp/foo")
	v1  = addrs.MustParseVersion("1.0.0")
)

// fetcher retries as tfmirror does, but without waiting long.
func fetcher(c *http.Client) *httpx.Fetcher {
	p := httpx.DefaultPolicy()
	p.MinBackoff, p.MaxBackoff = time.Millisecond, time.Millisecond
	return httpx.NewFetcher(c, p)
}

// serveTree writes a small mirror tree and serves it over TLS, with JSON
// served as contentType.
func serveTree(t *testing.T, contentType string, signed bool) *layout.Tree {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		layout.IndexPath(foo):          `{"versions":{"1.0.0":{}}}`,
		layout.ProvenancePath(foo, v1): `{"archives":{"linux_amd64":{"filename":"f.zip","h1":"h1:x"}},"signing_keys":[]}`,
		layout.SumsPath(foo, v1):       "sums",
	}
	if signed {
		files[layout.ProvenancePath(foo, v1)] = `{"archives":{},"key_id":"K","signing_keys":["key"]}`
		files[layout.SignaturePath(foo, v1)] = "sig"
	}
	for rel, body := range files {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fileServer := http.FileServer(http.Dir(root))
	ca := testca.New(t)
	srv := httptest.NewUnstartedServer(http.StripPrefix("/mirror", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".json") {
			w.Header().Set("Content-Type", contentType)
		}
		fileServer.ServeHTTP(w, r)
	})))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := netmirror.New(srv.URL+"/mirror", fetcher(ca.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return layout.NewTree(c)
}

func TestClientReadsPublishedMirror(t *testing.T) {
	for _, signed := range []bool{false, true} {
		c := serveTree(t, "application/json", signed)
		ctx := context.Background()
		vs, err := c.Versions(ctx, foo)
		if err != nil || len(vs) != 1 || !vs[0].Same(v1) {
			t.Fatalf("Versions = %v, %v", vs, err)
		}
		rec, err := c.ReadRecord(ctx, foo, v1)
		if err != nil {
			t.Fatalf("signed=%v: Record: %v", signed, err)
		}
		if string(rec.Sums) != "sums" || (signed && string(rec.Signature) != "sig") || (!signed && rec.Signature != nil) {
			t.Errorf("signed=%v: record = %+v", signed, rec)
		}
	}
}

func TestClientRequiresJSONContentType(t *testing.T) {
	c := serveTree(t, "text/plain", false)
	_, err := c.Versions(context.Background(), foo)
	if err == nil || !strings.Contains(err.Error(), "application/json") {
		t.Errorf("err = %v, want a content type error", err)
	}
}

func TestClientErrors(t *testing.T) {
	c := serveTree(t, "application/json", false)
	if _, err := c.Versions(context.Background(), addrs.MustParseProvider("hashicorp/absent")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing provider: err = %v", err)
	}
	if _, err := c.ReadRecord(context.Background(), foo, addrs.MustParseVersion("9.9.9")); err == nil {
		t.Error("missing release: no error")
	}
	for _, bad := range []string{"ftp://x/", "not a url", "https://"} {
		if _, err := netmirror.New(bad, fetcher(http.DefaultClient)); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
