package modfetch

import (
	"archive/tar"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// Archives of every kind registries serve are fetched whole, with the
// module's directory in Subdir.
func TestFetchArchives(t *testing.T) {
	ca := testca.New(t)
	github := targz.Pack(t, []targz.Entry{
		paxGlobal(), tarDir("repo-1a2b/"), targz.Regular("repo-1a2b/main.tf", "root"),
		tarExec("repo-1a2b/modules/x/run.sh", "#!/bin/sh"),
	}, nil)
	dotSlash := targz.Pack(t, []targz.Entry{
		tarDir("./"), targz.Regular("./main.tf", "main"), tarHardlink("./copy.tf", "./main.tf"),
		tarSymlink("./sub/up.tf", "../main.tf"),
	}, nil)
	siblings := targz.Pack(t, []targz.Entry{
		targz.Regular("modules/a/main.tf", `module "b" { source = "../b" }`), targz.Regular("modules/b/main.tf", "b"),
	}, nil)
	plain := zipbuild.Bytes(t,
		zipbuild.File("main.tf", "main"), zipbuild.File("empty/", ""),
		zipbuild.Entry{Name: "bin/run.sh", Body: "#!/bin/sh", Mode: 0o700},
		zipbuild.Entry{Name: "alias.tf", Body: "main.tf", Mode: fs.ModeSymlink | 0o777},
	)
	var hinted sync.Map // query the server saw for /download
	mux := http.NewServeMux()
	for path, body := range map[string][]byte{"/m.zip": plain, "/archive/v1.tar.gz": github, "/m.tgz": dotSlash, "/pkg.tar.gz": siblings} {
		mux.Handle(path, files{path: body})
	}
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		hinted.Store("query", r.URL.RawQuery)
		_, _ = w.Write(plain)
	})
	srv := tlsServer(t, ca, mux)

	tests := []struct {
		name, loc, subdir, source string
		body                      []byte
		want                      map[string]string
	}{
		{
			name: "zip", loc: "/m.zip", body: plain, source: "/m.zip",
			want: map[string]string{
				"main.tf": "-rw-r--r-- main", "empty": "dir -rwxr-xr-x", "bin": "dir -rwxr-xr-x",
				"bin/run.sh": "-rwxr-xr-x #!/bin/sh", "alias.tf": "-> main.tf",
			},
		},
		{
			name: "github tar.gz", loc: "/archive/v1.tar.gz//*", body: github, subdir: "repo-1a2b", source: "/archive/v1.tar.gz",
			want: map[string]string{
				"repo-1a2b": "dir -rwxr-xr-x", "repo-1a2b/main.tf": "-rw-r--r-- root",
				"repo-1a2b/modules": "dir -rwxr-xr-x", "repo-1a2b/modules/x": "dir -rwxr-xr-x",
				"repo-1a2b/modules/x/run.sh": "-rwxr-xr-x #!/bin/sh",
			},
		},
		{
			name: "tgz", loc: "/m.tgz", body: dotSlash, source: "/m.tgz",
			want: map[string]string{
				"main.tf": "-rw-r--r-- main", "copy.tf": "-rw-r--r-- main",
				"sub": "dir -rwxr-xr-x", "sub/up.tf": "-> ../main.tf",
			},
		},
		{
			name: "archive hint", loc: "/download?token=abc&archive=zip", body: plain, source: "/download",
			want: map[string]string{
				"main.tf": "-rw-r--r-- main", "empty": "dir -rwxr-xr-x", "bin": "dir -rwxr-xr-x",
				"bin/run.sh": "-rwxr-xr-x #!/bin/sh", "alias.tf": "-> main.tf",
			},
		},
		{
			name: "subdir with a sibling", loc: "/pkg.tar.gz//modules/a", body: siblings, subdir: "modules/a", source: "/pkg.tar.gz",
			want: map[string]string{
				"modules": "dir -rwxr-xr-x", "modules/a": "dir -rwxr-xr-x", "modules/b": "dir -rwxr-xr-x",
				"modules/a/main.tf": `-rw-r--r-- module "b" { source = "../b" }`, "modules/b/main.tf": "-rw-r--r-- b",
			},
		},
	}
	f := New(Config{HTTP: ca.Client()})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			res, err := f.Fetch(t.Context(), srv.URL+tc.loc, dst)
			if err != nil {
				t.Fatal(err)
			}
			want := Result{Subdir: tc.subdir, SHA256: sha256Hex(tc.body), Source: srv.URL + tc.source}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, readTree(t, dst)); diff != "" {
				t.Errorf("package (-want +got):\n%s", diff)
			}
		})
	}
	if q, _ := hinted.Load("query"); q != "token=abc" {
		t.Errorf("the server saw the query %q, want the hint removed and the rest kept", q)
	}
}

