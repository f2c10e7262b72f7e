package httpx_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// resumeSink is a resumable sink in memory that starts with some bytes.
type resumeSink struct{ memSink }

func (s *resumeSink) Written() int64 { return int64(s.Len()) }

func TestFetchResumesOrRestarts(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(w http.ResponseWriter, r *http.Request, from int)
		wantResets int
	}{
		{"206 from the right byte", func(w http.ResponseWriter, _ *http.Request, from int) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(payload)-1, len(payload)))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(payload[from:])
		}, 0},
		{"range ignored (200)", func(w http.ResponseWriter, _ *http.Request, _ int) {
			_, _ = w.Write(payload)
		}, 1},
		{"206 from the wrong byte, then 200", func(w http.ResponseWriter, r *http.Request, from int) {
			if r.Header.Get("Range") == "" {
				_, _ = w.Write(payload)
				return
			}
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from-10, len(payload)-1, len(payload)))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(payload[from-10:])
		}, 1},
		{"416, then 200", func(w http.ResponseWriter, r *http.Request, _ int) {
			if r.Header.Get("Range") != "" {
				w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
				return
			}
			_, _ = w.Write(payload)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const from = 1000
			ca := testca.New(t)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Range") != "" && r.Header.Get("Range") != fmt.Sprintf("bytes=%d-", from) {
					t.Errorf("Range = %q", r.Header.Get("Range"))
				}
				tt.answer(w, r, from)
			}))
			srv.TLS = ca.TLSConfig(t)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			f, _ := fetcherFor(t, ca, testPolicy())
			sink := &resumeSink{}
			sink.Write(payload[:from])
			u, _ := url.Parse(srv.URL + "/a.zip")
			if err := f.Fetch(t.Context(), u, nil, sink); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sink.Bytes(), payload) {
				t.Errorf("sink holds %d bytes, not the body", sink.Len())
			}
			if sink.resets != tt.wantResets {
				t.Errorf("%d resets, want %d", sink.resets, tt.wantResets)
			}
		})
	}
}
