package vulndb

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/govulndb"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// served is the layout vuln.go.dev serves, made from testdata/osv, on a
// TLS server of a test CA, with a count of the requests by path.
type served struct {
	dir      string
	url      string
	ca       *testca.CA
	mu       sync.Mutex
	requests map[string]int
}

func serve(t *testing.T, handler func(w http.ResponseWriter, r *http.Request) bool) *served {
	t.Helper()
	s := &served{dir: t.TempDir(), ca: testca.New(t), requests: map[string]int{}}
	govulndb.WriteServed(t, "testdata/osv", s.dir, nil)
	files := http.FileServer(http.Dir(s.dir))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.Path]++
		s.mu.Unlock()
		if handler == nil || !handler(w, r) {
			files.ServeHTTP(w, r)
		}
	}))
	srv.TLS = s.ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *served) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

func (s *served) fetcher(p httpx.Policy) *httpx.Fetcher { return httpx.NewFetcher(s.ca.Client(), p) }

func quickPolicy() httpx.Policy {
	p := httpx.DefaultPolicy()
	p.Retries, p.StallTimeout = 0, 300*time.Millisecond
	return p
}

// TestRemoteMatchesLikeLoad reads the served layout over https: the
// findings are those of the same records loaded from a directory, and
// only the index and the records the modules' versions need are fetched,
// each once.
func TestRemoteMatchesLikeLoad(t *testing.T) {
	s := serve(t, nil)
	ctx := t.Context()
	remote, err := OpenRemote(ctx, s.url, s.fetcher(httpx.DefaultPolicy()))
	if err != nil {
		t.Fatal(err)
	}
	local := loadTestDB(t)
	grpc := func(v string) []Module { return []Module{{"google.golang.org/grpc", v}} }
	cases := []struct {
		prog  Program
		fetch []string // records fetched by this call
	}{
		{Program{Modules: grpc("v1.60.0"), GoVersion: "go1.27.3"}, nil}, // the index says all are fixed
		{Program{Modules: append(grpc("v1.56.2"), Module{"example.com/other", "v1.0.0"})}, []string{"/ID/GO-2023-2153.json"}},
		// GO-2026-6604 is fixed in go1.26.9, but the index has only its latest fix, 1.27.2
		{Program{Modules: grpc("v1.57.0"), GoVersion: "go1.26.9"}, []string{"/ID/GO-2026-6604.json", "/ID/GO-2026-6809.json"}},
		{Program{Modules: grpc("v1.56.2"), GoVersion: "go1.26.9"}, nil}, // fetched already
		{Program{GoVersion: "go1.26.8", GOOS: "linux"}, nil},            // GO-2026-6604 is on Windows only
		{Program{GoVersion: "go1.26.8", GOOS: "windows"}, nil},
		{Program{Modules: []Module{{"k8s.io/kubernetes", "v1.0.0"}}}, []string{"/ID/GO-2022-0617.json"}}, // withdrawn: fetched, not reported
	}
	for i, tc := range cases {
		before := s.counts()
		got, err := remote.Match(ctx, tc.prog)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if want := local.Match(tc.prog); !slices.Equal(ids(got), ids(want)) {
			t.Errorf("case %d: remote found %q, loaded database %q", i, ids(got), ids(want))
		}
		var fetched []string
		for p, n := range s.counts() {
			if n != before[p] {
				fetched = append(fetched, p)
			}
		}
		slices.Sort(fetched)
		if !slices.Equal(fetched, tc.fetch) {
			t.Errorf("case %d: fetched %q, want %q", i, fetched, tc.fetch)
		}
	}
	if n := s.counts()["/index/modules.json"]; n != 1 {
		t.Errorf("index/modules.json fetched %d times, want 1", n)
	}
}

// TestLoadServedLayout reads a directory in the layout vuln.go.dev serves
// (records under ID/, the index skipped) as it reads data/osv.
func TestLoadServedLayout(t *testing.T) {
	dir := t.TempDir()
	govulndb.WriteServed(t, "testdata/osv", dir, nil)
	if _, err := os.Stat(filepath.Join(dir, "ID", "GO-2023-2153.json")); err != nil {
		t.Fatal(err)
	}
	db, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	local := loadTestDB(t)
	prog := Program{Modules: []Module{{"google.golang.org/grpc", "v1.56.2"}}, GoVersion: "go1.26.8"}
	got, want := ids(db.Match(prog)), ids(local.Match(prog))
	if db.Len() != local.Len() || len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("the served layout loads %d records, finds %q; data/osv %d, %q", db.Len(), got, local.Len(), want)
	}
}

// TestRemoteRefuses holds a served database to its bounds: an index or a
// record too large, an id that is a path, a record that is not the one
// asked for, a server that stalls, plain http; errors never show the
// credentials of the URL.
func TestRemoteRefuses(t *testing.T) {
	grpc := Program{Modules: []Module{{"google.golang.org/grpc", "v1.56.2"}}}
	cases := map[string]struct {
		handler func(w http.ResponseWriter, r *http.Request) bool
		want    string
	}{
		"index too large": {func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/index/modules.json" {
				return false
			}
			w.Header().Set("Content-Length", strconv.Itoa(maxIndexBytes+1))
			return true
		}, "exceeds the limit"},
		"id is a path": {func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/index/modules.json" {
				return false
			}
			_, _ = w.Write([]byte(`[{"path":"google.golang.org/grpc","vulns":[{"id":"../../etc/passwd"}]}]`))
			return true
		}, `the id "../../etc/passwd"`},
		"malformed index": {func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/index/modules.json" {
				return false
			}
			_, _ = w.Write([]byte(`{"modules":`))
			return true
		}, "parse index/modules.json"},
		"record too large": {func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.HasPrefix(r.URL.Path, "/ID/") {
				return false
			}
			_, _ = w.Write([]byte(`{"id":"GO-2023-2153","summary":"` + strings.Repeat("x", maxRecordBytes) + `"}`))
			return true
		}, "exceeds the limit"},
		"another record": {func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.HasPrefix(r.URL.Path, "/ID/") {
				return false
			}
			_, _ = w.Write([]byte(`{"id":"GO-2026-6809"}`))
			return true
		}, `ID/GO-2023-2153.json: the record is not the one the index names: it holds "GO-2026-6809"`},
		"stalled record": {func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.HasPrefix(r.URL.Path, "/ID/") {
				return false
			}
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(`{"id":`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return true
		}, "GO-2023-2153.json"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, tc.handler)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			base := strings.Replace(s.url, "https://", "https://user:hunter2@", 1)
			remote, err := OpenRemote(ctx, base, s.fetcher(quickPolicy()))
			if err == nil {
				_, err = remote.Match(ctx, grpc)
			}
			switch {
			case err == nil:
				t.Fatal("no error")
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			case strings.Contains(err.Error(), "hunter2"):
				t.Fatalf("error %q shows the password", err)
			}
		})
	}
	if _, err := OpenRemote(t.Context(), "http://vuln.example/", httpx.NewFetcher(nil, quickPolicy())); err == nil || !strings.Contains(err.Error(), "not an https:// URL") {
		t.Errorf("plain http: %v", err)
	}
}
