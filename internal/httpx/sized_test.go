package httpx_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// sizedSink records the sizes it is told, and how much it held then.
type sizedSink struct {
	resumeSink
	told []string // "size@held"
}

func (s *sizedSink) Expect(size int64) { s.told = append(s.told, fmt.Sprintf("%d@%d", size, s.Len())) }

var _ httpx.SizedSink = (*sizedSink)(nil)

// A SizedSink is told the whole size before the first byte: the
// Content-Length, plus the bytes a resumed download already holds; an
// answer without a length tells it nothing.
func TestFetchTellsTheSizeToASizedSink(t *testing.T) {
	ca := testca.New(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/chunked.zip":
			_, _ = w.Write(payload[:100])
			http.NewResponseController(w).Flush() // no Content-Length
			_, _ = w.Write(payload[100:])
		case r.Header.Get("Range") != "":
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 1000-%d/%d", len(payload)-1, len(payload)))
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)-1000))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(payload[1000:])
		default:
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)))
			_, _ = w.Write(payload)
		}
	}))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f, _ := fetcherFor(t, ca, testPolicy())
	for _, tc := range []struct {
		path string
		held int
		want string
	}{
		{"/a.zip", 0, fmt.Sprintf("[%d@0]", len(payload))},
		{"/a.zip", 1000, fmt.Sprintf("[%d@1000]", len(payload))},
		{"/chunked.zip", 0, "[]"},
	} {
		sink := &sizedSink{}
		sink.Write(payload[:tc.held])
		u, _ := url.Parse(srv.URL + tc.path)
		if err := f.Fetch(t.Context(), u, nil, sink); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(sink.told); got != tc.want {
			t.Errorf("%s holding %d bytes: told %s, want %s", tc.path, tc.held, got, tc.want)
		}
	}
}
