package vulndb

import (
	"archive/zip"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"testing"
)

// testdata/osv holds four records of the real Go vulnerability database
// (golang.org/x/vulndb data/osv), as published: a module's (grpc, three
// ranges), two of the standard library's (one on Windows only), and a
// withdrawn one.
func loadTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Load("testdata/osv")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func ids(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Module+" "+f.ID+" fixed "+f.Fixed)
	}
	return out
}

func TestMatch(t *testing.T) {
	db := loadTestDB(t)
	if db.Len() != 3 {
		t.Fatalf("loaded %d records, want 3 (the withdrawn one left out)", db.Len())
	}
	grpc := func(v string) []Module { return []Module{{"google.golang.org/grpc", v}} }
	cases := []struct {
		name string
		prog Program
		want []string
	}{
		{"grpc before the first fix", Program{Modules: grpc("v1.56.2")}, []string{"google.golang.org/grpc GO-2023-2153 fixed 1.56.3"}},
		{"grpc fixed", Program{Modules: grpc("v1.56.3")}, nil},
		{"grpc second range", Program{Modules: grpc("v1.57.0")}, []string{"google.golang.org/grpc GO-2023-2153 fixed 1.57.1"}},
		{"grpc after the last fix", Program{Modules: grpc("v1.60.0")}, nil},
		{"pseudo-version below the fix", Program{Modules: grpc("v1.56.3-0.20230101000000-abcdefabcdef")}, []string{"google.golang.org/grpc GO-2023-2153 fixed 1.56.3"}},
		{"withdrawn advisory", Program{Modules: []Module{{"k8s.io/kubernetes", "v1.0.0"}}}, nil},
		{"not semver", Program{Modules: grpc("(devel)")}, nil},
		{"stdlib affected", Program{GoVersion: "go1.26.9"}, []string{"stdlib GO-2026-6809 fixed 1.26.10"}},
		{"stdlib release candidate", Program{GoVersion: "go1.27rc1 X:nocoverageredesign"}, []string{"stdlib GO-2026-6604 fixed 1.27.2", "stdlib GO-2026-6809 fixed 1.27.3"}},
		{"stdlib fixed", Program{GoVersion: "go1.26.10"}, nil},
		{"development toolchain", Program{GoVersion: "devel go1.27-abcdef"}, nil},
		{"any platform", Program{GoVersion: "go1.26.8"}, []string{"stdlib GO-2026-6604 fixed 1.26.9", "stdlib GO-2026-6809 fixed 1.26.10"}},
		{"windows", Program{GoVersion: "go1.26.8", GOOS: "windows", GOARCH: "arm64"}, []string{"stdlib GO-2026-6604 fixed 1.26.9", "stdlib GO-2026-6809 fixed 1.26.10"}},
		{"not on linux", Program{GoVersion: "go1.26.8", GOOS: "linux", GOARCH: "amd64"}, []string{"stdlib GO-2026-6809 fixed 1.26.10"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(db.Match(tc.prog)); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProgramOf reads modules (as replaced), the Go version and the
// platform from build information.
func TestProgramOf(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "example.test/terraform-provider-x", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "golang.org/x/text", Version: "v0.3.5"},
			{Path: "google.golang.org/grpc", Version: "v1.56.2", Replace: &debug.Module{Path: "example.test/grpc-fork", Version: "v1.56.9"}},
		},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}, {Key: "CGO_ENABLED", Value: "0"}},
	}
	want := Program{
		Modules:   []Module{{"golang.org/x/text", "v0.3.5"}, {"example.test/grpc-fork", "v1.56.9"}},
		GoVersion: "go1.26.8", GOOS: "darwin", GOARCH: "arm64",
	}
	if got := ProgramOf(info); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestGoSemver(t *testing.T) {
	for in, want := range map[string]string{
		"go1.22": "v1.22.0", "go1.22.5": "v1.22.5", "go1.23rc1": "v1.23.0-rc.1",
		"go1.21beta2": "v1.21.0-beta.2", "go1.22.5 X:loopvar": "v1.22.5", "devel +abc": "", "": "", "go": "",
	} {
		if got := GoSemver(in); got != want {
			t.Errorf("GoSemver(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoadZipAndRefusals reads an OSV zip as a directory, and refuses a
// database that is empty, malformed or out of bounds.
func TestLoadZipAndRefusals(t *testing.T) {
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "osv.zip")
	writeZip(t, zipPath, map[string]string{"GO-2023-2153.json": readFile(t, "testdata/osv/GO-2023-2153.json")})
	db, err := Load(zipPath)
	if err != nil || db.Len() != 1 {
		t.Fatalf("Load(zip) = %v, %v", db, err)
	}
	bad := map[string]map[string]string{
		"empty":     {"README.md": "no records"},
		"malformed": {"GO-1.json": "{"},
		"no id":     {"GO-1.json": `{"summary":"x"}`},
		"too large": {"GO-1.json": `{"id":"GO-1","summary":"` + string(make([]byte, maxRecordBytes)) + `"}`},
	}
	for name, files := range bad {
		p := filepath.Join(dir, name+".zip")
		writeZip(t, p, files)
		if _, err := Load(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing database loaded")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeZip(t *testing.T, p string, files map[string]string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range files {
		w, _ := zw.Create(name)
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
}
