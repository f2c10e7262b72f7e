package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestLibraryLogLinesStayOffStderr: an origin that sends bytes after a
// response, on a connection Go's HTTP client keeps for the next request,
// makes net/http log "Unsolicited response received on idle HTTP
// channel" (with the bytes) through the standard logger. With --json,
// standard error is the summary's one line; none of those reach it.
func TestLibraryLogLinesStayOffStderr(t *testing.T) {
	ca := testca.New(t)
	const versions = `{"versions":[{"version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"}]}]}`
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		body := versions
		if !strings.HasSuffix(r.URL.Path, "/versions") {
			body = `{"errors":["not here"]}`
		}
		status := "200 OK"
		if body != versions {
			status = "404 Not Found"
		}
		// More bytes than the Content-Length says: the client takes the
		// connection back as idle, and finds them there.
		fmt.Fprintf(buf, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s\x0e\xf6 unsolicited bytes after the response", status, len(body), body)
		_ = buf.Flush()
		_, _ = bufio.NewReader(conn).ReadByte() // until the client closes it
	}))
	srv.TLS = ca.TLSConfig(t, "127.0.0.1")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir(), "127.0.0.1")

	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64"]
provider "acme/p" {
  newest = 1
}
host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, srv.URL+"/v1/providers/"))
	// The origin publishes no package (its download documents are 404s):
	// the platform is skipped, exit 0.
	_, stderr, _ := runTfmirror(t, work, []string{"SSL_CERT_FILE=" + caFile}, "build", "--json", "--retries", "0")
	if strings.Contains(stderr, "Unsolicited") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("standard error holds more than the summary's line:\n%s", stderr)
	}
}