// Hostile or broken archives are refused, naming the entry, and nothing
// lands outside dst.
func TestFetchArchiveRefuses(t *testing.T) {
	ca := testca.New(t)
	tests := []struct {
		name   string
		path   string // served at, and fetched with loc appended
		loc    string
		body   []byte
		limits hashing.ModuleLimits
		want   []string // in the error
	}{
		{name: "zip path escape", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.File("../evil.tf", "x")), want: []string{`"../evil.tf"`, "leaves the package"}},
		{name: "zip absolute path", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.File("/tmp/evil.tf", "x")), want: []string{`"/tmp/evil.tf"`, "absolute"}},
		{name: "zip backslash", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.File(`..\evil.tf`, "x")), want: []string{"backslash"}},
		{name: "zip symlink out", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.Entry{Name: "l", Body: "../../outside", Mode: fs.ModeSymlink | 0o777}), want: []string{`"l"`, "leaves the package"}},
		{name: "zip absolute symlink", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.Entry{Name: "l", Body: "/etc/passwd", Mode: fs.ModeSymlink | 0o777}), want: []string{`"l"`, "absolute path"}},
		{name: "zip pipe", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.Entry{Name: "p", Mode: fs.ModeNamedPipe | 0o644}), want: []string{`"p"`, "named pipe"}},
		{name: "zip duplicate", path: "/a.zip", body: zipbuild.Bytes(t, zipbuild.File("a.tf", "1"), zipbuild.File("a.tf", "2")), want: []string{`"a.tf"`, "duplicate"}},
		{
			name: "zip bomb", path: "/a.zip", limits: hashing.ModuleLimits{MaxBytes: 1 << 20},
			body: zipbuild.Bytes(t, zipbuild.File("bomb", strings.Repeat("\x00", 2<<20))),
			want: []string{`"bomb"`, "more than the limit of 1048576 bytes"},
		},
		{
			name: "tar bomb", path: "/a.tar.gz", limits: hashing.ModuleLimits{MaxBytes: 1 << 20},
			body: targz.Bomb(t, []targz.Entry{targz.Regular("main.tf", "x")}, "bomb", 64<<20),
			want: []string{`"bomb"`, "more than the limit of 1048576 bytes"},
		},
		{
			name: "too many files", path: "/a.zip", limits: hashing.ModuleLimits{MaxFiles: 3},
			body: zipbuild.Bytes(t, zipbuild.File("a", ""), zipbuild.File("b", ""), zipbuild.File("c", ""), zipbuild.File("d", "")),
			want: []string{"4 entries, more than the limit of 3"},
		},
		{
			name: "too many tar entries", path: "/a.tgz", limits: hashing.ModuleLimits{MaxFiles: 3},
			body: targz.Pack(t, []targz.Entry{tarDir("d/"), targz.Regular("d/a", ""), targz.Regular("d/b", ""), targz.Regular("d/c", "")}, nil),
			want: []string{`"d/c"`, "more than the limit of 3 entries"},
		},
		{name: "tar path escape", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{targz.Regular("a/../../x", "x")}, nil), want: []string{`"a/../../x"`, "leaves the package"}},
		{name: "tar absolute path", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{targz.Regular("/etc/x", "x")}, nil), want: []string{`"/etc/x"`, "absolute"}},
		{name: "tar symlink out", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{tarSymlink("sub/l", "../../x")}, nil), want: []string{`"sub/l"`, "leaves the package"}},
		{
			name: "tar entry through a symlink", path: "/a.tgz",
			body: targz.Pack(t, []targz.Entry{tarDir("sub/"), tarSymlink("l", "sub"), targz.Regular("l/x.tf", "x")}, nil),
			want: []string{`"l/x.tf"`, `through the symbolic link "l"`},
		},
		{
			name: "tar symlink chain out", path: "/a.tgz",
			body: targz.Pack(t, []targz.Entry{tarSymlink("up", "."), tarSymlink("e", "up/../x")}, nil),
			want: []string{"symbolic link e does not resolve inside the package"},
		},
		{name: "tar hard link out", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{tarHardlink("h", "../etc/passwd")}, nil), want: []string{`"h"`, "hard link"}},
		{name: "tar hard link to absolute", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{tarHardlink("h", "/etc/passwd")}, nil), want: []string{`"h"`, "hard link"}},
		{
			name: "tar hard link to a link", path: "/a.tgz",
			body: targz.Pack(t, []targz.Entry{targz.Regular("a", "a"), tarSymlink("l", "a"), tarHardlink("h", "l")}, nil),
			want: []string{`"h"`, "not a file extracted before it"},
		},
		{name: "tar device", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{tarOfType("null", tar.TypeChar)}, nil), want: []string{`"null"`, "device"}},
		{name: "tar fifo", path: "/a.tgz", body: targz.Pack(t, []targz.Entry{tarOfType("p", tar.TypeFifo)}, nil), want: []string{`"p"`, "named pipe"}},
		{name: "not a zip", path: "/a.zip", body: []byte("not a zip at all"), want: []string{"open zip"}},
		{name: "not gzip", path: "/a.tgz", body: []byte("not gzip at all"), want: []string{"read gzip"}},
		{name: "an HTML page", path: "/a.zip", body: []byte("<html>not found</html>"), want: []string{"returned an HTML page instead of the file"}},
		{
			name: "glob matches two directories", path: "/a.tgz", loc: "//*",
			body: targz.Pack(t, []targz.Entry{targz.Regular("a/x", "x"), targz.Regular("b/x", "x")}, nil),
			want: []string{`"*" matches 2 directories`},
		},
		{name: "subdir missing", path: "/a.tgz", loc: "//nope", body: targz.Pack(t, []targz.Entry{targz.Regular("a/x", "x")}, nil), want: []string{`subdirectory "nope" is not in the package`}},
		{name: "subdir is a file", path: "/a.tgz", loc: "//a/x", body: targz.Pack(t, []targz.Entry{targz.Regular("a/x", "x")}, nil), want: []string{"a/x is a file, not a directory"}},
		{name: "missing", path: "/a.zip", body: nil, want: []string{"returned 404 Not Found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := tlsServer(t, ca, files{tc.path: tc.body})
			parent := t.TempDir()
			dst := filepath.Join(parent, "pkg")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			loc := srv.URL + tc.path + tc.loc
			_, err := New(Config{HTTP: ca.Client(), Limits: tc.limits}).Fetch(t.Context(), loc, dst)
			if err == nil {
				t.Fatal("Fetch succeeded")
			}
			for _, want := range append(tc.want, "fetch module "+srv.URL) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("left beside dst: %v", entries)
			}
		})
	}
}

