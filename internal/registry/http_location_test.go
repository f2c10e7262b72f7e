package registry_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/mirror"
)

// limitedSink is a bufferSink that takes at most limit bytes.
type limitedSink struct {
	bufferSink
	limit int64
}

func (s *limitedSink) Limit() int64 { return s.limit }

// The locations of a download document show their URLs as httpx.Redact
// does, say whether they come over plain http and from where, tell the
// archive's size with a HEAD request, and refuse a body longer than the
// sink takes with mirror.ErrTooLarge.
func TestPackageMetaLocations(t *testing.T) {
	t.Parallel()
	const archive = "0123456789"
	doc := baseDoc()
	doc["download_url"] = "/files/" + zipName + "?X-Amz-Date=20250101&X-Amz-Signature=s3cr3t"
	doc["shasums_signature_url"] = "http://downloads.example.org/files/" + sigName
	mux := docHandler(t, doc).(*http.ServeMux)
	mux.Handle("GET /files/"+zipName, serveAs("application/zip", archive))
	srv, call := metaServerWith(t, mux, httpx.Locations{Allowed: []string{"downloads.example.org:80"}})
	meta, err := call()
	if err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}

	wantShown := srv.URL + "/files/" + zipName + "?X-Amz-Date=20250101&X-Amz-Signature=xxxxx"
	if got := meta.Archive.String(); got != wantShown {
		t.Errorf("Archive.String() = %q, want %q", got, wantShown)
	}
	for _, tt := range []struct {
		name     string
		loc      mirror.Location
		insecure bool
		origin   string
	}{
		{"archive", meta.Archive, false, srv.URL},
		{"SHA256SUMS", meta.Sums, false, srv.URL},
		{"signature", meta.Signature, true, "http://downloads.example.org"},
	} {
		tr, ok := tt.loc.(mirror.Transport)
		if !ok || tr.Insecure() != tt.insecure || tr.Origin() != tt.origin {
			t.Errorf("%s: Transport %v: Insecure and Origin are not %v, %q", tt.name, ok, tt.insecure, tt.origin)
		}
	}

	sizer, ok := meta.Archive.(mirror.Sizer)
	if !ok {
		t.Fatal("the archive's location tells no size")
	}
	if size, err := sizer.Size(ctx(t)); err != nil || size != int64(len(archive)) {
		t.Errorf("Size = %d, %v; want %d", size, err, len(archive))
	}

	sink := &limitedSink{limit: 4}
	err = meta.Archive.Fetch(ctx(t), sink)
	if !errors.Is(err, mirror.ErrTooLarge) || !errors.Is(err, httpx.ErrTooLarge) || !strings.Contains(err.Error(), "exceeds the limit of 4") {
		t.Errorf("a body over the sink's limit: %v, want mirror.ErrTooLarge naming the limit", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error leaks the signature: %v", err)
	}
	if sink.Len() > 4 {
		t.Errorf("%d bytes written past the limit", sink.Len())
	}
	got, err := fetch(t, meta.Archive)
	if err != nil || string(got) != archive {
		t.Errorf("Fetch = %q, %v; want the archive", got, err)
	}
}