// A download beyond MaxDownloadBytes stops there, whether the server says
// how long it is or not.
func TestFetchArchiveTooLarge(t *testing.T) {
	ca := testca.New(t)
	body := zipbuild.Bytes(t, zipbuild.File("big", strings.Repeat("x", 4096)), zipbuild.File("more", "y"))
	mux := http.NewServeMux()
	mux.Handle("/sized.zip", files{"/sized.zip": body})
	mux.HandleFunc("/chunked.zip", func(w http.ResponseWriter, _ *http.Request) {
		for chunk := range slices.Chunk(body, 64) {
			_, _ = w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	})
	srv := tlsServer(t, ca, mux)
	f := New(Config{HTTP: ca.Client(), MaxDownloadBytes: 100})
	for _, path := range []string{"/sized.zip", "/chunked.zip"} {
		_, err := f.Fetch(t.Context(), srv.URL+path, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "exceeds the limit of 100") {
			t.Errorf("%s: err = %v, want the download limit", path, err)
		}
	}
}

// Credentials go to their host only: not to another host a redirect leads
// to, even on the same address; the caller's client is left as it was.
func TestFetchArchiveCredentials(t *testing.T) {
	ca := testca.New(t)
	zip := zipbuild.Bytes(t, zipbuild.File("main.tf", "main"))
	var mu sync.Mutex
	var seenByOther []string
	other := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenByOther = append(seenByOther, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write(zip)
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("/m.zip", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(zip)
	})
	mux.HandleFunc("/self.zip", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/m.zip", http.StatusFound) })
	mux.HandleFunc("/away.zip", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/m.zip", http.StatusFound)
	})
	mux.HandleFunc("/plain.zip", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.invalid/m.zip", http.StatusFound)
	})
	srv := tlsServer(t, ca, mux)
	host := strings.TrimPrefix(srv.URL, "https://")
	client := ca.Client()
	f := New(Config{HTTP: client, Credentials: func(h string) (string, bool) { return "Bearer s3cret", h == host }})

	for _, path := range []string{"/m.zip", "/self.zip", "/away.zip"} {
		if _, err := f.Fetch(t.Context(), srv.URL+path, t.TempDir()); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if diff := cmp.Diff([]string{""}, seenByOther); diff != "" {
		t.Errorf("Authorization seen by the other host (-want +got):\n%s", diff)
	}
	_, err := f.Fetch(t.Context(), srv.URL+"/plain.zip", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "refused the redirect to http://example.invalid/m.zip") {
		t.Errorf("redirect to plain http: err = %v", err)
	}
	if client.CheckRedirect != nil {
		t.Error("Fetch changed the caller's client")
	}
	_, err = New(Config{HTTP: client}).Fetch(t.Context(), srv.URL+"/m.zip", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without credentials: err = %v, want 401", err)
	}
}

// Config.Timeout bounds a whole fetch.
func TestFetchArchiveTimeout(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	start := time.Now()
	_, err := New(Config{HTTP: ca.Client(), Timeout: 300 * time.Millisecond}).Fetch(t.Context(), srv.URL+"/m.zip", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("err = %v, want a deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

// dst must be an empty directory.
func TestFetchNeedsAnEmptyDirectory(t *testing.T) {
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{}).Fetch(context.Background(), "https://127.0.0.1:1/m.zip", dst)
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("err = %v", err)
	}
}
